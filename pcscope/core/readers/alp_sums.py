"""Per-PC running sums of kept ALP records, and the AlpColumns made from them.

The reader hands over batches of decoded records (msgspec structs with ``iterations``,
``asm``, ``stages`` (a struct of the seven canonical stages in STAGES order, NaN =
absent), ``branch`` and ``mem``) with the kept slot of each; a few numpy calls per batch
add them up.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from itertools import chain

import msgspec
import numpy as np

from pcscope.core.alp import MEM_COUNTS, STAGES, LoopRecords
from pcscope.core.alp_columns import ABSENT, AlpColumns


def grown(arr: np.ndarray, rows: int, fill: int = 0) -> np.ndarray:
    """``arr`` with at least ``rows`` rows (doubling, new rows = ``fill``)."""
    if len(arr) >= rows:
        return arr
    out = np.full((max(rows, 2 * len(arr)),) + arr.shape[1:], fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


def _mean_terms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, what a record adds to a weighted mean: (value * weight, weight, value, 1),
    all zero where the value is absent (NaN). ``weights`` broadcasts against ``values``."""
    have = ~np.isnan(values)
    v = np.where(have, values, 0.0)
    return np.stack([v * weights, np.where(have, weights, 0.0), v, have], axis=1)


def _means(acc: np.ndarray) -> np.ndarray:
    """Weighted means from summed _mean_terms; the plain mean where every weight is zero (a
    stage seen only in loops that ran 0 iterations); NaN where no record had the value.
    Computed in ``acc``'s memory (which it spoils): for ~200k PCs copies would cost more
    than the rest of the table."""
    wsum, weight, vsum, count = acc[:, 0], acc[:, 1], acc[:, 2], acc[:, 3]
    plain = weight == 0
    with np.errstate(invalid="ignore", divide="ignore"):
        np.divide(wsum, weight, out=wsum)
        np.divide(vsum, count, out=vsum)    # 0 / 0 -> NaN: nothing seen
    np.copyto(wsum, vsum, where=plain)
    return wsum


def _present(sums: np.ndarray, seen: np.ndarray) -> np.ndarray:
    """``sums`` with ABSENT where no record carried the count (in place)."""
    sums[~seen] = ABSENT
    return sums


def _add_counts(sums: np.ndarray, seen: np.ndarray, at: np.ndarray,
                rows: list[tuple[int, ...]], positions: list[int], what: str) -> None:
    if rows:
        counts = np.array(rows, dtype=np.int64)
        present = counts != ABSENT
        added = np.where(present, counts, 0)
        np.add.at(sums, at, added)
        np.logical_or.at(seen, at, present)
        for column in range(counts.shape[1]):
            _check_overflow(sums[:, column], at, added[:, column], what, positions)


class _Sums:
    """Running sums per kept PC (by slot), grown as PCs arrive."""

    def __init__(self) -> None:
        self.iterations = np.zeros(0, np.int64)
        self.stage = np.zeros((0, 4, len(STAGES)))             # summed _mean_terms
        self.branch = np.zeros((0, 3), np.int64)
        self.branch_seen = np.zeros((0, 3), bool)              # some record carried the count
        self.mem = np.zeros((0, len(MEM_COUNTS)), np.int64)
        self.mem_seen = np.zeros((0, len(MEM_COUNTS)), bool)
        self.latency = np.zeros((0, 4))                        # summed _mean_terms

    def grow(self, rows: int) -> None:
        for name, arr in vars(self).items():
            setattr(self, name, grown(arr, rows))

    def add(self, slots: np.ndarray, recs: Sequence) -> None:
        """Add a batch; SumOverflow when a count sum passes int64 (nothing is usable then)."""
        its = np.array([r.iterations for r in recs], dtype=np.int64)
        np.add.at(self.iterations, slots, its)
        _check_overflow(self.iterations, slots, its, "iterations")
        stages = [r.stages for r in recs]
        values = np.fromiter(chain.from_iterable(map(msgspec.structs.astuple, stages)),
                             np.float64, count=len(STAGES) * len(recs)).reshape(-1, len(STAGES))
        np.add.at(self.stage, slots, _mean_terms(values, its.astype(np.float64)[:, None]))
        bi = [i for i, r in enumerate(recs) if r.branch is not None]
        _add_counts(self.branch, self.branch_seen, slots[bi],
                    [(b.executed, b.taken, b.mispredicted)
                     for b in (recs[i].branch for i in bi)], bi, "branch counts")
        mi = [i for i, r in enumerate(recs) if r.mem is not None]
        mems = [recs[i].mem for i in mi]
        _add_counts(self.mem, self.mem_seen, slots[mi],
                    [(m.accesses, m.l1d_miss, m.l2_miss, m.llc_miss, m.tlb_miss,
                      m.store_forwarded) for m in mems], mi, "mem counts")
        if mems:
            lat = np.array([(m.avg_latency, m.accesses) for m in mems], dtype=np.float64)
            # A record without an access count gives its latency no weight.
            np.add.at(self.latency, slots[mi], _mean_terms(lat[:, 0], np.maximum(lat[:, 1], 0)))


