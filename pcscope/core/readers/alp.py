"""Streaming reader of a raw ALP (JSON Lines, plain or gzip) into an AlpTable (formats.md §2).

Speed: a ~17M-token file holds ~300k records, so there is no Python loop per line in the
usual case: lines are taken in batches, decoded by a typed msgspec decoder (types,
kinds and signs are checked in C) mapped over the batch, and the rules between records
(one record per (loop, PC), one branch and one mem kind per PC) are checked for the
whole batch with numpy. Only a batch that breaks something is redone line by line, so
errors name exact lines, the earliest in the file is the one raised, and a skipped bad
line leaves no trace. Sums per PC: see alp_sums.

Memory is bounded by the distinct PCs plus 16 bytes per (loop, PC) record (the
duplicate check), one batch, and the raw lines of the kept PCs; never by file size.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from itertools import chain
from typing import Annotated, Literal

import msgspec
import numpy as np

from pcscope.core.alp import BRANCH_KINDS, MEM_KINDS, STAGES, AlpFileStats, AlpTable
from pcscope.core.alp_columns import AlpRecords
from pcscope.core.errors import InputError
from pcscope.core.ids import hex_pc, parse_pc
from pcscope.core.readers.alp_sums import ABSENT, KeptPcs, SumOverflow, grown
from pcscope.core.textio import open_text_batches

_MAX_PC = 2**64 - 1
_MAX_COUNT = 2**53          # sums stay exact in int64 and as float64 weights
_NAN = float("nan")         # a stage or latency the record does not carry (JSON has no NaN)
_BATCH = 1 << 10            # lines per batch: small enough to stay in the CPU caches
_PROGRESS_BATCHES = 64      # batches between progress reports
_PC_BITS = 32               # a (loop, PC) key is loop id << _PC_BITS | PC index

_Count = Annotated[int, msgspec.Meta(ge=0, le=_MAX_COUNT)]
_Pc = Annotated[int, msgspec.Meta(ge=0)]   # msgspec bounds must fit int64: upper checked later


# gc=False: decoded records hold no cycles, and tracking ~300k of them slows the collector.
# kw_only lets the required `kind` come first.
class _Branch(msgspec.Struct, gc=False, kw_only=True):
    kind: Literal["direct", "conditional", "indirect", "call", "indirect_call", "return"]
    executed: _Count = ABSENT
    taken: _Count = ABSENT
    mispredicted: _Count = ABSENT


class _Mem(msgspec.Struct, gc=False, kw_only=True):
    kind: Literal["load", "store", "atomic", "prefetch"]
    accesses: _Count = ABSENT
    l1d_miss: _Count = ABSENT
    l2_miss: _Count = ABSENT
    llc_miss: _Count = ABSENT
    tlb_miss: _Count = ABSENT
    store_forwarded: _Count = ABSENT
    avg_latency: Annotated[float, msgspec.Meta(ge=0)] = _NAN


class _Stages(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The canonical stages, in STAGES order; another name fails the fast decoder."""

    fetch: float = _NAN
    decode: float = _NAN
    rename: float = _NAN
    dispatch: float = _NAN
    issue: float = _NAN
    complete: float = _NAN
    retire: float = _NAN


class _Record(msgspec.Struct, gc=False):
    pc: str | _Pc
    iterations: _Count
    loop: str | None = None
    asm: str | None = None
    branch: _Branch | None = None
    mem: _Mem | None = None


class _Line(_Record, gc=False):
    stages: _Stages = msgspec.field(default_factory=_Stages)


class _LooseLine(_Record, gc=False):
    stages: dict[str, float] = msgspec.field(default_factory=dict)


_DECODER = msgspec.json.Decoder(_Line)
_LOOSE_DECODER = msgspec.json.Decoder(_LooseLine)
_STAGE_SET = frozenset(STAGES)
_KIND_CODES = {"branch": {k: i for i, k in enumerate(BRANCH_KINDS)},
               "mem": {k: i for i, k in enumerate(MEM_KINDS)}}
_KIND_NAMES = {"branch": BRANCH_KINDS, "mem": MEM_KINDS}


