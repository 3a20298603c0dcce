"""`perf script -F ip,sym,dso,period` (+ event, symoff …) [+ `objdump -d`] -> profile rows.

Samples add up per (DSO, ip), weighted by their period when perf printed one. With
the DSO's disassembly each sampled PC gets its instruction, and every instruction
between the first and last sampled PC of a window (the profile's own window rule:
same function, gaps of at most 64 bytes) is written too, with 0 samples, so a hot loop
is shown whole. A shared object's addresses in the disassembly are relative to its
load base; the base comes from ``--base``, else the ``sym+off`` of the samples, else
``--show-mmap-events`` records, else the one page-aligned base that puts every sample
inside its named symbol.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from pcscope.core.errors import InputError, UsageError
from pcscope.core.ids import hex_pc
from pcscope.core.importers.common import (
    NO_ASM,
    ProfileRow,
    Skipped,
    basename,
    display_name,
    input_lines,
)
from pcscope.core.importers.objdump import Disassembly
from pcscope.core.importers.perf_script import (
    BadSample,
    fold_callchains,
    parse_mmap,
    parse_sample,
)

WINDOW_GAP = 64   # formats.md §1: a gap wider than this starts a new window
PAGE = 0x1000


@dataclass
class PcSamples:
    """Samples at one (DSO, ip)."""

    value: int = 0          # period-weighted (or plain) count
    count: int = 0          # sample lines
    sym: str | None = None
    symoff: int | None = None


@dataclass
class PerfSamples:
    """Everything read from one `perf script` text."""

    source: str
    by_event: dict[str | None, dict[tuple[str, int], PcSamples]] = field(default_factory=dict)
    mappings: dict[str, int] = field(default_factory=dict)   # DSO basename -> base
    weighted: bool = False
    lines: int = 0
    skipped: Skipped = field(default_factory=Skipped)    # lines that are no sample

    def select(self, event: str | None) -> dict[tuple[str, int], PcSamples]:
        """The samples of one event: the given one, or the only one there is."""
        names = [e for e in self.by_event if e is not None]
        if event is not None:
            if event not in self.by_event:
                raise UsageError(f"--event {event!r}: not in {self.source} "
                                 f"(events: {', '.join(names) or 'none printed'})")
            return self.by_event[event]
        if len(self.by_event) > 1:
            raise UsageError(f"{self.source} holds several events ({', '.join(names)}); "
                             "choose one with --event")
        return next(iter(self.by_event.values()), {})


def read_perf_script(path: str | os.PathLike, *, weighted: bool = True) -> PerfSamples:
    """Aggregate a `perf script` text ('-' = stdin) per event and (DSO, ip)."""
    name = display_name(path)
    out = PerfSamples(name)
    for lineno, line in fold_callchains(input_lines(path)):
        out.lines = lineno
        if "PERF_RECORD_MMAP" in line:
            mapping = parse_mmap(line)
            if mapping is not None:
                out.mappings.setdefault(basename(mapping.dso), mapping.base)
            continue
        try:
            sample = parse_sample(line)
        except BadSample as exc:
            raise InputError(name, lineno, str(exc)) from None
        if sample is None:
            if line.strip() and not line.lstrip().startswith("#"):
                out.skipped.add(lineno)
            continue
        counts = out.by_event.setdefault(sample.event, {})
        key = (sample.dso or "", sample.ip)
        acc = counts.get(key)
        if acc is None:
            acc = counts[key] = PcSamples(sym=sample.sym, symoff=sample.symoff)
        acc.count += 1
        if weighted and sample.period is not None:
            acc.value += sample.period
            out.weighted = True
        else:
            acc.value += 1
    if not out.by_event:
        raise InputError(name, None, "no samples: want `perf script -F ip,sym,dso,period` "
                         "output")
    return out


def parse_bases(specs: list[str]) -> dict[str, int]:
    """``--base DSO=ADDR`` options -> {DSO basename: address}."""
    bases: dict[str, int] = {}
    for spec in specs:
        dso, sep, addr = spec.rpartition("=")
        try:
            if not sep or not dso:
                raise ValueError
            bases[basename(dso)] = int(addr, 0)
        except ValueError:
            raise UsageError(f"--base {spec!r}: want DSO=ADDR, e.g. libc.so.6=0x7f0000000000") \
                from None
    return bases


@dataclass(frozen=True)
class BaseChoice:
    base: int
    how: str            # 'option', 'symoff', 'mmap', 'symbols', 'absolute'


def _base_from_symoff(dis: Disassembly, pcs: dict[int, PcSamples]) -> int | None:
    votes: Counter[int] = Counter()
    for ip, acc in pcs.items():
        start = dis.symbols.get(acc.sym or "")
        if start is not None and acc.symoff is not None:
            votes[ip - acc.symoff - start] += acc.count
    if not votes:
        return None
    return min(votes, key=lambda b: (-votes[b], b))


def _base_from_symbols(dis: Disassembly, pcs: dict[int, PcSamples]) -> int | None:
    """The page-aligned base that puts every sample inside its named symbol, if unique."""
    lo, hi, seen = -(1 << 64), 1 << 64, False
    for ip, acc in pcs.items():
        start = dis.symbols.get(acc.sym or "")
        end = dis.symbol_end(acc.sym or "")
        if start is None or end is None:
            continue
        seen = True
        lo, hi = max(lo, ip - end + 1), min(hi, ip - start)
    if not seen or lo > hi:
        return None
    first = -(-lo // PAGE) * PAGE
    return first if first <= hi < first + PAGE else None


def choose_base(dis: Disassembly, pcs: dict[int, PcSamples], bases: dict[str, int],
                mappings: dict[str, int]) -> BaseChoice:
    module = dis.module
    if module in bases:
        return BaseChoice(bases[module], "option")
    base = _base_from_symoff(dis, pcs)
    if base is not None:
        return BaseChoice(base, "symoff")
    if module in mappings:
        return BaseChoice(mappings[module], "mmap")
    span = dis.span
    if span and all(span[0] <= ip <= span[1] for ip in pcs):
        return BaseChoice(0, "absolute")
    base = _base_from_symbols(dis, pcs)
    if base is not None:
        return BaseChoice(base, "symbols")
    raise UsageError(
        f"cannot tell where {module} was loaded from the samples; add symoff to "
        f"`perf script -F`, use --show-mmap-events, or give --base {module}=ADDR"
    )


@dataclass
class ModuleReport:
    """How one DSO was joined (for the summary the CLI prints)."""

    module: str
    samples: int
    pcs: int
    base: BaseChoice | None = None
    unmatched: int = 0          # sampled PCs with no instruction in the disassembly
    filled: int = 0             # zero-sample rows added inside windows


@dataclass
class PerfProfile:
    rows: list[ProfileRow]
    modules: list[ModuleReport]
    weighted: bool


def _windows(rows: list[ProfileRow]) -> list[list[ProfileRow]]:
    """Rows sorted by pc, cut where the function changes or the gap exceeds 64 bytes."""
    out: list[list[ProfileRow]] = []
    for row in rows:
        if out and row.function == out[-1][-1].function and row.pc - out[-1][-1].pc <= WINDOW_GAP:
            out[-1].append(row)
        else:
            out.append([row])
    return out


def _join_module(dis: Disassembly, module: str, pcs: dict[int, PcSamples],
                 choice: BaseChoice, report: ModuleReport) -> list[ProfileRow]:
    base = choice.base
    sampled: list[ProfileRow] = []
    for ip in sorted(pcs):
        acc = pcs[ip]
        insn = dis.at(ip - base)
        if insn is None:
            report.unmatched += 1
            sampled.append(ProfileRow(ip, acc.value, NO_ASM, acc.sym or "", module))
        else:
            sampled.append(ProfileRow(ip, acc.value, insn.asm(base),
                                      insn.function or acc.sym or "", module))
    rows = list(sampled)
    for window in _windows(sampled):
        have = {r.pc for r in window}
        for insn in dis.between(window[0].pc - base, window[-1].pc - base):
            pc = insn.addr + base
            if pc not in have and (insn.function or window[0].function) == window[0].function:
                rows.append(ProfileRow(pc, 0, insn.asm(base), window[0].function, module))
                report.filled += 1
    return rows


def build_profile(samples: dict[tuple[str, int], PcSamples], disassemblies: list[Disassembly],
                  *, bases: dict[str, int] | None = None,
                  mappings: dict[str, int] | None = None, weighted: bool = False) -> PerfProfile:
    """Join per-PC samples with disassemblies into profile rows (one per PC, by pc)."""
    by_dso: dict[str, dict[int, PcSamples]] = {}
    for (dso, ip), acc in samples.items():
        by_dso.setdefault(dso, {})[ip] = acc
    known = {d.module: d for d in disassemblies}
    rows: dict[int, ProfileRow] = {}
    reports: list[ModuleReport] = []
    for dso in sorted(by_dso):
        pcs = by_dso[dso]
        module = basename(dso) if dso else ""
        report = ModuleReport(module, sum(a.value for a in pcs.values()), len(pcs))
        reports.append(report)
        dis = known.get(module)
        if dis is None:
            new = [ProfileRow(ip, a.value, NO_ASM, a.sym or "", module) for ip, a in pcs.items()]
        else:
            report.base = choose_base(dis, pcs, bases or {}, mappings or {})
            new = _join_module(dis, module, pcs, report.base, report)
        for row in new:
            old = rows.get(row.pc)
            # Two DSOs at one address (two processes): keep one row, the counts summed.
            rows[row.pc] = row if old is None else ProfileRow(
                row.pc, old.samples + row.samples, old.asm, old.function, old.module)
    return PerfProfile([rows[pc] for pc in sorted(rows)], reports, weighted)


def describe(report: ModuleReport) -> str:
    """One line about a joined module, for stderr."""
    where = "no disassembly" if report.base is None else (
        f"base {hex_pc(report.base.base)} ({report.base.how})")
    extra = f", {report.unmatched} PCs not in the disassembly" if report.unmatched else ""
    filled = f", {report.filled} zero-sample rows inside windows" if report.filled else ""
    return f"{report.module or '(no dso)'}: {report.pcs} PCs, {where}{filled}{extra}"
