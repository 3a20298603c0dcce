"""The columnar profile model: one row per sampled instruction, ascending PC.

Windows and functions are tables of arrays too; ``Window``/``Function`` objects are built
on access so a million-row profile reopens without creating a million Python objects.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from pcscope.core.columns import StringColumn
from pcscope.core.ids import fn_id, is_hidden_name, win_id


@dataclass(frozen=True)
class Window:
    index: int
    id: str
    first_pc: int
    last_pc: int
    label: str | None
    function: int
    module: int
    n: int
    value: int
    weight: float


@dataclass(frozen=True)
class Function:
    index: int
    id: str
    name: str | None
    hidden: bool
    first_pc: int
    n: int
    value: int
    weight: float


@dataclass
class Groups:
    """Rows grouped CSR-style: group ``g`` owns ``rows[offsets[g]:offsets[g+1]]`` (ascending pc)."""

    rows: np.ndarray  # int64 row indices
    offsets: np.ndarray  # int64, len = groups + 1

    @classmethod
    def from_codes(cls, codes: np.ndarray, groups: int) -> Groups:
        """Group rows by code (rows with code -1 belong to no group), rows ascending in each.

        A window's or a function's rows are mostly one run of adjacent rows; then the runs
        are sorted by code rather than the rows (a stable argsort of a million codes took
        ~60 ms on the build's single-threaded path, the runs ~20). Both give the same
        groups: a stable sort keeps the runs of one code in row order."""
        n = len(codes)
        starts = np.flatnonzero(np.concatenate(([True], codes[1:] != codes[:-1]))) if n \
            else np.zeros(0, dtype=np.int64)
        counts = np.bincount(codes + 1, minlength=groups + 1)  # code -1 counted at 0
        offsets = np.zeros(groups + 1, dtype=np.int64)
        np.cumsum(counts[1:], out=offsets[1:])
        if 4 * len(starts) > n:  # short runs: sorting the rows is cheaper
            rows = np.argsort(codes, kind="stable").astype(np.int64, copy=False)
            return cls(rows[int(counts[0]):], offsets)
        lengths = np.diff(np.append(starts, n))
        run_codes = codes[starts]
        order = np.argsort(run_codes, kind="stable")
        order = order[run_codes[order] >= 0]  # code -1 sorts first: its runs dropped
        starts, lengths = starts[order], lengths[order]
        ends = np.cumsum(lengths)
        rows = np.arange(int(offsets[-1]), dtype=np.int64)
        rows += np.repeat(starts - (ends - lengths), lengths)
        return cls(rows, offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def members(self, g: int) -> np.ndarray:
        return self.rows[self.offsets[g] : self.offsets[g + 1]]

    def sizes(self) -> np.ndarray:
        return np.diff(self.offsets)

    def sums(self, value: np.ndarray) -> np.ndarray:
        """Exact int64 sums of ``value`` per group (bincount's float64 would round big
        counts); reduceat over the grouped rows, 0 for an empty group."""
        out = np.zeros(len(self), dtype=np.int64)
        filled = np.flatnonzero(self.sizes() > 0)
        if len(filled):
            grouped = np.asarray(value, dtype=np.int64)[self.rows]
            out[filled] = np.add.reduceat(grouped, self.offsets[filled])
        return out


class WindowTable:
    """Sequence of windows; arrays underneath (``arrays()`` persists them)."""

    STATE = ("rows", "offsets", "value", "function", "module")

    def __init__(
        self,
        profile: Profile,
        labels: list[str],
        label_code: np.ndarray,
        state: dict[str, np.ndarray] | None = None,
    ) -> None:
        self._p = profile
        self.labels = labels  # distinct `window` column values
        self.label_code = label_code  # int32 per window, -1 = derived
        n = len(label_code)
        if state is None:
            state = window_state(profile.window, n, profile.function, profile.module,
                                 profile.value)
        self.groups = Groups(state["rows"], state["offsets"])
        self.value = state["value"]
        self.function = state["function"]
        self.module = state["module"]
        starts = self.groups.offsets[:-1]
        self.first_row = self.groups.rows[starts] if n else starts
        self.last_row = self.groups.rows[self.groups.offsets[1:] - 1] if n else starts

    def arrays(self) -> dict[str, np.ndarray]:
        return {
            "rows": self.groups.rows,
            "offsets": self.groups.offsets,
            "value": self.value,
            "function": self.function,
            "module": self.module,
        }

    def __len__(self) -> int:
        return len(self.label_code)

    def __iter__(self) -> Iterator[Window]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i: int) -> Window:
        if i < 0:
            i += len(self)
        p = self._p
        first = int(p.pc[self.first_row[i]])
        code = int(self.label_code[i])
        value = int(self.value[i])
        return Window(
            index=i,
            id=win_id(first),
            first_pc=first,
            last_pc=int(p.pc[self.last_row[i]]),
            label=self.labels[code] if code >= 0 else None,
            function=int(self.function[i]),
            module=int(self.module[i]),
            n=int(self.groups.offsets[i + 1] - self.groups.offsets[i]),
            value=value,
            weight=value / p.total if p.total else 0.0,
        )

    def weights(self) -> np.ndarray:
        total = self._p.total
        return self.value / total if total else np.zeros(len(self))

    def first_pcs(self) -> np.ndarray:
        return self._p.pc[self.first_row]


class FunctionTable:
    STATE = ("rows", "offsets", "value")

    def __init__(
        self, profile: Profile, names: list[str], state: dict[str, np.ndarray] | None = None
    ) -> None:
        self._p = profile
        self.names = names
        if state is None:
            state = function_state(profile.function, len(names), profile.value)
        self.groups = Groups(state["rows"], state["offsets"])
        self.value = state["value"]
        self.first_row = (
            self.groups.rows[self.groups.offsets[:-1]] if len(names) else np.zeros(0, np.int64)
        )

    def arrays(self) -> dict[str, np.ndarray]:
        return {"rows": self.groups.rows, "offsets": self.groups.offsets, "value": self.value}

    def __len__(self) -> int:
        return len(self.names)

    def __iter__(self) -> Iterator[Function]:
        return (self[i] for i in range(len(self)))

    def __getitem__(self, i: int) -> Function:
        if i < 0:
            i += len(self)
        p = self._p
        name = self.names[i]
        first = int(p.pc[self.first_row[i]])
        value = int(self.value[i])
        return Function(
            index=i,
            id=fn_id(name, first),
            name=name,
            hidden=is_hidden_name(name),
            first_pc=first,
            n=int(self.groups.offsets[i + 1] - self.groups.offsets[i]),
            value=value,
            weight=value / p.total if p.total else 0.0,
        )

    def index_of(self, name: str) -> int | None:
        # names are sorted (dictionary encoding), so a bisect finds them.
        import bisect

        i = bisect.bisect_left(self.names, name)
        return i if i < len(self.names) and self.names[i] == name else None


def window_state(window: np.ndarray, count: int, function: np.ndarray, module: np.ndarray,
                 value: np.ndarray) -> dict[str, np.ndarray]:
    """A WindowTable's arrays (its STATE) from the rows' window codes (``count`` windows),
    functions, modules and values: what a reopen reads back, and a reader may make before
    the rest of its Profile is ready."""
    groups = Groups.from_codes(window, count)
    return {"rows": groups.rows, "offsets": groups.offsets, "value": groups.sums(value),
            "function": _dominant(function, groups, value),
            "module": _dominant(module, groups, value)}


def function_state(function: np.ndarray, count: int, value: np.ndarray) -> dict[
        str, np.ndarray]:
    """A FunctionTable's arrays (its STATE) from the rows' function codes (``count``)."""
    groups = Groups.from_codes(function, count)
    return {"rows": groups.rows, "offsets": groups.offsets, "value": groups.sums(value)}


def _dominant(codes: np.ndarray, groups: Groups, value: np.ndarray) -> np.ndarray:
    """Per group, the code holding most value (ties: the code of the lowest row); -1 if none.

    A group whose rows share one code (most windows: a derived window never spans two
    functions) takes it directly; the rest are resolved together over (group, code) pairs,
    vectorised (a per-group Python loop was quadratic when labelled windows mix functions)."""
    out = np.full(len(groups), -1, dtype=np.int32)
    filled = np.flatnonzero(groups.sizes() > 0)
    if len(filled) == 0:
        return out
    grouped = codes[groups.rows]
    starts = groups.offsets[filled]
    low = np.minimum.reduceat(grouped, starts)
    high = np.maximum.reduceat(grouped, starts)
    uniform = low == high
    out[filled[uniform]] = low[uniform]
    mixed = filled[~uniform]
    if len(mixed) == 0:
        return out
    group_of_row = np.repeat(np.arange(len(groups)), groups.sizes())
    in_mixed = np.zeros(len(groups), dtype=bool)
    in_mixed[mixed] = True
    rows = np.sort(groups.rows[in_mixed[group_of_row]])  # ascending: ties go to the lowest
    row_group = np.empty(len(codes), dtype=np.int64)
    row_group[groups.rows] = group_of_row
    sub_codes, sub_group = codes[rows].astype(np.int64), row_group[rows]
    width = int(sub_codes.max()) + 2  # codes run from -1
    pairs, pair_of_row = np.unique(sub_group * width + (sub_codes + 1), return_inverse=True)
    held = np.zeros(len(pairs), dtype=np.int64)
    np.add.at(held, pair_of_row, value[rows])
    first_row = np.full(len(pairs), len(rows), dtype=np.int64)
    np.minimum.at(first_row, pair_of_row, np.arange(len(rows)))
    pair_group = pairs // width
    best = np.lexsort((first_row, -held, pair_group))
    leaders = best[np.concatenate(([True], pair_group[best][1:] != pair_group[best][:-1]))]
    out[pair_group[leaders]] = (pairs[leaders] % width - 1).astype(np.int32)
    return out


@dataclass(frozen=True)
class HotSelection:
    windows: list[int]
    coverage: float
    top: int | None = None
    target: float = 0.90
    by_weight: bool = False  # the heaviest windows up to a target (not an engineer's pick)

    def pcs(self, profile: Profile) -> np.ndarray:
        if not self.windows:
            return np.zeros(0, dtype=np.uint64)
        rows = np.concatenate([profile.window_rows(w) for w in self.windows])
        return np.sort(profile.pc[rows])


@dataclass
class Profile:
    path: str
    pc: np.ndarray
    samples: np.ndarray
    cycles: np.ndarray | None
    asm_column: StringColumn
    # Per row, the number of its asm text among the distinct texts, numbered in row order
    # of first appearance (int32): what is read from a text is read once per distinct text
    # (a quarter to a half of the rows).
    asm_code: np.ndarray
    mnemonic: np.ndarray
    mnemonics: list[str]
    function: np.ndarray
    function_names: list[str]
    window: np.ndarray
    window_labels: list[str]
    window_label_code: np.ndarray
    module: np.ndarray
    modules: list[str]
    line: np.ndarray
    extras: dict[str, StringColumn] = field(default_factory=dict)
    window_state: dict[str, np.ndarray] | None = None
    function_state: dict[str, np.ndarray] | None = None
    # ``windows_by_weight()`` as stored by the index: the explorer's first screen lists
    # windows in this order, and a reopen need not sort them again.
    by_weight: np.ndarray | None = None

    def __post_init__(self) -> None:
        self.value = self.cycles if self.cycles is not None else self.samples
        # What the counts are: cycles (a cycles column), else samples; the index sets
        # "executions" when the profile holds exact counts (--counts executions).
        self.basis = "cycles" if self.cycles is not None else "samples"
        self.total = int(self.value.sum())
        self.windows = WindowTable(
            self, self.window_labels, self.window_label_code, self.window_state
        )
        self.functions = FunctionTable(self, self.function_names, self.function_state)

    def __len__(self) -> int:
        return len(self.pc)

    def asm_firsts(self) -> np.ndarray:
        """The first row of each distinct asm text, ascending (``asm_code`` numbers them)."""
        if not len(self.asm_code):
            return np.zeros(0, dtype=np.int64)
        seen = np.maximum.accumulate(self.asm_code)
        return np.flatnonzero(np.concatenate(([True], seen[1:] > seen[:-1])))

    @cached_property
    def asm_distinct(self) -> StringColumn:
        """The distinct asm texts, numbered by ``asm_code``: gathered once for the facts, the
        text index and the regex search (a quarter of the rows' text at 1M rows)."""
        return self.asm_column.take(self.asm_firsts())

    def asm(self, row: int) -> str:
        return self.asm_column[row]

    def row_of(self, pc: int) -> int | None:
        if pc < 0 or pc >= 1 << 64:
            return None
        key = np.uint64(pc)
        i = int(np.searchsorted(self.pc, key))
        return i if i < len(self.pc) and self.pc[i] == key else None

    def window_rows(self, w: int) -> np.ndarray:
        return self.windows.groups.members(w)

    def function_rows(self, f: int) -> np.ndarray:
        return self.functions.groups.members(f)

    def rows_before(self, row: int, limit: int) -> range:
        """The rows before ``row`` down to its function's first, latest first, at most
        ``limit`` (what a look-back for a register's setter reads)."""
        first = row
        while first > 0 and row - first < limit and self.function[first - 1] == self.function[row]:
            first -= 1
        return range(row - 1, first - 1, -1)

    def share(self, row: int) -> float:
        return int(self.value[row]) / self.total if self.total else 0.0

    def windows_by_weight(self) -> np.ndarray:
        """Window indices by descending weight; ties by lower first PC (docs/formats.md §1)."""
        if self.by_weight is None:
            self.by_weight = np.lexsort(
                (self.windows.first_pcs(), -self.windows.value)
            ).astype(np.int32)
        return self.by_weight

    def hot_windows(self, top: int | None = None, coverage: float = 0.90) -> HotSelection:
        """Descending weight until ``top`` windows or ``coverage`` is reached, whichever first;
        the window that crosses ``coverage`` is included."""
        order = self.windows_by_weight()
        weights = self.windows.weights()[order]
        cumulative = np.cumsum(weights)
        count = len(order)
        if coverage < 1.0 or len(cumulative) == 0:
            crossing = int(np.searchsorted(cumulative, coverage - 1e-12, side="left")) + 1
            count = min(count, crossing)
        if top is not None:
            count = min(count, top)
        chosen = [int(w) for w in order[:count]]
        covered = float(cumulative[count - 1]) if count else 0.0
        return HotSelection(chosen, covered, top, coverage, by_weight=True)