class SumOverflow(ValueError):
    """A per-PC sum passed 2^63-1 at the record in ``position`` of the batch."""

    def __init__(self, position: int, slot: int, what: str) -> None:
        super().__init__(what)
        self.position, self.slot, self.what = position, slot, what


def _check_overflow(sums: np.ndarray, at: np.ndarray, counts: np.ndarray, what: str,
                    positions: Sequence[int] | None = None) -> None:
    """Counts are at most 2^53 and a batch holds at most 2^10 records, so a sum that passed
    2^63-1 during this batch reads negative. Then the record where it passed is found
    with exact integers (int64 addition wraps, so the sum before the batch is recovered)."""
    wrapped = sums[at] < 0
    if not wrapped.any():
        return
    slot = int(at[np.flatnonzero(wrapped)[0]])
    mine = np.flatnonzero(at == slot).tolist()
    running = int(sums[slot]) % 2**64 - sum(int(counts[i]) for i in mine)
    for i in mine:
        running += int(counts[i])
        if running > 2**63 - 1:
            raise SumOverflow(i if positions is None else positions[i], slot, what)
    raise AssertionError("a wrapped sum with no record passing the limit")
class RawLines:
    """Kept lines of text, by number in order added: each batch joined into one string,
    which for ~300k lines saves ~15 MB of per-string overhead over a list of strings."""

    def __init__(self) -> None:
        self.blocks: list[str] = []
        self.block_starts = [0]                      # number of the first line of each block
        self.offsets: list[np.ndarray] = []          # per block: where each line starts

    def add(self, texts: list[str]) -> None:
        if texts:
            self.blocks.append("\n".join(texts))
            self.block_starts.append(self.block_starts[-1] + len(texts))
            ends = np.cumsum(np.fromiter(map(len, texts), np.int64, len(texts)) + 1)
            self.offsets.append(np.concatenate([[0], ends]))

    def __len__(self) -> int:
        return self.block_starts[-1]

    def __getitem__(self, i: int) -> str:
        b = bisect.bisect_right(self.block_starts, i) - 1
        k = i - self.block_starts[b]
        start, end = self.offsets[b][k:k + 2].tolist()
        return self.blocks[b][start:end - 1]