def _decode(text: str) -> tuple[_Line, dict[str, float] | None]:
    """The record and its extra (non-canonical) stages. Raises msgspec.DecodeError or
    ValueError (a value the types allow but the spec does not)."""
    try:
        rec, extra = _DECODER.decode(text), None
    except RecursionError:
        raise ValueError(f"JSON nested too deep (more than {_MAX_DEPTH} levels)") from None
    except msgspec.ValidationError:
        loose = _LOOSE_DECODER.decode(text)   # the same rules but any stage name
        stages = loose.stages
        extra = {k: v for k, v in stages.items() if k not in _STAGE_SET}
        if not extra:
            raise
        fields = msgspec.structs.asdict(loose)
        fields["stages"] = _Stages(**{k: v for k, v in stages.items() if k in _STAGE_SET})
        rec = _Line(**fields)
    for name, value in (extra or {}).items():
        if not value >= 0:
            raise ValueError(f"stage {name!r} is {value}: want a non-negative time")
    problem = _value_problems([rec])
    if problem is not None:
        raise ValueError(problem[1])
    return rec, extra


_MAX_DEPTH = 1000   # msgspec's recursion limit: deeper JSON raises RecursionError
_MISSES = ("l1d_miss", "l2_miss", "llc_miss", "tlb_miss", "store_forwarded")


def _value_problems(recs: list[_Line]) -> tuple[int, str] | None:
    """The first record (position, what) whose values break formats.md §2's rules between
    fields: stage times non-negative and non-decreasing in pipeline order, mispredicted and
    taken at most executed, every miss count at most accesses. A few numpy calls per
    batch; the message is built only for a bad record."""
    stages = np.fromiter(chain.from_iterable(map(msgspec.structs.astuple,
                                                 (r.stages for r in recs))),
                         np.float64, count=len(STAGES) * len(recs)).reshape(-1, len(STAGES))
    with np.errstate(invalid="ignore"):
        reached = np.fmax.accumulate(stages, axis=1)      # latest stage time so far
        bad = (stages < 0).any(axis=1) | (stages[:, 1:] < reached[:, :-1]).any(axis=1)
    branches = [(i, r.branch) for i, r in enumerate(recs) if r.branch is not None]
    mems = [(i, r.mem) for i, r in enumerate(recs) if r.mem is not None]
    if branches:
        b = np.array([(x.executed, x.taken, x.mispredicted) for _, x in branches], np.int64)
        over = (b[:, 0] != ABSENT)[:, None] & (b[:, 1:] > b[:, :1])
        bad[[i for i, _ in branches]] |= over.any(axis=1)
    if mems:
        m = np.array([(x.accesses,) + tuple(getattr(x, k) for k in _MISSES) for _, x in mems],
                     np.int64)
        over = (m[:, 0] != ABSENT)[:, None] & (m[:, 1:] > m[:, :1])
        bad[[i for i, _ in mems]] |= over.any(axis=1)
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    return i, _what_is_wrong(recs[i])


def _what_is_wrong(rec: _Line) -> str:
    times = [(name, t) for name, t in zip(STAGES, msgspec.structs.astuple(rec.stages),
                                          strict=True) if t == t]
    for name, t in times:
        if t < 0:
            return f"stage {name!r} is {t:g}: want a non-negative time"
    for (early, t0), (late, t1) in zip(times, times[1:], strict=False):
        if t1 < t0:
            return f"stage {late!r} at {t1:g} comes before {early!r} at {t0:g}"
    b = rec.branch
    if b is not None:
        for name in ("taken", "mispredicted"):
            if getattr(b, name) > b.executed != ABSENT:
                return f"branch {name} {getattr(b, name)} exceeds executed {b.executed}"
    m = rec.mem
    for name in _MISSES if m is not None else ():
        if getattr(m, name) > m.accesses != ABSENT:
            return f"mem {name} {getattr(m, name)} exceeds accesses {m.accesses}"
    raise AssertionError("no problem in the record")


