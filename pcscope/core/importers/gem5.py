"""gem5 O3PipeView traces (``--debug-flags=O3PipeView``) -> raw ALP records, streamed.

gem5 prints a dynamic instruction when it is destroyed, which is not program order, so
records pass through a buffer that releases them by sequence number once the highest
number seen is ``window`` ahead (a record later than that is counted as ``late`` and
taken alone). Micro-ops of one instruction (same pc, upc > 0, consecutive sequence
numbers) are merged: a stage is reached when every micro-op reached it, and one
squashed micro-op squashes the instruction. A stage tick of 0 is a stage never reached;
a retire tick of 0 is a squashed instruction, counted apart and kept out of the
averages. Per PC only sums are kept, so memory is bounded by the buffer, a chunk of
text and the number of distinct PCs, never by the trace. Stage times are averaged
relative to fetch and turned into cycles with ``--ticks-per-cycle`` or else the smallest
positive step between two ticks seen (one clock period). One record per PC, loop
``gem5``: ``iterations`` = committed instances, ``squashed`` = squashed instances.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np

from pcscope.core.errors import InputError, UsageError
from pcscope.core.ids import hex_pc
from pcscope.core.importers.o3pipeview import CHUNK, RETIRE, STORE, TICK_COLUMNS, Records, Trace

LOOP = "gem5"
DEFAULT_WINDOW = 4096


@dataclass
class Gem5Result:
    records: list[dict]
    micro_ops: int            # O3PipeView records read
    instructions: int         # dynamic instructions after merging micro-ops
    committed: int
    squashed: int
    late: int                 # records that came after the buffer had released past them
    incomplete: int | None    # line of a record the trace cut short (ignored)
    ticks_per_cycle: float
    inferred: bool


def _take(r: Records, index: np.ndarray | slice) -> Records:
    return Records(r.seq[index], r.upc[index], r.pc[index], r.fetch[index], r.ticks[index], {})


def _concat(parts: list[Records]) -> Records:
    parts = [p for p in parts if len(p)]
    if not parts:
        return Records.empty()
    def joined(field: str) -> np.ndarray:
        return np.concatenate([getattr(p, field) for p in parts])

    return Records(joined("seq"), joined("upc"), joined("pc"), joined("fetch"), joined("ticks"),
                   {})


class _Sums:
    """Per-PC sums of committed stage offsets (ticks after fetch) and counts."""

    def __init__(self) -> None:
        self.index: dict[int, int] = {}
        self.sums = np.zeros((0, 7), dtype=np.int64)
        self.counts = np.zeros((0, 7), dtype=np.int64)
        self.committed = np.zeros(0, dtype=np.int64)
        self.squashed = np.zeros(0, dtype=np.int64)
        self.step = math.inf
        self.last_fetch: int | None = None

    def _ids(self, pc: np.ndarray) -> np.ndarray:
        unique, inverse = np.unique(pc, return_inverse=True)
        ids = np.array([self.index.setdefault(p, len(self.index)) for p in unique.tolist()],
                       dtype=np.int64)
        grow = len(self.index) - len(self.committed)
        if grow > 0:
            self.sums = np.vstack([self.sums, np.zeros((grow, 7), dtype=np.int64)])
            self.counts = np.vstack([self.counts, np.zeros((grow, 7), dtype=np.int64)])
            self.committed = np.concatenate([self.committed, np.zeros(grow, dtype=np.int64)])
            self.squashed = np.concatenate([self.squashed, np.zeros(grow, dtype=np.int64)])
        return ids[inverse.reshape(-1)]

    def add(self, pc: np.ndarray, fetch: np.ndarray, ticks: np.ndarray,
            squashed: np.ndarray) -> None:
        """Add instructions (in sequence order) to their PCs."""
        if not len(pc):
            return
        ids = self._ids(pc)
        n = len(self.committed)
        done = ~squashed
        self.squashed += np.bincount(ids[squashed], minlength=n)
        self.committed += np.bincount(ids[done], minlength=n)
        ids_c, fetch_c, ticks_c = ids[done], fetch[done], ticks[done]
        reached = ticks_c > 0
        offsets = np.where(reached, ticks_c - fetch_c[:, None], 0)
        for col in range(7):
            m = reached[:, col]
            # float64 sums of whole numbers are exact below 2**53.
            self.sums[:, col] += np.rint(
                np.bincount(ids_c[m], weights=offsets[m, col], minlength=n)).astype(np.int64)
            self.counts[:, col] += np.bincount(ids_c[m], minlength=n)
        self._steps(fetch_c, ticks_c)

    def _steps(self, fetch: np.ndarray, ticks: np.ndarray) -> None:
        """The smallest positive step between successive stage ticks of an instruction,
        and between the fetch ticks of successive instructions."""
        if not len(fetch):
            return
        chain = np.column_stack([fetch, ticks[:, :STORE]])
        diff = chain[:, 1:] - chain[:, :-1]
        ok = (chain[:, 1:] > 0) & (chain[:, :-1] > 0) & (diff > 0)
        fetches = fetch if self.last_fetch is None else np.concatenate([[self.last_fetch], fetch])
        fdiff = np.diff(fetches)
        candidates = np.concatenate([diff[ok], fdiff[fdiff > 0]])
        if len(candidates):
            self.step = min(self.step, int(candidates.min()))
        self.last_fetch = int(fetch[-1])


class _Reorder:
    """Releases records by sequence number and merges micro-ops into instructions."""

    def __init__(self, window: int, sums: _Sums) -> None:
        self.window = window
        self.sums = sums
        self.held = Records.empty()
        self.open = Records.empty()      # micro-ops of the last, maybe unfinished instruction
        self.released = -1               # highest sequence number released
        self.top = -1
        self.records = self.instructions = self.late = 0

    def feed(self, batch: Records) -> None:
        if not len(batch):
            return
        self.records += len(batch)
        late = batch.seq <= self.released
        if late.any():
            self.late += int(late.sum())
            alone = _take(batch, late)
            self._add(alone.pc, alone.fetch, alone.ticks, alone.ticks[:, RETIRE] == 0)
            batch = _take(batch, ~late)
        self.top = max(self.top, int(batch.seq.max())) if len(batch) else self.top
        pool = _concat([self.held, batch])
        order = np.argsort(pool.seq, kind="stable")
        pool = _take(pool, order)
        cut = int(np.searchsorted(pool.seq, self.top - self.window, side="right"))
        if cut:
            self.released = int(pool.seq[cut - 1])
            self._merge(_take(pool, slice(0, cut)), final=False)
        self.held = _take(pool, slice(cut, None))

    def finish(self) -> None:
        self._merge(self.held, final=True)
        self.held = Records.empty()

    def _merge(self, released: Records, final: bool) -> None:
        r = _concat([self.open, released])
        if not len(r):
            return
        cont = np.zeros(len(r), dtype=bool)
        cont[1:] = (r.upc[1:] > 0) & (r.pc[1:] == r.pc[:-1]) & (r.seq[1:] == r.seq[:-1] + 1)
        starts = np.flatnonzero(~cont)
        if final:
            self.open = Records.empty()
        else:
            last = int(starts[-1])
            self.open = _take(r, slice(last, None))
            r, starts = _take(r, slice(0, last)), starts[:-1]
            if not len(starts):
                return
        ticks = np.maximum.reduceat(r.ticks, starts, axis=0)
        squashed = np.minimum.reduceat(r.ticks[:, RETIRE], starts) == 0
        self._add(r.pc[starts], r.fetch[starts], ticks, squashed)

    def _add(self, pc: np.ndarray, fetch: np.ndarray, ticks: np.ndarray,
             squashed: np.ndarray) -> None:
        self.instructions += len(pc)
        self.sums.add(pc, fetch, ticks, squashed)


def _records(sums: _Sums, asm: dict[int, str], tpc: float) -> list[dict]:
    out = []
    for pc in sorted(sums.index):
        i = sums.index[pc]
        committed = int(sums.committed[i])
        rec: dict = {"loop": LOOP, "pc": hex_pc(pc), "asm": asm.get(pc, ""),
                     "iterations": committed}
        if committed:
            stages = {"fetch": 0.0}
            for col, name in enumerate(TICK_COLUMNS):
                if sums.counts[i, col]:
                    stages[name] = int(sums.sums[i, col]) / int(sums.counts[i, col]) / tpc
            rec["stages"] = stages
        rec["squashed"] = int(sums.squashed[i])
        out.append(rec)
    return out


def read_gem5(path: str | os.PathLike, *, ticks_per_cycle: float | None = None,
              window: int = DEFAULT_WINDOW, chunk_size: int = CHUNK) -> Gem5Result:
    """One ALP record per PC of an O3PipeView trace (plain, .gz or '-'), ordered by pc."""
    if ticks_per_cycle is not None and ticks_per_cycle <= 0:
        raise UsageError(f"--ticks-per-cycle {ticks_per_cycle:g}: must be positive")
    if window < 1:
        raise UsageError(f"--reorder-window {window}: must be positive")
    trace = Trace(path, chunk_size)
    sums = _Sums()
    reorder = _Reorder(window, sums)
    asm: dict[int, str] = {}
    for batch in trace:
        for pc, text in batch.asm.items():
            asm.setdefault(pc, text)
        reorder.feed(batch)
    reorder.finish()
    if not reorder.records:
        raise InputError(trace.name, None, "no O3PipeView records: want a gem5 trace made "
                         "with --debug-flags=O3PipeView")
    inferred = ticks_per_cycle is None
    tpc = ticks_per_cycle if ticks_per_cycle is not None else (
        float(sums.step) if math.isfinite(sums.step) else 1.0)
    return Gem5Result(
        records=_records(sums, asm, tpc), micro_ops=reorder.records,
        instructions=reorder.instructions, committed=int(sums.committed.sum()),
        squashed=int(sums.squashed.sum()), late=reorder.late, incomplete=trace.incomplete,
        ticks_per_cycle=tpc, inferred=inferred,
    )
