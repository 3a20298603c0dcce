"""Arm SPE samples (`perf script` of an ``arm_spe`` recording) -> raw ALP records.

perf turns each SPE record into several samples, one per synthesized event, in a fixed
order (``l1d-miss, l1d-access, llc-miss, llc-access, tlb-miss, tlb-access, branch(-miss),
remote-access, memory, instructions``), all with the record's ip, ``weight`` (total
latency in cycles), ``data_src`` and ``flags``. The samples of one record are grouped
again (same time, cpu and ip; without a time, a new record starts when the event order
goes back) so each SPE record counts once. Per PC this gives: samples (``iterations``:
SPE samples, it does not count every execution), branch executions and mispredicts,
memory accesses with L1D/L2/LLC/TLB misses, and average latency, under loop ``spe``.
A PC is a branch (or a memory access) in every sample once one sample shows it is, so
all its samples count as executions; only a perf that samples branches solely when they
mispredict (6.1: event ``branch-miss``) leaves the executed count unknown. Miss counts
are written only where the samples could show them (an event or a data source level).
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from pcscope.core.errors import InputError
from pcscope.core.ids import hex_pc
from pcscope.core.importers.common import Skipped, basename, display_name, input_lines
from pcscope.core.importers.perf_script import BadSample, Sample, fold_callchains, parse_sample

LOOP = "spe"

_ORDER = ("l1d-miss", "l1d-access", "llc-miss", "llc-access", "tlb-miss", "tlb-access",
          "branch", "remote-access", "memory", "instructions")
_RANK = {name: i for i, name in enumerate(_ORDER)} | {"branch-miss": _ORDER.index("branch")}
_MEM_EVENTS = {"l1d-miss", "l1d-access", "llc-miss", "llc-access", "tlb-miss", "tlb-access",
               "remote-access", "memory"}
_BRANCH_WORDS = {"jcc": "conditional", "jmp": "direct", "call": "call", "return": "return"}
_FLAG_CHARS = set("bcrosyiABExghDtmn")   # perf's one-letter flags, when no name fits

# perf_mem_data_src bit fields (include/uapi/linux/perf_event.h).
_OP_LOAD, _OP_STORE, _OP_PFETCH = 0x02, 0x04, 0x08
_LVL_MISS, _LVL_L1, _LVL_L2, _LVL_L3 = 0x04, 0x08, 0x20, 0x40
_LVL_RAM = 0x80 | 0x100 | 0x200          # local RAM, remote RAM 1 and 2 hops
_LVL_REMOTE_CACHE = 0x400 | 0x800
_TLB_MISS, _TLB_NA = 0x04, 0x01
_LVLNUM_RAM = {0x0D, 0x0E}                # RAM, PMEM


@dataclass(frozen=True)
class DataSource:
    """The parts of a perf data_src value the miss counts need (None: not known)."""

    kind: str | None
    level: int | None          # 1, 2, 3 for caches; 4 for memory (RAM, remote)
    l1_miss: bool | None
    llc_miss: bool | None
    tlb_miss: bool | None


def decode_data_src(value: int) -> DataSource:
    op = value & 0x1F
    lvl = (value >> 5) & 0x3FFF
    tlb = (value >> 26) & 0x7F
    lvlnum = (value >> 33) & 0xF
    remote = (value >> 37) & 1
    kind = None
    if op & _OP_LOAD and op & _OP_STORE:
        kind = "atomic"
    elif op & _OP_LOAD:
        kind = "load"
    elif op & _OP_STORE:
        kind = "store"
    elif op & _OP_PFETCH:
        kind = "prefetch"
    level = None
    if lvlnum in (1, 2, 3, 4):
        level = min(lvlnum, 3)
    elif lvlnum in _LVLNUM_RAM or lvl & _LVL_RAM or remote or lvl & _LVL_REMOTE_CACHE:
        level = 4
    elif lvl & _LVL_L3:
        level = 3 if not lvl & _LVL_MISS else 4
    elif lvl & _LVL_L2:
        level = 2
    l1_miss = llc_miss = None
    if level is not None:
        l1_miss, llc_miss = level > 1, level > 3
    elif lvl & _LVL_L1:
        l1_miss = bool(lvl & _LVL_MISS)
    tlb_miss = None if tlb == 0 or tlb & _TLB_NA else bool(tlb & _TLB_MISS)
    return DataSource(kind, level, l1_miss, llc_miss, tlb_miss)


@dataclass(frozen=True)
class BranchFlags:
    branch: bool
    kind: str | None
    miss: bool
    not_taken: bool


def branch_flags(words: Iterable[str]) -> BranchFlags:
    """perf's flags column: names (``jcc``, ``call``, ``br miss``, ``jcc/miss,not_taken/``)
    or, when no name fits, one letter per flag (``b`` branch, ``o`` conditional, ``c``
    call, ``r`` return, ``m`` mispredicted, ``n`` not taken)."""
    branch = miss = not_taken = False
    kind = None
    for word in words:
        for part in word.replace(",", "/").split("/"):
            if not part:
                continue
            if part in _BRANCH_WORDS:
                branch, kind = True, _BRANCH_WORDS[part]
            elif part in ("br", "miss", "not_taken"):
                branch = True
                miss = miss or part == "miss"
                not_taken = not_taken or part == "not_taken"
            elif part[0] == "b" and set(part) <= _FLAG_CHARS:
                branch = True
                miss = miss or "m" in part
                not_taken = not_taken or "n" in part
                kind = kind or ("call" if "c" in part else "return" if "r" in part
                                else "conditional" if "o" in part else None)
    return BranchFlags(branch, kind, miss, not_taken)


@dataclass
class SpeRecord:
    """One SPE record, rebuilt from its synthesized samples."""

    ip: int
    dso: str | None
    sym: str | None
    events: set[str] = field(default_factory=set)
    flags: set[str] = field(default_factory=set)
    data_src: int | None = None
    weight: int | None = None


@dataclass
class _PcAcc:
    samples: int = 0
    dso: str | None = None
    sym: str | None = None
    branch: bool = False
    branch_kinds: Counter = field(default_factory=Counter)
    mispredicted: int = 0
    not_taken: int = 0
    miss_only: int = 0          # records seen only through a branch-miss sample
    mem: bool = False
    mem_kinds: Counter = field(default_factory=Counter)
    misses: Counter = field(default_factory=Counter)     # l1d_miss, l2_miss, llc_miss, tlb_miss
    known: set[str] = field(default_factory=set)         # which miss counts have evidence
    latency_sum: int = 0
    latency_n: int = 0

    def add(self, rec: SpeRecord) -> None:
        self.samples += 1
        if self.dso is None:
            self.dso, self.sym = rec.dso, rec.sym
        if rec.weight is not None:
            self.latency_sum += rec.weight
            self.latency_n += 1
        self._add_branch(rec)
        self._add_mem(rec)

    def _add_branch(self, rec: SpeRecord) -> None:
        flags = branch_flags(rec.flags)
        if not (flags.branch or rec.events & {"branch", "branch-miss"}):
            return
        self.branch = True
        if flags.kind:
            self.branch_kinds[flags.kind] += 1
        if "branch-miss" in rec.events or flags.miss:
            self.mispredicted += 1
        if rec.events == {"branch-miss"}:
            self.miss_only += 1
        if flags.not_taken:
            self.not_taken += 1

    def _add_mem(self, rec: SpeRecord) -> None:
        ds = decode_data_src(rec.data_src) if rec.data_src else None
        if not (rec.events & _MEM_EVENTS) and not (ds and ds.kind):
            return
        self.mem = True
        if ds and ds.kind:
            self.mem_kinds[ds.kind] += 1
        ev = rec.events
        facts = {
            "l1d_miss": (bool(ev & {"l1d-miss", "l1d-access"}), "l1d-miss" in ev,
                         ds.l1_miss if ds else None),
            "llc_miss": (bool(ev & {"llc-miss", "llc-access"}), "llc-miss" in ev,
                         ds.llc_miss if ds else None),
            "tlb_miss": (bool(ev & {"tlb-miss", "tlb-access"}), "tlb-miss" in ev,
                         ds.tlb_miss if ds else None),
            "l2_miss": (False, False, (ds.level > 2) if ds and ds.level else None),
        }
        for name, (seen, by_event, by_source) in facts.items():
            if seen or by_source is not None:
                self.known.add(name)
            if by_event or by_source:
                self.misses[name] += 1

    def record(self, pc: int, taken_known: bool) -> dict:
        out: dict = {"loop": LOOP, "pc": hex_pc(pc), "iterations": self.samples}
        if self.branch:
            kind = _most_common(self.branch_kinds) or "conditional"
            branch: dict = {"kind": kind}
            # perf before 6.x samples a branch only when it mispredicts (event branch-miss):
            # then how often it ran is unknown, and executed is left out.
            if self.miss_only < self.samples:
                branch["executed"] = self.samples
                if taken_known:
                    branch["taken"] = self.samples - self.not_taken
            branch["mispredicted"] = self.mispredicted
            out["branch"] = branch
        if self.mem:
            mem: dict = {"kind": _most_common(self.mem_kinds) or "load", "accesses": self.samples}
            for name in ("l1d_miss", "l2_miss", "llc_miss", "tlb_miss"):
                if name in self.known:
                    mem[name] = self.misses[name]
            if self.latency_n:
                mem["avg_latency"] = self.latency_sum / self.latency_n
            out["mem"] = mem
        spe: dict = {"samples": self.samples}
        if self.latency_n:
            spe["avg_latency"] = self.latency_sum / self.latency_n
        if self.branch and not self.branch_kinds:
            spe["branch_kind"] = "unknown"
        if self.dso:
            spe["module"] = basename(self.dso)
        if self.sym:
            spe["function"] = self.sym
        out["spe"] = spe
        return out


def _most_common(counter: Counter) -> str | None:
    if not counter:
        return None
    return min(counter, key=lambda k: (-counter[k], k))


@dataclass
class SpeResult:
    records: list[dict]
    samples: int            # sample lines read
    spe_records: int        # SPE records after grouping
    events: Counter
    skipped: Skipped        # lines that are no SPE sample


def _same_record(key: tuple, last_key: tuple | None, last_rank: int, rank: int,
                 timed: bool) -> bool:
    """Whether a sample continues the record before it: same (time, cpu, ip) and, when no
    time was printed, an event later in perf's synthesis order."""
    if last_key is None or key != last_key:
        return False
    return timed or rank > last_rank