class _Batch:
    """Consecutive decoded records, in file order: python columns and numpy columns."""

    __slots__ = ("lines", "texts", "recs", "extras", "pcs", "loops", "keys", "_kinds")

    def __init__(self, lines: np.ndarray, texts: list[str], recs: list[_Line],
                 extras: list[dict[str, float] | None], pcs: np.ndarray,
                 loops: np.ndarray) -> None:
        self.lines = lines          # 1-based line numbers
        self.texts = texts
        self.recs = recs
        self.extras = extras        # extra stages of each record, mostly None
        self.pcs = pcs              # PC indices (see _Reader.pc_values)
        self.loops = loops          # loop ids (0 = no loop)
        self.keys = (loops << _PC_BITS) | pcs    # the (loop, PC) identity
        self._kinds: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def __len__(self) -> int:
        return len(self.recs)

    def select(self, idx: list[int]) -> _Batch:
        return _Batch(self.lines[idx], [self.texts[i] for i in idx],
                      [self.recs[i] for i in idx], [self.extras[i] for i in idx],
                      self.pcs[idx], self.loops[idx])

    def kinds(self, block: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the records carrying ``block`` ("branch"/"mem") and its kind codes."""
        if block not in self._kinds:
            codes = _KIND_CODES[block]
            if block == "branch":
                found = [(i, codes[r.branch.kind]) for i, r in enumerate(self.recs)
                         if r.branch is not None]
            else:
                found = [(i, codes[r.mem.kind]) for i, r in enumerate(self.recs)
                         if r.mem is not None]
            table = np.array(found, dtype=np.int64).reshape(-1, 2)
            self._kinds[block] = (table[:, 0], table[:, 1])
        return self._kinds[block]


class _KeyLines:
    """The (loop, PC) keys seen, each with its line: sorted runs merged like a binary
    counter, so adding n keys costs O(n log n) in all and a lookup is a few searches."""

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def lines_of(self, keys: np.ndarray) -> np.ndarray:
        """The line of each key, 0 for a key not seen."""
        out = np.zeros(len(keys), np.int64)
        for run_keys, run_lines in self.runs:
            pos = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = run_keys[pos] == keys
            out[hit] = run_lines[pos[hit]]
        return out

    def add(self, keys: np.ndarray, lines: np.ndarray) -> None:
        while self.runs and len(self.runs[-1][0]) <= len(keys):
            run_keys, run_lines = self.runs.pop()
            keys, lines = np.concatenate([run_keys, keys]), np.concatenate([run_lines, lines])
        order = np.argsort(keys)
        self.runs.append((keys[order], lines[order]))


class _Registry:
    """The rules between records: one record per (loop, PC); one branch kind and one mem
    kind per PC (kinds by PC index: -1 = none yet)."""

    def __init__(self, path: str, loop_labels: list[str | None], pc_values: list[int]) -> None:
        self.path = path
        self.loop_labels = loop_labels
        self.pc_values = pc_values
        self.seen = _KeyLines()
        self.kind = {block: np.zeros(0, np.int64) for block in _KIND_CODES}
        self.kind_line = {block: np.zeros(0, np.int64) for block in _KIND_CODES}

    def grow(self, pcs: int) -> None:
        for block in _KIND_CODES:
            self.kind[block] = grown(self.kind[block], pcs, fill=-1)
            self.kind_line[block] = grown(self.kind_line[block], pcs)

    def problem(self, batch: _Batch) -> InputError | None:
        """A rule the batch breaks (for a single record: exactly its error), or None.
        Changes nothing."""
        keys = np.sort(batch.keys)
        if (keys[1:] == keys[:-1]).any() or self.seen.lines_of(keys).any():
            return self._duplicate(batch)
        for block in _KIND_CODES:
            idx, codes = batch.kinds(block)
            pcs = batch.pcs[idx]
            known = self.kind[block][pcs]
            pairs = np.unique(pcs * len(_KIND_NAMES[block]) + codes)
            if ((known >= 0) & (known != codes)).any() or len(
                    np.unique(pairs // len(_KIND_NAMES[block]))) != len(pairs):
                return self._kind_conflict(batch, block)
        return None

    def _duplicate(self, batch: _Batch) -> InputError:
        earlier = self.seen.lines_of(batch.keys).tolist()
        first_here: dict[int, int] = {}
        for key, line, known, pc, loop in zip(batch.keys.tolist(), batch.lines.tolist(),
                                              earlier, batch.pcs.tolist(),
                                              batch.loops.tolist(), strict=True):
            first = known or first_here.get(key)
            if first:
                label = self.loop_labels[loop]
                where = "no loop" if label is None else f"loop {label!r}"
                return InputError(self.path, line, f"second record for {where}, pc "
                                  f"{hex_pc(self.pc_values[pc])} (first at line {first})")
            first_here[key] = line
        raise AssertionError("no duplicate in the batch")

    def _kind_conflict(self, batch: _Batch, block: str) -> InputError:
        names = _KIND_NAMES[block]
        first_here: dict[int, tuple[int, int]] = {}
        idx, codes = batch.kinds(block)
        for i, code in zip(idx.tolist(), codes.tolist(), strict=True):
            pc, line = int(batch.pcs[i]), int(batch.lines[i])
            if self.kind[block][pc] >= 0:
                first = (int(self.kind[block][pc]), int(self.kind_line[block][pc]))
            else:
                first = first_here.setdefault(pc, (code, line))
            if first[0] != code:
                return InputError(self.path, line, f"{block} kind {names[code]!r} for pc "
                                  f"{hex_pc(self.pc_values[pc])} differs from "
                                  f"{names[first[0]]!r} at line {first[1]}")
        raise AssertionError("no kind conflict in the batch")

    def register(self, batch: _Batch) -> None:
        self.seen.add(batch.keys, batch.lines)
        for block in _KIND_CODES:
            idx, codes = batch.kinds(block)
            pcs = batch.pcs[idx]
            new = self.kind[block][pcs] < 0
            if new.any():
                fresh, first = np.unique(pcs[new], return_index=True)
                self.kind[block][fresh] = codes[new][first]
                self.kind_line[block][fresh] = batch.lines[idx][new][first]


_PC_TEXT = re.compile(r"0[xX][0-9a-fA-F]+|[0-9]+")
_USUAL_PCS = re.compile(r"(?:0x[0-9a-f]{1,16}\n)*0x[0-9a-f]{1,16}")  # 64 bits at most


def _pc_value(spelt: str | int) -> int:
    """A PC as spelt in the file: a JSON integer, ``0x``-hex (any case) or decimal."""
    if type(spelt) is int:
        value = spelt
    elif _PC_TEXT.fullmatch(spelt):
        value = int(spelt, 16) if spelt[1:2] in ("x", "X") else int(spelt)
    else:
        value = parse_pc(spelt)    # the same rules, with ids' wording for the error
    if value > _MAX_PC:
        raise ValueError(f"pc {spelt!r} does not fit in 64 bits")
    return value


def _isin(pcs: list[int], sorted_pcs: np.ndarray) -> np.ndarray:
    """Which of ``pcs`` are in the ascending array: binary searches, since np.isin would
    sort the whole (maybe million-PC) array again for every batch."""
    keys = np.array(pcs, dtype=np.uint64)
    if not len(sorted_pcs):
        return np.zeros(len(keys), bool)
    pos = np.minimum(np.searchsorted(sorted_pcs, keys), len(sorted_pcs) - 1)
    return sorted_pcs[pos] == keys


def _sorted_uint64(pcs: np.ndarray | None) -> np.ndarray | None:
    if pcs is None:
        return None
    arr = np.asarray(pcs, dtype=np.uint64)
    return arr if np.all(arr[:-1] < arr[1:]) else np.unique(arr)


class _Reader:
    """One pass over one file: lines -> batches -> rules -> kept sums."""

    def __init__(self, path: str, profile_pcs: np.ndarray | None, keep_pcs: np.ndarray | None,
                 skip_bad_lines: bool) -> None:
        self.path = path
        self.profile_pcs = _sorted_uint64(profile_pcs)
        self.keep_pcs = _sorted_uint64(keep_pcs)
        self.skip_bad_lines = skip_bad_lines
        self.pc_index: dict[str | int, int] = {}     # PC as spelt -> PC index
        self.index_of_value: dict[int, int] = {}     # PC value -> PC index
        self.pc_values: list[int] = []               # PC index -> PC value
        self.kept_slot = np.zeros(0, np.int64)       # PC index -> kept slot; -1 not kept,
                                                     # -2 not decided yet (new PC)
        self.loop_id: dict[str | None, int] = {None: 0}
        self.loop_labels: list[str | None] = [None]
        self.registry = _Registry(path, self.loop_labels, self.pc_values)
        self.kept = KeptPcs(self.loop_labels)
        self.records = 0
        self.skipped = 0
        self.chars = 0

    def add_pcs(self, spellings: list[str | int]) -> None:
        """Give new PC spellings their PC index (``0x2004``, ``0X2004``, ``8196`` share one);
        ValueError at the first that is not a 64-bit PC."""
        pc_index, of_value, values = self.pc_index, self.index_of_value, self.pc_values
        try:  # the usual spelling, checked for the whole batch by one regex pass
            usual = _USUAL_PCS.fullmatch("\n".join(spellings)) is not None
        except TypeError:  # a PC spelt as a JSON integer
            usual = False
        parsed = ([int(s, 16) for s in spellings] if usual
                  else list(map(_pc_value, spellings)))
        for spelt, value in zip(spellings, parsed, strict=True):
            index = of_value.setdefault(value, len(values))
            if index == len(values):
                values.append(value)
            pc_index[spelt] = index

    def loop(self, name: str | None) -> int:
        loop = self.loop_id.get(name)
        if loop is None:
            loop = self.loop_id[name] = len(self.loop_labels)
            self.loop_labels.append(name)
        return loop

    def add_lines(self, first: int, texts: list[str]) -> None:
        """Lines ``first``, ``first + 1``… of the file."""
        self.chars += sum(map(len, texts)) + len(texts)
        batch = self._decoded(first, texts) or self._decoded_carefully(first, texts)
        self._grow()
        if self.registry.problem(batch) is not None:
            batch = self._replay(batch)
        else:
            self.registry.register(batch)
        self._keep(batch)

    def _decoded(self, first: int, texts: list[str]) -> _Batch | None:
        """The usual case, with no Python loop per line: every line a valid record with
        canonical stage names. None when some line is not."""
        try:
            recs = list(map(_DECODER.decode, texts))
        except (msgspec.DecodeError, RecursionError):
            return None
        if _value_problems(recs) is not None:
            return None
        spelt = [r.pc for r in recs]
        if None in map(self.pc_index.get, spelt):
            try:
                self.add_pcs([s for s in dict.fromkeys(spelt) if s not in self.pc_index])
            except ValueError:
                return None
        names = [r.loop for r in recs]
        if None in map(self.loop_id.get, names):
            for name in dict.fromkeys(names):
                self.loop(name)
        pcs = list(map(self.pc_index.__getitem__, spelt))
        loops = list(map(self.loop_id.__getitem__, names))
        return _Batch(np.arange(first, first + len(texts)), texts, recs, [None] * len(recs),
                      np.array(pcs, dtype=np.int64), np.array(loops, dtype=np.int64))

    def _decoded_carefully(self, first: int, texts: list[str]) -> _Batch:
        """Line by line: blank lines dropped, bad ones raised in file order (or skipped)."""
        columns: tuple[list, ...] = ([], [], [], [], [], [])
        errors = []
        for line, text in enumerate(texts, first):
            try:
                rec, extra = _decode(text)
                if rec.pc not in self.pc_index:
                    self.add_pcs([rec.pc])
            except (msgspec.DecodeError, ValueError) as exc:
                if text and not text.isspace():
                    errors.append(InputError(self.path, line, f"bad ALP record: {exc}"))
                continue
            for column, value in zip(columns, (line, text, rec, extra, self.pc_index[rec.pc],
                                               self.loop(rec.loop)), strict=True):
                column.append(value)
        lines, texts, recs, extras, pcs, loops = columns
        batch = _Batch(np.array(lines, dtype=np.int64), texts, recs, extras,
                       np.array(pcs, dtype=np.int64), np.array(loops, dtype=np.int64))
        if errors and not self.skip_bad_lines:
            # A rule broken by an earlier line of the batch is the error to report.
            self._grow()
            self._replay(batch.select([i for i, line in enumerate(lines)
                                       if line < errors[0].line]))
            raise errors[0]
        self.skipped += len(errors)
        return batch

    def _grow(self) -> None:
        """Room in the by-PC-index arrays for every PC index handed out so far."""
        n = len(self.pc_values)
        self.registry.grow(n)
        self.kept_slot = grown(self.kept_slot, n, fill=-2)    # -2: not decided yet

    def _replay(self, batch: _Batch) -> _Batch:
        """Record by record, in line order: raise (or skip) each bad one exactly."""
        good = []
        for i in range(len(batch)):
            one = batch.select([i])
            error = self.registry.problem(one)
            if error is not None:
                if not self.skip_bad_lines:
                    raise error
                self.skipped += 1
                continue
            self.registry.register(one)
            good.append(i)
        return batch.select(good)

    def _keep(self, batch: _Batch) -> None:
        self.records += len(batch)
        slots = self.kept_slot[batch.pcs]
        if (slots == -2).any():
            new = np.unique(batch.pcs[slots == -2])
            values = [self.pc_values[i] for i in new.tolist()]
            keep = np.ones(len(new), bool) if self.keep_pcs is None else _isin(
                values, self.keep_pcs)
            self.kept_slot[new] = -1
            self.kept_slot[new[keep]] = self.kept.new_slots(
                [v for v, k in zip(values, keep.tolist(), strict=True) if k])
            slots = self.kept_slot[batch.pcs]
        if self.keep_pcs is not None:
            batch = batch.select(np.flatnonzero(slots >= 0).tolist())
            slots = slots[slots >= 0]
        if len(batch):
            try:
                self.kept.add(slots, batch.recs, batch.extras, batch.loops, batch.lines,
                              batch.texts)
            except SumOverflow as exc:
                raise InputError(self.path, int(batch.lines[exc.position]),
                                 f"the {exc.what} of pc {hex_pc(self.kept.pcs[exc.slot])} add "
                                 "up past 2^63-1 here (sums overflow int64)") from None

    def table(self) -> AlpTable:
        """The result; the reader is done after this. Its bookkeeping is let go before the
        columns are built, which lowers the peak memory for ~200k PCs by tens of MB."""
        kept = self.kept
        index = np.array([self.index_of_value[pc] for pc in kept.pcs], dtype=np.int64)
        if self.profile_pcs is None:
            matched = np.ones(len(kept.pcs), bool)
            unmatched = 0
        else:
            matched = _isin(kept.pcs, self.profile_pcs)
            unmatched = int(np.count_nonzero(~_isin(self.pc_values, self.profile_pcs)))
        branch_kind = self.registry.kind["branch"][index]
        mem_kind = self.registry.kind["mem"][index]
        stats = AlpFileStats(records=self.records, pcs=len(self.pc_values), unmatched=unmatched,
                             raw_tokens=self.chars // 4, skipped_lines=self.skipped)
        del self.registry, self.pc_index, self.index_of_value, self.kept_slot
        columns, per_loop = kept.finish(matched, branch_kind, mem_kind)
        return AlpTable(self.path, AlpRecords(columns), per_loop, stats)


def read_alp(
    path: str | os.PathLike,
    *,
    profile_pcs: np.ndarray | None,
    keep_pcs: np.ndarray | None = None,
    skip_bad_lines: bool = False,
    progress: Callable[[int], None] | None = None,
) -> AlpTable:
    """Aggregate a raw ALP to one record per PC.

    ``profile_pcs``: the profile's PCs (uint64); a PC outside it is kept but flagged
    ``matched=False`` (None: no profile, every PC counts as matched). ``keep_pcs``: the
    PCs whose records are stored (None: every PC); the others are still validated and
    counted in the stats. ``skip_bad_lines``: skip and count a bad line (malformed JSON or
    fields, a duplicate (loop, PC), a branch/mem kind that contradicts an earlier record)
    instead of raising InputError. Blank lines are ignored. ``progress`` is called with
    the number of characters (~bytes of uncompressed text) read so far, every 64
    batches of lines and once at the end.
    """
    reader = _Reader(str(path), profile_pcs, keep_pcs, skip_bad_lines)
    for batches, (first, texts) in enumerate(open_text_batches(path, _BATCH), 1):
        reader.add_lines(first, texts)
        if progress is not None and batches % _PROGRESS_BATCHES == 0:
            progress(reader.chars)
    if progress is not None:
        progress(reader.chars)
    return reader.table()