class KeptPcs:
    """Everything stored about the kept PCs, by slot (order of first appearance), and their
    raw records as columns in file order."""

    def __init__(self, loop_labels: list[str | None]) -> None:
        self.loop_labels = loop_labels          # loop id -> label (shared with the reader)
        self.pcs: list[int] = []
        self.asm: list[str | None] = []
        self.extra_stages: dict[int, dict[str, list[float]]] = {}
        self.sums = _Sums()
        self.columns: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # slot, loop, line
        self.texts = RawLines()

    def new_slots(self, pcs: list[int]) -> np.ndarray:
        first = len(self.pcs)
        self.pcs.extend(pcs)
        self.asm.extend([None] * len(pcs))
        self.sums.grow(len(self.pcs))
        return np.arange(first, len(self.pcs), dtype=np.int64)

    def add(self, slots: np.ndarray, recs: Sequence, extras: Sequence[dict | None],
            loops: np.ndarray, lines: np.ndarray, texts: list[str]) -> None:
        self.sums.add(slots, recs)
        self.columns.append((slots, loops, lines))
        self.texts.add(texts)
        asm = self.asm
        ks = slots.tolist()
        for i in [i for i, k in enumerate(ks) if asm[k] is None]:
            asm[ks[i]] = recs[i].asm
        for k, r, extra in zip(ks, recs, extras, strict=True):
            if extra is not None:
                self._add_extra_stages(k, extra, r.iterations)

    def _add_extra_stages(self, k: int, stages: dict[str, float], it: int) -> None:
        """Stage names beyond the canonical seven are rare: summed in plain Python."""
        extra = self.extra_stages.setdefault(k, {})
        for name, value in stages.items():
            acc = extra.setdefault(name, [0.0, 0.0, 0.0, 0.0])
            acc[0] += value * it
            acc[1] += it
            acc[2] += value
            acc[3] += 1

    def _flat(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Slot, loop id and line of every kept record, in file order."""
        if not self.columns:
            empty = np.zeros(0, np.int64)
            return empty, empty, empty
        slots, loops, lines = zip(*self.columns, strict=True)
        return np.concatenate(slots), np.concatenate(loops), np.concatenate(lines)

    def finish(self, matched: np.ndarray, branch_kind: np.ndarray,
               mem_kind: np.ndarray) -> tuple[AlpColumns, LoopRecords]:
        """The kept PCs as columns in ascending PC order, and their raw records. The
        arguments are by slot; kinds are codes (index into BRANCH_KINDS / MEM_KINDS).
        Called once, at the end: it uses the sums up."""
        n = len(self.pcs)
        pcs = np.array(self.pcs, dtype=np.uint64)
        order = np.argsort(pcs)                       # row -> slot
        row_of = np.empty(n, np.int64)
        row_of[order] = np.arange(n)                  # slot -> row
        sums = self.sums
        slots, loops, lines = self._flat()
        rows = row_of[slots]                          # per kept record, its PC's row
        names, starts = self._labels(rows, loops, n)
        columns = AlpColumns(
            pcs=pcs[order],
            asm=[self.asm[k] for k in order.tolist()],
            iterations=sums.iterations[:n][order],
            stages=_means(sums.stage[:n])[order],
            extra_stages={int(row_of[k]): {name: (wsum / weight if weight else vsum / count)
                                           for name, (wsum, weight, vsum, count) in extra.items()}
                          for k, extra in self.extra_stages.items()},
            branch_kind=branch_kind[order],
            branch=_present(sums.branch[:n], sums.branch_seen[:n])[order],
            mem_kind=mem_kind[order],
            mem=_present(sums.mem[:n], sums.mem_seen[:n])[order],
            avg_latency=_means(sums.latency[:n])[order],
            matched=matched[order],
            loop_names=names,
            loop_starts=starts,
        )
        record_starts = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(rows, minlength=n), out=record_starts[1:])
        per_loop = LoopRecords(columns.pcs, np.argsort(rows, kind="stable"), record_starts,
                               self.loop_labels, loops, lines, self.texts)
        return columns, per_loop

    def _labels(self, rows: np.ndarray, loops: np.ndarray,
                n: int) -> tuple[list[str], np.ndarray]:
        """Each row's distinct loop labels in sorted order (records without a loop add
        none), row after row, and where each row's start: from the unique (row, label rank)
        pairs."""
        labels = self.loop_labels
        named = sorted(range(1, len(labels)), key=labels.__getitem__)   # loop ids by label
        rank = np.full(len(labels), -1, np.int64)
        rank[named] = np.arange(len(named))
        r = rank[loops]
        have = r >= 0
        width = max(len(named), 1)
        pairs = np.unique(rows[have] * width + r[have])
        names = [labels[named[i]] for i in (pairs % width).tolist()]
        return names, np.searchsorted(pairs // width, np.arange(n + 1))
