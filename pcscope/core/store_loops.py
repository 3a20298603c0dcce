"""Hot fill and clear loops: a loop that is mostly narrow stores and almost no loads
(`str xzr, [x0], #8; sub; tst; b.ne`), recognised by the same instruction mix the coverage
table reads (pcscope.core.code_character), made a mechanism when it is big enough to rank.

Stores narrower than 16 bytes leave most of the loop's work to wider stores: `stp` of two
registers writes 16 bytes per instruction, `stp q` 32, `dc zva` a whole zeroed line. A
C-library routine's own loop is left to its routine's mechanism (its lever is its callers).
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core.code_character import Mix
from pcscope.core.mechanisms import Mechanism, Metric
from pcscope.core.patterns import loop_trips

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

STORE_LOOP_SHARE = 0.01  # a loop's own share that makes it worth an idea
WIDE = 16  # bytes of the widest plain pair of general registers (`stp x, x`)


def find(finder: _Finder) -> list[Mechanism]:
    """One mechanism per function holding hot store loops (each loop a site)."""
    p = finder.p
    branches, heads = finder._backward
    if not len(branches) or not p.total:
        return []
    # running sums written in place and store/load rows counted by search: full-row
    # temporaries here set the index build's peak memory
    running = np.zeros(len(p.value) + 1, dtype=np.int64)
    np.cumsum(p.value, dtype=np.int64, out=running[1:])
    share = (running[branches + 1] - running[heads]) / p.total
    del running
    # a fill stores a value it does not read: no load in the loop at all (a loop storing
    # what it loads is a copy or a transform, such as a byte-swapping store)
    hot = (share >= STORE_LOOP_SHARE) & (_within(finder.facts.store, heads, branches) > 0) & \
        (_within(finder.facts.load, heads, branches) == 0)
    taken: set[int] = set()
    by_fn: dict[int, list[tuple[range, int, int]]] = defaultdict(list)
    # inner loops first: the fill loop itself, not a loop around it
    for branch, head in sorted(zip(branches[hot].tolist(), heads[hot].tolist(), strict=True),
                               key=lambda bh: bh[0] - bh[1]):
        rows = range(head, branch + 1)
        fn = int(p.function[head])
        if taken.intersection(rows) or (fn >= 0 and finder._libc_names[fn] is not None):
            continue
        width = Mix.of((p.asm(r), finder.count(r)) for r in rows).store_width
        if width is not None and width < WIDE:
            taken.update(rows)
            by_fn[fn].append((rows, branch, width))
    return [_mechanism(finder, loops) for loops in by_fn.values()]


def _within(flags: np.ndarray, first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """How many rows of ``first[i]..last[i]`` (inclusive) have their flag set."""
    rows = np.flatnonzero(flags)
    return np.searchsorted(rows, last, "right") - np.searchsorted(rows, first, "left")


def _mechanism(finder: _Finder, loops: list[tuple[range, int, int]]) -> Mechanism:
    iterations = sum(finder.count(rows.start) for rows, _, _ in loops)
    entries = sum(finder.count(rows.start) / max(loop_trips(finder.p, rows.start, branch), 1.0)
                  for rows, branch, _ in loops)
    stored = sum(bytes_ * finder.count(r) for rows, _, _ in loops for r in rows
                 if (bytes_ := _bytes(finder, r)))
    width = min(w for _, _, w in loops)
    return finder.mechanism("store-loop", [
        finder.site(rows, branch) for rows, branch, _ in loops], [
        Metric("iterations", iterations, "executions", "loop head counts"),
        Metric("iterations per entry", round(iterations / entries, 1) if entries else 0, "x",
               "loop head count / loop entries"),
        Metric("bytes per entry", round(stored / entries) if entries else 0, "bytes",
               "bytes the loop's stores write / loop entries"),
        Metric("store width", width, "bytes", "the loop's usual store width"),
    ], [f"a loop of stores with almost no loads (a fill or clear), storing {width} bytes "
        f"per store instruction",
        "not a C-library routine's own loop"])


def _bytes(finder: _Finder, row: int) -> int:
    mix = Mix.of(((finder.p.asm(row), 1.0),))
    return max(mix.stores, default=0)
