"""Per-PC running sums of kept ALP records, and the AlpColumns made from them.

The reader hands over batches of records as RecordColumns with the kept slot of each; a
few numpy calls per batch add them up. Each sum takes its records one by one in file
order, so the figures do not depend on how lines are batched.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
from isal import isal_zlib

from pcscope.core.alp import MEM_COUNTS, STAGES, LoopRecords
from pcscope.core.alp_columns import ABSENT, AlpColumns
from pcscope.core.readers.alp_records import RecordColumns


def grown(arr: np.ndarray, rows: int, fill: object = 0) -> np.ndarray:
    """``arr`` with at least ``rows`` rows (doubling, new rows = ``fill``)."""
    if len(arr) >= rows:
        return arr
    shape = (max(rows, 2 * len(arr)),) + arr.shape[1:]
    # zeros: pages the OS zeroes lazily, where a fill would touch all of them now
    out = np.zeros(shape, arr.dtype) if fill == 0 else np.full(shape, fill, dtype=arr.dtype)
    out[: len(arr)] = arr
    return out


class Appended:
    """A 1-D array appended to batch by batch (grown by doubling): numbers kept per PC as
    numpy values, where a list of Python ints would take ~40 bytes each."""

    def __init__(self, dtype: type) -> None:
        self._data: np.ndarray = np.zeros(0, dtype)
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def extend(self, values: np.ndarray) -> None:
        end = self._n + len(values)
        self._data = grown(self._data, end)
        self._data[self._n:end] = values
        self._n = end

    def values(self) -> np.ndarray:
        """The values so far (a view: valid until the next extend)."""
        return self._data[:self._n]


def distinct(arr: np.ndarray) -> np.ndarray:
    """The distinct values, ascending: np.unique by sorting (numpy 2's hashing np.unique is
    ~10x slower on integers)."""
    out = np.sort(arr)
    return out[np.concatenate([[True], out[1:] != out[:-1]])] if len(out) else out


def _weighted_terms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Per row, what a record adds to a weighted mean: (value * weight, weight), both zero
    where the value is absent (NaN). ``weights`` broadcasts against ``values``."""
    have = ~np.isnan(values)
    return np.stack([np.where(have, values, 0.0) * weights, np.where(have, weights, 0.0)],
                    axis=1)


def _plain_terms(values: np.ndarray) -> np.ndarray:
    """Per row, what a record adds to a plain mean: (value, 1), both zero where absent."""
    have = ~np.isnan(values)
    return np.stack([np.where(have, values, 0.0), have], axis=1)


