"""The pattern pass's result as columns: what an index stores and a reopen reads.

Apart from the pass itself (pcscope.core.patterns), so a reopen for one lookup loads none
of the instruction-set tables and regular expressions the pass needs.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core.ids import hex_pc, pat_id

if TYPE_CHECKING:
    from pcscope.core.profile import Profile

PATTERN_CATEGORIES = (
    "atomic-llsc",
    "atomic-lse",
    "barrier",
    "acquire-release",
    "indirect-branch",
    "dependent-load",
    "division",
    "spin-wait",
    "call-overhead",
    "vectorization",
)
CATEGORY_CODE = {c: i for i, c in enumerate(PATTERN_CATEGORIES)}  # a hit's `category`
PLT, VENEER, PLT_SYMBOL = 0, 1, 2  # call-overhead kinds (the hit's `aux`)
INLINE, HELPER = 0, 1  # atomic hits: inline, or inside an outline-atomic helper (`aux`)


@dataclass(frozen=True)
class PatternHit:
    category: str
    pc: int
    row: int
    weight: float  # the row's value / profile total
    detail: str = ""

    @property
    def id(self) -> str:
        return pat_id(self.category, self.pc)


class PatternTable:
    """Hits as columns, sorted by category, then weight descending, then PC ascending.

    ``aux_pc``/``aux`` hold what a hit's detail says: dependent-load (loop head pc, base
    register number), spin-wait (loop head pc, instruction count), call-overhead (stub
    start pc, kind PLT/VENEER/PLT_SYMBOL), indirect-branch (target producer pc, class of
    pcscope.core.shapes), atomics (0, INLINE/HELPER), vectorization (loop head pc, trips
    per entry from the counts); 0 elsewhere.
    """

    def __init__(
        self,
        category: np.ndarray,
        row: np.ndarray,
        pc: np.ndarray,
        weight: np.ndarray,
        aux_pc: np.ndarray,
        aux: np.ndarray,
    ) -> None:
        self.category = category.astype(np.int8, copy=False)
        self.row = row.astype(np.int64, copy=False)
        self.pc = pc.astype(np.uint64, copy=False)
        self.weight = weight.astype(np.float64, copy=False)
        self.aux_pc = aux_pc.astype(np.uint64, copy=False)
        self.aux = aux.astype(np.int64, copy=False)
        self._offsets = np.searchsorted(self.category, np.arange(len(PATTERN_CATEGORIES) + 1))
        self._by_pc = np.lexsort((self.category, self.pc))

    def __len__(self) -> int:
        return len(self.row)

    def __iter__(self) -> Iterator[PatternHit]:
        return (self.hit(i) for i in range(len(self)))

    def counts(self) -> dict[str, int]:
        """Hits per category, every category listed (0 included)."""
        sizes = np.diff(self._offsets)
        return {c: int(sizes[i]) for i, c in enumerate(PATTERN_CATEGORIES)}

    def indices(self, category: str) -> np.ndarray:
        """Positions of a category's hits, heaviest first."""
        code = CATEGORY_CODE[category]
        return np.arange(self._offsets[code], self._offsets[code + 1])

    def rows(self, category: str) -> np.ndarray:
        return self.row[self.indices(category)]

    def hits(self, category: str, limit: int | None = None) -> list[PatternHit]:
        idx = self.indices(category)
        return [self.hit(int(i)) for i in idx[:limit]]

    def at(self, pc: int) -> list[PatternHit]:
        """Every hit at one PC (category order)."""
        key = np.uint64(pc)
        lo = np.searchsorted(self.pc, key, "left", sorter=self._by_pc)
        hi = np.searchsorted(self.pc, key, "right", sorter=self._by_pc)
        return [self.hit(int(i)) for i in self._by_pc[lo:hi]]

    def categories_at(self, pc: int) -> list[str]:
        """The categories of ``at(pc)``, without making the hits (nor their details)."""
        key = np.uint64(pc)
        lo = np.searchsorted(self.pc, key, "left", sorter=self._by_pc)
        hi = np.searchsorted(self.pc, key, "right", sorter=self._by_pc)
        return [PATTERN_CATEGORIES[int(self.category[i])] for i in self._by_pc[lo:hi]]

    def hit(self, i: int) -> PatternHit:
        category = PATTERN_CATEGORIES[int(self.category[i])]
        pc = int(self.pc[i])
        return PatternHit(
            category, pc, int(self.row[i]), float(self.weight[i]),
            _detail(category, pc, int(self.aux_pc[i]), int(self.aux[i])),
        )  # fmt: skip

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Columns for the index store (plain dtypes: ``np.save`` needs no pickle)."""
        return {
            "category": self.category,
            "row": self.row,
            "pc": self.pc,
            "weight": self.weight,
            "aux_pc": self.aux_pc,
            "aux": self.aux,
            "categories": np.array(PATTERN_CATEGORIES),
        }

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], profile: Profile | None = None
    ) -> PatternTable:
        """Reopen; category codes are remapped by name if the category list changed since.
        With ``profile``, check that every hit's row holds its PC (ValueError if stale)."""
        if profile is not None:
            rows, pcs = np.asarray(arrays["row"]), np.asarray(arrays["pc"])
            if len(rows) and (rows.max() >= len(profile) or (profile.pc[rows] != pcs).any()):
                raise ValueError("pattern table does not belong to this profile")
        names = [str(c) for c in arrays["categories"]]
        category = np.asarray(arrays["category"])
        if tuple(names) != PATTERN_CATEGORIES:
            remap = np.array([CATEGORY_CODE.get(n, -1) for n in names], dtype=np.int8)
            category = remap[category]
            keep = category >= 0
            arrays = {k: np.asarray(v)[keep] for k, v in arrays.items() if k != "categories"}
            category = category[keep]
            order = np.lexsort((arrays["pc"], -arrays["weight"], category))
            arrays = {k: v[order] for k, v in arrays.items()}
            category = category[order]
        return cls(category, *(np.asarray(arrays[k]) for k in ("row", "pc", "weight",
                                                                "aux_pc", "aux")))  # fmt: skip


def _detail(category: str, pc: int, aux_pc: int, aux: int) -> str:
    if category == "dependent-load":
        return f"loop from {hex_pc(aux_pc)}: the address comes from the previous iteration's load"
    if category == "spin-wait":
        return f"loop {hex_pc(aux_pc)}..{hex_pc(pc)} ({aux} instructions)"
    if category == "call-overhead":
        kind = {PLT: "PLT stub", VENEER: "veneer", PLT_SYMBOL: "PLT symbol"}[aux]
        return f"{kind} at {hex_pc(aux_pc)}"
    if category == "indirect-branch":
        from pcscope.core.shapes import INDIRECT_CLASSES  # the pass's tables: on first use

        source = f", target loaded at {hex_pc(aux_pc)}" if aux_pc else ""
        return f"{INDIRECT_CLASSES.get(aux, 'indirect')}{source}"
    if category in ("atomic-llsc", "atomic-lse") and aux == HELPER:
        return "inside an outline-atomic helper"
    if category == "vectorization":
        return f"byte loop {hex_pc(aux_pc)}..{hex_pc(pc)}, {aux} iterations per entry"
    return ""
