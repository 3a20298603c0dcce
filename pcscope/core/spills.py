"""Register spills in a hot long straight-line block.

A fully unrolled loop body or a large inlined expression can keep more values live than
AArch64's 31 general registers hold; the compiler then stores some to the stack and loads
them back (`str x7, [sp, #0xb0]` … `ldr x7, [sp, #0xb0]`). In a block of hundreds of
instructions run as one (every instruction the same count, no branch or branch target
inside) a high share of `sp`/`x29`-relative loads and stores is that register pressure:
unrolling less or moving the accumulation to vector registers removes those instructions.
A prologue or a short block with a few frame accesses stays below both bars.
"""

from __future__ import annotations

from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa
from pcscope.core.mechanisms import Mechanism, Metric

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

LONG_BLOCK = 200  # instructions of a straight-line block that make it long
STACK_SHARE = 0.15  # of its instructions loading or storing off sp/x29 that make it spill-bound
HOT_BLOCK = 0.005  # own share a block needs (an idea's minimum)
_FRAME = frozenset(("sp", "x29"))


def find(finder: _Finder) -> list[Mechanism]:
    """One mechanism per function holding spill-bound long blocks, each block a site."""
    p, f = finder.p, finder.facts
    if len(p) < LONG_BLOCK or not p.total:
        return []
    pcs = p.pc.view(np.int64)
    counts = p.samples
    branch = f.flags(isa.is_branch)
    joins = np.isin(pcs, f.target[f.target >= 0])
    start = np.ones(len(p), dtype=bool)
    start[1:] = (pcs[1:] != pcs[:-1] + 4) | (counts[1:] != counts[:-1]) | branch[:-1] | \
        joins[1:]
    firsts = np.flatnonzero(start)
    ends = np.append(firsts[1:], len(p))
    running = np.concatenate(([0], np.cumsum(p.value, dtype=np.int64)))
    long = (ends - firsts >= LONG_BLOCK) & \
        ((running[ends] - running[firsts]) / p.total >= HOT_BLOCK)
    by_fn: dict[int, list[tuple[range, int]]] = defaultdict(list)
    for lo, hi in zip(firsts[long].tolist(), ends[long].tolist(), strict=True):
        rows = range(lo, hi)
        stack = sum(1 for r in rows if (f.load[r] or f.store[r])
                    and finder.op(r).addr[:1] and finder.op(r).addr[0] in _FRAME)
        if stack >= STACK_SHARE * len(rows):
            by_fn[int(p.function[lo])].append((rows, stack))
    return [_mechanism(finder, blocks) for blocks in by_fn.values()]


def _mechanism(finder: _Finder, blocks: list[tuple[range, int]]) -> Mechanism:
    size = sum(len(rows) for rows, _ in blocks)
    stack = sum(n for _, n in blocks)
    runs = sum(finder.count(rows.start) for rows, _ in blocks)
    return finder.mechanism("spill-block", [
        finder.site(rows, rows.start) for rows, _ in blocks], [
        Metric("block instructions", size, "instructions",
               "straight-line instructions of the blocks (same count, no branch inside)"),
        Metric("stack loads and stores", stack, "instructions",
               "loads and stores off sp/x29 in them"),
        Metric("stack share of the block", round(stack / size, 3), "x",
               "stack loads and stores / block instructions"),
        Metric("block runs", runs, "executions", "the blocks' counts"),
    ], [f"a straight-line block of at least {LONG_BLOCK} instructions (one count, no branch "
        f"or branch target inside)",
        f"{stack / size:.0%} of its instructions load or store off sp/x29 (at least "
        f"{STACK_SHARE:.0%}): values kept on the stack for lack of registers"])