def _mean_terms(values: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Both: (value * weight, weight, value, 1)."""
    return np.concatenate([_weighted_terms(values, weights), _plain_terms(values)], axis=1)


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


class _Targets:
    """The sum each row of a batch goes to, split into the rows whose sum gets only that row
    (one fancy-indexed step for all: the same single operation per sum) and the rest
    (ufunc.at, which takes rows in order). ufunc.at alone on rows of several values is
    ~15x slower."""

    def __init__(self, at: np.ndarray) -> None:
        self.at = at
        order = np.argsort(at, kind="stable")
        same = at[order][1:] == at[order][:-1]
        shared = np.zeros(len(at), bool)
        shared[order[1:][same]] = True
        shared[order[:-1][same]] = True
        self.alone = np.flatnonzero(~shared)
        self.shared = np.flatnonzero(shared)

    def add(self, sums: np.ndarray, values: np.ndarray, op: np.ufunc = np.add) -> None:
        at = self.at[self.alone]
        sums[at] = op(sums[at], values[self.alone])
        op.at(sums, self.at[self.shared], values[self.shared])


def _add_counts(sums: np.ndarray, seen: np.ndarray, to: _Targets, counts: np.ndarray,
                positions: np.ndarray, what: str) -> None:
    present = counts != ABSENT
    added = np.where(present, counts, 0)
    _check_room(sums, to.at, added, what, positions)
    to.add(sums, added)
    to.add(seen, present, np.logical_or)


class _Sums:
    """Running sums per kept PC (by slot), grown as PCs arrive. A stage's plain mean counts
    only where its weights sum to zero, i.e. where every record carrying it ran 0
    iterations, so plain sums are kept only for PCs with such records (``idle``): the
    weighted sums alone are half of the memory per PC that all four terms took."""

    _BY_SLOT = ("iterations", "stage", "idle_row", "branch", "branch_seen", "mem", "mem_seen",
                "latency")

    def __init__(self) -> None:
        self.iterations = np.zeros(0, np.int64)
        self.stage = np.zeros((0, 2, len(STAGES)))             # summed _weighted_terms
        self.idle_row = np.zeros(0, np.int64)                  # its row of idle + 1; 0: none
        self.idle = np.zeros((0, 2, len(STAGES)))              # summed _plain_terms of the
        self.idle_rows = 0                                     # records of 0 iterations
        self.branch = np.zeros((0, 3), np.int64)
        self.branch_seen = np.zeros((0, 3), bool)              # some record carried the count
        self.mem = np.zeros((0, len(MEM_COUNTS)), np.int64)
        self.mem_seen = np.zeros((0, len(MEM_COUNTS)), bool)
        self.latency = np.zeros((0, 4))                        # summed _mean_terms

    def grow(self, rows: int) -> None:
        for name in self._BY_SLOT:
            setattr(self, name, grown(getattr(self, name), rows))

    def add(self, slots: np.ndarray, cols: RecordColumns) -> None:
        """Add a batch; SumOverflow when a count sum would pass int64 (nothing is usable
        then)."""
        its = cols.iterations
        _check_room(self.iterations, slots, its, "iterations")
        np.add.at(self.iterations, slots, its)     # 1-D: ufunc.at is fast
        _Targets(slots).add(self.stage, _weighted_terms(cols.stages,
                                                        its.astype(np.float64)[:, None]))
        idle = np.flatnonzero(its == 0)
        if len(idle):
            self._add_idle(slots[idle], cols.stages[idle])
        bi = np.flatnonzero(cols.branch_kind != ABSENT)
        _add_counts(self.branch, self.branch_seen, _Targets(slots[bi]), cols.branch[bi], bi,
                    "branch counts")
        mi = np.flatnonzero(cols.mem_kind != ABSENT)
        mem = cols.mem[mi]
        to = _Targets(slots[mi])
        _add_counts(self.mem, self.mem_seen, to, mem, mi, "mem counts")
        # A record without an access count gives its latency no weight.
        weights = np.maximum(mem[:, 0], 0).astype(np.float64)
        to.add(self.latency, _mean_terms(cols.latency[mi], weights))

    def _add_idle(self, slots: np.ndarray, stages: np.ndarray) -> None:
        """The stages of records that ran 0 iterations, to their PCs' plain sums."""
        new = distinct(slots[self.idle_row[slots] == 0])
        if len(new):
            self.idle = grown(self.idle, self.idle_rows + len(new))
            self.idle_row[new] = np.arange(self.idle_rows + 1, self.idle_rows + len(new) + 1)
            self.idle_rows += len(new)
        _Targets(self.idle_row[slots] - 1).add(self.idle, _plain_terms(stages))

    def _stage_means(self, n: int) -> np.ndarray:
        """Per slot and stage, the weighted mean; where no weight, the plain mean of the
        records of 0 iterations (a PC without such records has no weight only where no
        record carried the stage: 0 / 0, NaN). In the sums' memory, plain means only for
        the PCs that have them (for ~500k PCs full-size temporaries cost ~60 MB of peak)."""
        wsum, weight = self.stage[:n, 0], self.stage[:n, 1]
        rows = self.idle_row[:n]
        idle = np.flatnonzero(rows)
        vsum, count = self.idle[rows[idle] - 1].transpose(1, 0, 2)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(wsum, weight, out=wsum)
            plain = vsum / count
        means = wsum[idle]
        np.copyto(means, plain, where=weight[idle] == 0)
        wsum[idle] = means
        return wsum

    def by_row(self, n: int, order: np.ndarray) -> dict[str, np.ndarray]:
        """The figures of the ``n`` slots in ``order`` (row -> slot): iterations, stages,
        branch, mem, avg_latency. Each running sum is let go once its figure is made (for
        ~200k PCs they are the largest arrays held), so this is called once."""
        out = {"iterations": self.iterations[:n][order]}
        del self.iterations
        out["stages"] = self._stage_means(n)[order]
        del self.stage, self.idle, self.idle_row
        out["branch"] = _present(self.branch[:n], self.branch_seen[:n])[order]
        del self.branch, self.branch_seen
        out["mem"] = _present(self.mem[:n], self.mem_seen[:n])[order]
        del self.mem, self.mem_seen
        out["avg_latency"] = _means(self.latency[:n])[order]
        del self.latency
        return out


class SumOverflow(ValueError):
    """A per-PC sum passed 2^63-1 at the record in ``position`` of the batch."""

    def __init__(self, position: int, slot: int, what: str) -> None:
        super().__init__(what)
        self.position, self.slot, self.what = position, slot, what


def _check_room(sums: np.ndarray, at: np.ndarray, added: np.ndarray, what: str,
                positions: np.ndarray | None = None) -> None:
    """SumOverflow at the first record (in batch order) whose count would take its PC's
    sum past 2^63-1, checked before adding (int64 addition wraps). A bound in floats
    clears a batch at once: its rounding is far below the 2^62 margin."""
    if not len(at) or (float(sums[at].max()) +
                       float(added.sum(axis=0, dtype=np.float64).max()) < 2.0**62):
        return
    flat_sums = sums.reshape(len(sums), -1)
    flat_added = added.reshape(len(added), -1)
    for column in range(flat_sums.shape[1]):
        running: dict[int, int] = {}
        for i, (slot, count) in enumerate(zip(at.tolist(), flat_added[:, column].tolist(),
                                              strict=True)):
            total = running.get(slot, int(flat_sums[slot, column])) + count
            if total > 2**63 - 1:
                raise SumOverflow(i if positions is None else int(positions[i]), slot, what)
            running[slot] = total


@dataclass(frozen=True, slots=True)
class LineTexts:
    """The text of consecutive lines: line i is ``data[starts[i]:ends[i]]`` (UTF-8, no
    line end); ``data`` holds whole lines, each ending in a newline."""

    data: bytes
    starts: np.ndarray
    ends: np.ndarray

    def select(self, idx: np.ndarray | list[int]) -> LineTexts:
        return LineTexts(self.data, self.starts[idx], self.ends[idx])

    def whole(self) -> bool:
        """Whether the lines are all of ``data``, in order, with nothing between them."""
        return bool(len(self.starts) and self.starts[0] == 0
                    and self.ends[-1] + 1 == len(self.data)
                    and (self.starts[1:] == self.ends[:-1] + 1).all())


_GROUP = 64    # lines compressed together


class RawLines:
    """Kept lines of text, by number in order added: groups of _GROUP whole
    newline-terminated lines, each compressed (ISA-L's fastest level: ~1.3 ms per MB,
    ~5x smaller; a lookup unpacks one group, ~20 KB, in well under 0.1 ms), since every
    line of a file may be kept and a view or the index store reads few of them or reads
    them once. Memory grows with the kept lines at ~0.2 byte per character."""

    def __init__(self) -> None:
        self.blocks: list[bytes] = []                # compressed groups
        self.block_starts = [0]                      # number of the first line of each group
        self.offsets: list[np.ndarray] = []          # per group: where each line starts

    def add(self, texts: LineTexts) -> None:
        if not len(texts.starts):
            return
        if texts.whole():
            data = texts.data
            starts = np.append(texts.starts, len(data))
        else:
            lines = list(map(texts.data.__getitem__, map(slice, texts.starts.tolist(),
                                                         texts.ends.tolist())))
            data = b"\n".join(lines) + b"\n"
            starts = np.zeros(len(lines) + 1, np.int64)
            np.cumsum(texts.ends - texts.starts + 1, out=starts[1:])
        for first in range(0, len(starts) - 1, _GROUP):
            bounds = starts[first:first + _GROUP + 1]
            self.blocks.append(isal_zlib.compress(data[bounds[0]:bounds[-1]], 0))
            self.block_starts.append(self.block_starts[-1] + len(bounds) - 1)
            self.offsets.append(bounds - bounds[0])

    def __len__(self) -> int:
        return self.block_starts[-1]

    def __getitem__(self, i: int) -> str:
        b = bisect.bisect_right(self.block_starts, i) - 1
        k = i - self.block_starts[b]
        start, end = self.offsets[b][k:k + 2].tolist()
        return isal_zlib.decompress(self.blocks[b])[start:end - 1].decode()

    def __iter__(self) -> Iterator[str]:
        for block in self.blocks:
            yield from isal_zlib.decompress(block).decode().split("\n")[:-1]


class KeptPcs:
    """Everything stored about the kept PCs, by slot (order of first appearance), and their
    raw records as columns in file order."""

    def __init__(self, loop_labels: list[str | None]) -> None:
        self.loop_labels = loop_labels          # loop id -> label (shared with the reader)
        self.pcs = Appended(np.uint64)
        self.asm = np.zeros(0, dtype=object)     # by slot: the first asm given, or None
        self.extra_stages: dict[int, dict[str, list[float]]] = {}
        self.sums = _Sums()
        self.columns: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []  # slot, loop, line
        self.texts = RawLines()

    def new_slots(self, pcs: np.ndarray) -> np.ndarray:
        first = len(self.pcs)
        self.pcs.extend(pcs)
        self.asm = grown(self.asm, len(self.pcs), fill=None)
        self.sums.grow(len(self.pcs))
        return np.arange(first, len(self.pcs), dtype=np.int64)

    def add(self, slots: np.ndarray, cols: RecordColumns, extras: dict[int, dict[str, float]],
            loops: np.ndarray, lines: np.ndarray, texts: LineTexts) -> None:
        """A batch of kept records: their slots, figures, extra stages by position, loop
        ids, line numbers and texts."""
        self.sums.add(slots, cols)
        self.columns.append((slots, loops, lines))
        self.texts.add(texts)
        # The first asm given for a PC that has none yet (== None: elementwise on objects).
        todo = np.flatnonzero((cols.asm != None) & (self.asm[slots] == None))  # noqa: E711
        if len(todo):
            new, first = np.unique(slots[todo], return_index=True)
            self.asm[new] = cols.asm[todo[first]]
        for i, extra in extras.items():
            self._add_extra_stages(int(slots[i]), extra, int(cols.iterations[i]))

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
        pcs = self.pcs.values()
        order = np.argsort(pcs)                       # row -> slot
        row_of = np.empty(n, np.int64)
        row_of[order] = np.arange(n)                  # slot -> row
        slots, loops, lines = self._flat()
        rows = row_of[slots]                          # per kept record, its PC's row
        names, starts = self._labels(rows, loops, n)
        columns = AlpColumns(
            pcs=pcs[order],
            asm=self.asm[:n][order].tolist(),
            extra_stages={int(row_of[k]): {name: (wsum / weight if weight else vsum / count)
                                           for name, (wsum, weight, vsum, count) in extra.items()}
                          for k, extra in self.extra_stages.items()},
            branch_kind=branch_kind[order],
            mem_kind=mem_kind[order],
            matched=matched[order],
            loop_names=names,
            loop_starts=starts,
            **self.sums.by_row(n, order),
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
        named = sorted(range(1, len(labels)), key=lambda i: labels[i] or "")  # ids by label
        rank = np.full(len(labels), -1, np.int64)
        rank[named] = np.arange(len(named))
        r = rank[loops]
        have = r >= 0
        width = max(len(named), 1)
        pairs = distinct(rows[have] * width + r[have])
        names = np.array(labels, dtype=object)[named][pairs % width].tolist()
        return names, np.searchsorted(pairs // width, np.arange(n + 1))