def read_spe(path: str | os.PathLike) -> SpeResult:
    """Per-PC ALP records of an SPE `perf script` text ('-' = stdin), ordered by pc."""
    name = display_name(path)
    accs: dict[int, _PcAcc] = {}
    events: Counter = Counter()
    samples = records = 0
    current: SpeRecord | None = None
    last_key: tuple | None = None
    last_rank = -1
    skipped = Skipped()
    for lineno, line in fold_callchains(input_lines(path)):
        try:
            sample = _spe_sample(line)
        except BadSample as exc:
            raise InputError(name, lineno, str(exc)) from None
        if sample is None or sample.event is None:
            if line.strip() and not line.lstrip().startswith("#") and "PERF_RECORD_" not in line:
                skipped.add(lineno)
            continue
        ev = sample.event.rstrip(":").lower()
        rank = _RANK.get(ev)
        if rank is None:
            continue
        samples += 1
        events[ev] += 1
        timed = sample.time is not None
        key = (sample.time, sample.cpu, sample.ip)
        if current is None or not _same_record(key, last_key, last_rank, rank, timed):
            if current is not None:
                accs.setdefault(current.ip, _PcAcc()).add(current)
            current = SpeRecord(sample.ip, sample.dso, sample.sym)
            records += 1
        _merge(current, sample, ev)
        last_key, last_rank = key, rank
    if current is not None:
        accs.setdefault(current.ip, _PcAcc()).add(current)
    if not samples:
        raise InputError(name, None, "no Arm SPE samples (events such as l1d-access, "
                         "branch-miss, memory, instructions): want `perf script` of an "
                         "arm_spe recording")
    # Only a perf that prints not_taken tells taken branches apart.
    taken_known = any(a.not_taken for a in accs.values())
    return SpeResult([accs[pc].record(pc, taken_known) for pc in sorted(accs)], samples,
                     records, events, skipped)


_ADDRESS_LIKE = re.compile(r"[0-9A-Za-z]{8,16}")


def _spe_sample(line: str) -> Sample | None:
    """parse_sample, refusing a line whose ip column is not hex: perf prints the symbol
    as one token, so an address-shaped word in front of it is where the ip should be."""
    sample = parse_sample(line)
    if sample is not None and sample.sym is not None and " " in sample.sym:
        first = sample.sym.split()[0]
        if _ADDRESS_LIKE.fullmatch(first):
            raise BadSample(f"ip {first!r} is not hex")
    return sample


def _merge(rec: SpeRecord, sample: Sample, event: str) -> None:
    rec.events.add(event)
    rec.flags.update(sample.flags.split())
    if sample.data_src:
        rec.data_src = sample.data_src
    if sample.weight is not None:
        rec.weight = sample.weight
