"""Gather and branch through an index array: a loop that walks an array of indexes
(``ldr w6, [x14]`` with ``x14`` stepped, or ``ldr w, [x22, x1, lsl #2]`` with ``x1`` stepped),
loads ``base[idx + k]`` from a fixed table (``ldrb w1, [x2, w1, uxtw]``) and branches on the
loaded key: the inner loop of a radix or three-way quicksort partition (bzip2's
mainQSort3), a filter through a permutation, a bucket scan.

Each key is a dependent load (the index first, then the key) whose address is known only
from the index array, and each decision is a data-dependent branch. Loading the keys into a
contiguous array first lets independent loads overlap (or a prefetch of
``base[idx[i + d] + k]`` a few elements ahead hides their latency), and a partition on a
contiguous key array can be written branch-free. Whether mispredicts or misses dominate is
not in an execution count: the branches' taken ratios are, and a mispredict count (PMU or
the simulator) decides. A branch-free rewrite needs a branch that picks a value: its two
sides rejoin within ``SIDE`` instructions with no call and no inner loop between. A branch
that guards a loop or a call (bzip2's generateMTFValues: a counter increment or the whole
move-to-front search) is kept out of that advice.

Two things decide which branch-free form fits. The decision's arity: branches on one key
that lead straight into each other (``sub`` + ``cbz``, then ``b.le``) are one decision, and
one testing the key for equality and for order with three outcomes is three-way, with the
part of keys found equal (the equality branch's taken share); a two-way block partition
(BlockQuicksort, pdqsort) does not fit it as written. And the kind of move: a loop storing an
index at an address that comes from its key (``ptr[copyStart[c]++] = j``) is a bucket
scatter, not a partition: the key names the place, no branch chooses it.

The loop is a natural loop of its function (pcscope.core.natural_loops; a partition's two
scans and its swaps are one loop). It fires when:
- a *stream* load reads 4 or 8 bytes at an address that moves by a constant each iteration
  (pcscope.core.loop_dataflow strides), not a stack slot;
- a *gather* load has a base the loop does not change and an index that comes from a
  stream load's value;
- a conditional branch of the loop decides on the gathered value;
- the loop has no ``prfm`` (a loop that prefetches already does the cheap half).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa, loop_dataflow
from pcscope.core.mechanisms import Mechanism, Metric
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

MIN_SHARE = 0.005  # a loop's own share worth a mechanism
_WORDS = ("w", "x")  # a stream of indexes is 32- or 64-bit
_STREAMS = frozenset(("ldr", "ldur", "ldrsw", "ldursw"))
_FRAME = frozenset(("sp", "x29"))
SIDE = 8  # rows each side of a value choice may hold before the two sides rejoin
# the checks the advice reads: a partition, its three-way decisions, and bucket scatters
PARTITION = "the loop stores index values back (it partitions or swaps the index array)"
THREE_WAY = "three-way decisions on the key (tested for equality and for order: `<`, `==`, `>`): "
SCATTERS = "bucket scatters, not partitions (a store's address comes from the key): "
_EXIT = -1  # a side that leaves the loop
_NEXT = -2  # a side that goes on to the loop's next iteration


@dataclass(frozen=True)
class Decision:
    """The branches on a loaded key that decide together, one leading straight into the
    next (a partition's ``n == 0``, then ``n < 0``): how many ways the key sends an element,
    and which branch tests it for equality."""

    branches: tuple[int, ...]  # rows, the first to run first
    ways: int  # distinct places the branches lead to
    equal: int | None  # row of the equality test (`cbz`/`cbnz`/`b.eq`/`b.ne`) of a 3-way one
    equal_taken: bool  # the key is equal when that branch jumps (`cbz`, `b.eq`)


@dataclass(frozen=True)
class GatherLoop:
    rows: tuple[int, ...]  # the loop's rows (less those another mechanism counts)
    streams: tuple[int, ...]  # rows of the index loads feeding a gather
    gathers: tuple[int, ...]  # rows of the key loads
    branches: tuple[int, ...]  # rows of the conditional branches on the keys
    guards: tuple[str | None, ...]  # per branch: what it guards beyond a value choice
    moves: bool  # the loop stores index values back (a partition or swap)
    scatters: tuple[int, ...]  # rows of stores whose address comes from a key (a bucket scatter)
    decisions: tuple[Decision, ...]  # the branches on the keys, grouped by decision
    keys: int  # gather executions
    iterations: int  # the loop head's count

    @property
    def partition(self) -> bool:
        """It moves indexes to places its branches choose, not to places its keys name."""
        return self.moves and not self.scatters


def find(finder: _Finder, claimed: np.ndarray) -> list[Mechanism]:
    """One mechanism per function, a site per loop (pcscope.core.natural_loops over
    functions) that gathers keys through an index array and branches on them; rows already
    ``claimed`` are left out."""
    p = finder.p
    by_fn: dict[int, list[GatherLoop]] = {}
    for rows in finder.function_loops:
        fn = int(p.function[rows[0]])
        if fn < 0 or finder._libc_names[fn] is not None or finder.share(rows) < MIN_SHARE:
            continue
        nested = frozenset(int(p.pc[r]) for inner in finder.function_loops
                           if rows[0] < min(inner) and max(inner) <= max(rows) for r in inner)
        loop = gather_loop([finder.op(r) for r in rows], rows, [finder.count(r) for r in rows],
                           nested)
        if loop is None or claimed[[*loop.gathers, *loop.branches]].any():
            continue
        own = replace(loop, rows=tuple(r for r in loop.rows if not claimed[r]))
        if finder.share(own.rows) >= MIN_SHARE:
            by_fn.setdefault(fn, []).append(own)
    return [_mechanism(finder, loops) for loops in by_fn.values()]


def gather_loop(ops: list[Op], rows: list[int], counts: list[int],
                nested: frozenset[int]) -> GatherLoop | None:
    """The gather through an index array of one loop (``ops[0]`` its head; ``nested`` the
    pcs of loops nested in it), or None."""
    if any(o.mnemonic.startswith("prfm") for o in ops):
        return None
    flow = loop_dataflow.read(ops)
    streams = {i for i, o in enumerate(ops) if _stream(o, flow.strides[i])}
    gathers = {i for i, o in enumerate(ops)
               if o.load and len(o.addr) == 2 and i not in streams and
               _fixed(o.addr[0], flow) and flow.sources[i] & streams}
    branches = [i for i, o in enumerate(ops)
                if isa.is_conditional_branch(o.mnemonic) and flow.sources[i] & gathers]
    if not branches or not gathers:
        return None
    used = sorted({s for g in gathers for s in flow.sources[g] & streams})
    moves = any(isa.is_store(o.mnemonic) and flow.sources[i] & streams
                for i, o in enumerate(ops))
    # stores of an index (not of a value loaded through a key) at its key's place first:
    # the scatter itself, then its bucket counters
    scatters = sorted((i for i, o in enumerate(ops) if isa.is_store(o.mnemonic) and
                       _sources_of(ops, flow, i, o.addr) & gathers),
                      key=lambda i: (bool(_sources_of(ops, flow, i, _stored(ops[i])) & gathers), i))
    return GatherLoop(
        tuple(rows), tuple(rows[i] for i in used), tuple(rows[i] for i in sorted(gathers)),
        tuple(rows[i] for i in branches), tuple(_guards(ops, i, nested) for i in branches),
        moves, tuple(rows[i] for i in scatters),
        tuple(_decisions(ops, rows, branches)), sum(counts[i] for i in gathers), counts[0])


def _sources_of(ops: list[Op], flow: loop_dataflow.LoopValues, at: int,
                regs: tuple[str, ...]) -> set[int]:
    """The loads registers ``regs`` of ``ops[at]`` come from: each one's last write before
    it in the body (a load counts itself)."""
    out: set[int] = set()
    for reg in regs:
        j = next((k for k in range(at - 1, -1, -1) if reg in ops[k].dest), None)
        if j is not None:
            out |= flow.sources[j] | ({j} if reg in ops[j].loaded else set())
    return out


def _stored(o: Op) -> tuple[str, ...]:
    """The registers a store writes to memory (its sources that are not its address)."""
    return tuple(r for r in o.src if r not in o.addr)


_EQUAL = frozenset(("cbz", "cbnz", "b.eq", "b.ne"))
_EQUAL_TAKEN = frozenset(("cbz", "b.eq"))
_ORDER = frozenset(f"b.{c}" for c in ("lt", "le", "gt", "ge", "mi", "pl", "hi", "hs", "lo",
                                      "ls", "cc", "cs"))


def _decisions(ops: list[Op], rows: list[int], branches: list[int]) -> list[Decision]:
    """The branches on keys grouped by decision: a branch that another one falls into or
    jumps to belongs to that one's decision; the places a decision leads to that are not
    one of its branches are its ways. One that tests the key for equality and for order
    with three ways is three-way (``<``, ``==``, ``>``)."""
    at = {ops[i].pc: i for i in branches}

    def ways(i: int) -> list[int]:
        return [ops[i].pc + 4, *(() if ops[i].target is None else (ops[i].target,))]

    inner = {at[pc] for i in branches for pc in ways(i) if at.get(pc, i) != i}
    out = []
    for root in branches:
        if root in inner:
            continue
        tree, leaves, todo = [], set(), [root]
        while todo:
            i = todo.pop()
            if i in tree:
                continue
            tree.append(i)
            for pc in ways(i):
                if pc in at:
                    todo.append(at[pc])
                else:
                    leaves.add(pc)
        names = {ops[i].mnemonic for i in tree}
        equal = next((i for i in tree if ops[i].mnemonic in _EQUAL), None)
        if len(leaves) != 3 or not names & _ORDER:
            equal = None
        out.append(Decision(tuple(rows[i] for i in tree), len(leaves),
                            None if equal is None else rows[equal],
                            equal is not None and ops[equal].mnemonic in _EQUAL_TAKEN))
    return out


def _guards(ops: list[Op], at: int, nested: frozenset[int]) -> str | None:
    """What the branch ``ops[at]`` guards beyond a choice between values: "a loop" or "a
    call" met on a side before the two sides rejoin, "a long path" when they do not rejoin
    within ``SIDE`` rows; None for a short diamond (both sides reach one instruction, the
    loop going on or the loop's exit)."""
    by_pc = {o.pc: o for o in ops}
    branch = ops[at]
    if branch.target is None:
        return "a long path"
    a, b = (_side(by_pc, nested, ops[0].pc, pc)
            for pc in (branch.pc + 4, branch.target))
    if any(isinstance(x, int) and x in b for x in a):
        return None
    return next((x for x in (a[-1], b[-1]) if isinstance(x, str)), "a long path")


def _side(by_pc: dict[int, Op], nested: frozenset[int], head: int, pc: int) -> list[int | str]:
    """The pcs one side of a branch runs from ``pc``, at most ``SIDE`` rows, ended by
    ``_NEXT`` (the loop head, or a back-edge into the loop's own rows: a ``continue`` into
    its middle, as a partition's two scans), ``_EXIT`` (it leaves the loop, a backward jump
    out of it included) or what stops a value choice ("a call"; "a loop": a nested loop's
    row); forward conditional branches are read as falling through."""
    path: list[int | str] = []
    while True:
        if pc in nested:
            return [*path, "a loop"]
        if pc == head or pc not in by_pc:
            return [*path, _NEXT if pc == head else _EXIT]
        if len(path) == SIDE:
            return path
        o = by_pc[pc]
        path.append(pc)
        if isa.is_call(o.mnemonic):
            return [*path, "a call"]
        if o.target is not None and o.target <= pc:
            return [*path, "a loop" if o.target in nested else
                    _NEXT if o.target in by_pc else _EXIT]
        if _ends_flow(o):
            if o.target is None:
                return [*path, _EXIT]
            pc = o.target
        else:
            pc += 4


def _stream(o: Op, stride: int | None) -> bool:
    return o.mnemonic in _STREAMS and o.operands[0][:1] in _WORDS and \
        stride not in (None, 0) and not _FRAME.intersection(o.addr)


def _fixed(reg: str, flow: loop_dataflow.LoopValues) -> bool:
    return reg not in flow.written and reg not in _FRAME


def taken_share(finder: _Finder, row: int) -> float | None:
    """The share of a conditional branch's executions that jumped, from the counts: its
    count less the next instruction's when only the fall-through reaches that one (no
    branch targets it), else its target's count when only this branch reaches the target
    (the instruction before the target does not fall into it); None when both are joins."""
    counts, pcs, targets = finder.counts, finder.p.pc, finder.facts.target
    runs = int(counts[row])
    if not runs:
        return None
    pc = int(pcs[row])
    after = row + 1
    if after < len(pcs) and int(pcs[after]) == pc + 4 and \
            not np.count_nonzero(targets == pc + 4):
        return max(runs - int(counts[after]), 0) / runs
    target = int(targets[row])
    at = int(np.searchsorted(pcs, target))
    if at < len(pcs) and int(pcs[at]) == target and \
            np.count_nonzero(targets == target) == 1 and \
            (at == 0 or int(pcs[at - 1]) != target - 4 or _ends_flow(finder.op(at - 1))):
        return min(int(counts[at]), runs) / runs
    return None


def _ends_flow(o: Op) -> bool:
    """Control never falls through ``o`` (``b``, ``br``, ``ret``)."""
    return o.mnemonic == "b" or o.mnemonic in ("br", "braa", "brab") or \
        isa.is_return(o.mnemonic)


def _mechanism(finder: _Finder, loops: list[GatherLoop]) -> Mechanism:
    """Figures and checks of the heaviest loop; a site per loop."""
    loop = max(loops, key=lambda x: finder.share(x.rows))
    p = finder.p
    shares = {r: taken_share(finder, r) for r in loop.branches}
    decided = "; ".join(f"`{p.asm(r)}` at {int(p.pc[r]):#x} (count {finder.count(r):,}"
                        + (f", taken {shares[r]:.0%})" if shares[r] is not None else ")")
                        for r in loop.branches[:4])
    guarding = "; ".join(f"`{p.asm(r)}` at {int(p.pc[r]):#x} ({why})"
                         for r, why in zip(loop.branches, loop.guards, strict=True) if why)
    checks = [
        "index loads (4 or 8 bytes) at an address that moves by a constant each iteration: "
        + _texts(p, loop.streams),
        "key loads from a fixed base indexed by the loaded index: " + _texts(p, loop.gathers),
        f"conditional branches on the loaded key: {decided}",
        "no prfm in the loop",
    ]
    if guarding:
        checks.append("branches that guard a loop, a call or a long path, not a value "
                      f"choice: {guarding}")
    if loop.partition:
        checks.append(PARTITION)
    three, equal = _three_way(finder, loop)
    if three:
        checks.append(THREE_WAY + three)
    scatters = [x for x in loops if x.scatters]
    if scatters:
        checks.append(SCATTERS + "; ".join(
            f"`{p.asm(x.scatters[0])}` at {int(p.pc[x.scatters[0]]):#x} (its loop "
            f"{finder.share(x.rows):.2%} of the run)" for x in scatters))
    if len(loops) > 1:
        checks.append(f"{len(loops)} such loops in the function")
    return finder.mechanism("gather-branch", [
        finder.site(x.rows, max(x.gathers, key=lambda r: (finder.count(r), -r)))
        for x in loops], [
        Metric("keys gathered", sum(x.keys for x in loops), "executions",
               "executions of the key loads indexed by a loaded index"),
        Metric("loop iterations", sum(x.iterations for x in loops), "executions",
               "the loops' head counts"),
        Metric("branches on the key", len(loop.branches), "branches",
               "conditional branches deciding on the gathered key (the heaviest loop)"),
        Metric("value-choice branches", sum(why is None for why in loop.guards), "branches",
               f"branches on the key whose two sides rejoin within {SIDE} instructions "
               "with no call or loop between (the heaviest loop)"),
        *([] if equal is None else [Metric(
            "keys equal", equal, "%", "of the keys its three-way decisions test, those found "
            "equal: the equality branch's equal side over the decisions (the heaviest loop)")]),
    ], checks)


def _three_way(finder: _Finder, loop: GatherLoop) -> tuple[str, float | None]:
    """The loop's three-way decisions, each with the part of its keys found equal (from the
    equality branch's taken share), and that part over all of them (%); "" and None when
    none."""
    p, said, equal, decided = finder.p, [], 0.0, 0
    for d in loop.decisions:
        taken = None if d.equal is None else taken_share(finder, d.equal)
        if d.equal is None or taken is None:
            continue
        runs = finder.count(d.branches[0])
        same = finder.count(d.equal) * (taken if d.equal_taken else 1 - taken)
        equal, decided = equal + same, decided + runs
        said.append(" then ".join(f"`{p.asm(r)}` at {int(p.pc[r]):#x}" for r in d.branches)
                    + f": equal on {same / runs:.0%} of {runs:,}")
    if not said:
        return "", None
    return "; ".join(said) + (f"; equal on {equal / decided:.0%} of all {decided:,}"
                              if len(said) > 1 else ""), round(100 * equal / decided, 1)


def _texts(profile: Profile, rows: tuple[int, ...]) -> str:
    """The distinct instruction texts of ``rows`` (at most three), quoted."""
    return ", ".join(f"`{text}`" for text in list(dict.fromkeys(profile.asm(r) for r in rows))[:3])
