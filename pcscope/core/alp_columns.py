"""The aggregated ALP held as columns, and the read-only mapping PC -> AlpRecord over them.

A realistic raw ALP of ~17M tokens has ~200k distinct PCs; as AlpRecord objects they
would take ~800 bytes each and a second to build, while views look at a few and the
index can store the columns as they are. So records are made on access (or all at once,
column by column, by ``values()``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass

import numpy as np

from pcscope.core.alp import (
    BRANCH_KINDS,
    MEM_KINDS,
    STAGES,
    AlpRecord,
    BranchStats,
    MemStats,
    row_of,
)

ABSENT = -1    # a count (or kind code) that no record carried
_CHUNK = 4096  # records built at a time by values()


@dataclass
class AlpColumns:
    """Row i describes the i-th kept PC in ascending order."""

    pcs: np.ndarray             # uint64, ascending
    asm: list[str | None]
    iterations: np.ndarray      # int64
    stages: np.ndarray          # float64 (n, len(STAGES)), weighted means; NaN = absent
    extra_stages: dict[int, dict[str, float]]   # row -> {name: mean} for names beyond STAGES
    branch_kind: np.ndarray     # int64: index into BRANCH_KINDS, ABSENT = no branch block
    branch: np.ndarray          # int64 (n, 3): executed, taken, mispredicted; ABSENT = absent
    mem_kind: np.ndarray        # int64: index into MEM_KINDS, ABSENT = no mem block
    mem: np.ndarray             # int64 (n, len(MEM_COUNTS)); ABSENT = absent
    avg_latency: np.ndarray     # float64; NaN = absent
    matched: np.ndarray         # bool: the PC is in the profile
    loop_names: list[str]       # each row's sorted distinct loop labels, row after row
    loop_starts: np.ndarray     # int64 (n + 1): row i's are loop_names[starts[i]:starts[i+1]]

    def __len__(self) -> int:
        return len(self.pcs)


class AlpRecords(Mapping[int, AlpRecord]):
    """PC -> AlpRecord, made from the columns on access (a new object each time)."""

    def __init__(self, columns: AlpColumns) -> None:
        self.columns = columns

    def __getitem__(self, pc: int) -> AlpRecord:
        row = row_of(self.columns.pcs, pc)
        if row is None:
            raise KeyError(pc)
        return self._build([row])[0]

    def __contains__(self, pc: object) -> bool:
        return row_of(self.columns.pcs, pc) is not None

    def __iter__(self) -> Iterator[int]:
        return iter(self.columns.pcs.tolist())

    def __len__(self) -> int:
        return len(self.columns)

    def values(self) -> Iterator[AlpRecord]:  # type: ignore[override]
        """Every record in PC order, built column by column a few thousand at a time (far
        faster than one by one, and memory stays flat). One pass, unlike a dict view."""
        n = len(self.columns)
        for start in range(0, n, _CHUNK):
            yield from self._build(range(start, min(start + _CHUNK, n)))

    def many(self, pcs: Iterable[int]) -> list[AlpRecord]:
        """The records of those of ``pcs`` that have one, built in one pass (a brief's few
        thousand PCs cost one column read, not one each)."""
        rows = [row for row in (row_of(self.columns.pcs, pc) for pc in pcs) if row is not None]
        return self._build(rows) if rows else []

    def items(self) -> Iterator[tuple[int, AlpRecord]]:  # type: ignore[override]
        return ((r.pc, r) for r in self.values())

    def _build(self, rows: Iterable[int]) -> list[AlpRecord]:
        c = self.columns
        rows = np.fromiter(rows, dtype=np.intp)
        row_list = rows.tolist()
        stages = _stage_dicts(c.stages[rows])
        if c.extra_stages:
            position = {row: i for i, row in enumerate(row_list) if row in c.extra_stages}
            for row, i in position.items():
                stages[i].update(sorted(c.extra_stages[row].items()))
        latency = [v if v == v else None for v in c.avg_latency[rows].tolist()]
        branches = _blocks(c.branch_kind[rows].tolist(), BRANCH_KINDS, c.branch[rows],
                           BranchStats)
        mems = _blocks(c.mem_kind[rows].tolist(), MEM_KINDS, c.mem[rows], MemStats, latency)
        # Only these rows' bounds: converting the whole column made one lookup cost ~0.4 ms.
        lo = c.loop_starts[rows].tolist()
        hi = c.loop_starts[rows + 1].tolist()
        loops = [c.loop_names[a:b] for a, b in zip(lo, hi, strict=True)]
        return list(map(AlpRecord, c.pcs[rows].tolist(), [c.asm[row] for row in row_list],
                        c.iterations[rows].tolist(), loops, stages, branches, mems,
                        c.matched[rows].tolist()))


def _stage_dicts(means: np.ndarray) -> list[dict[str, float]]:
    """Per row, {stage: mean} of the stages present (not NaN), in STAGES order; rows are
    grouped by which stages they have, so each group is one list conversion."""
    have = ~np.isnan(means)
    pattern = have @ (1 << np.arange(len(STAGES)))
    out: list = [None] * len(means)     # every row falls in one pattern below
    for code in np.unique(pattern).tolist():
        rows = np.flatnonzero(pattern == code)
        cols = [j for j in range(len(STAGES)) if code >> j & 1]
        names = [STAGES[j] for j in cols]
        for row, values in zip(rows.tolist(), means[np.ix_(rows, cols)].tolist(), strict=True):
            out[row] = dict(zip(names, values, strict=True))
    return out


def _blocks(codes: list[int], kinds: tuple[str, ...], counts: np.ndarray, make: type,
            *extra: list) -> list:
    """Per row, ``make(kind, *counts (ABSENT -> None), *extra)``, or None without a kind."""
    out: list = [None] * len(codes)
    rows = [i for i, code in enumerate(codes) if code != ABSENT]
    for i, row in zip(rows, counts[rows].tolist(), strict=True):
        out[i] = make(kinds[codes[i]], *[None if c == ABSENT else c for c in row],
                      *[column[i] for column in extra])
    return out
