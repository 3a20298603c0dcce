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
the simulator) decides. A branch-free rewrite needs a branch that picks a value, a short
diamond: every path of its two sides that stays in its loop reaches one instruction within
``SIDE`` rows, with no call and no inner loop between; that instruction may be the loop's
head (both sides end the iteration: mainQSort3's `==` swap and its advance) or a row of an
inner cycle (its second scan's swap and skip). A branch one side of which only leaves its
loop is that loop's exit (a scan's order test), not a path to flatten. A branch that guards
a loop or a call (bzip2's generateMTFValues: a counter increment or the whole move-to-front
search), or whose sides stay apart longer, is kept out of that advice.

Two things decide which branch-free form fits. The decision's arity: branches on one key
that lead straight into each other (``sub`` + ``cbz``, then ``b.le``) are one decision, and
one testing the key for equality and for order with three outcomes is three-way, with the
part of keys found equal (the equality branch's taken share); a two-way block partition
(BlockQuicksort, pdqsort) does not fit it as written. And the kind of move: a loop storing an
index at an address that comes from its key (``ptr[copyStart[c]++] = j``) is a bucket
scatter, not a partition: the key names the place, no branch chooses it.

The loop is a natural loop of its function (pcscope.core.natural_loops; a partition's two
scans and its swaps are one loop); a cycle inside it that avoids its head (the second scan)
is read as a loop of its own for the branches' roles and counted in its iterations. It
fires when:
- a *stream* load reads 4 or 8 bytes at an address that moves by a constant each iteration
  (pcscope.core.loop_dataflow strides), not a stack slot;
- a *gather* load has a base the loop does not change and an index that comes from a
  stream load's value;
- a conditional branch of the loop decides on the gathered value;
- the loop has no ``prfm`` (a loop that prefetches already does the cheap half).

The *keys* are the gathers the decisions (and a scatter's store address) read, each taken
at the start of its chain: a gather whose index comes from the index array itself, not
through another gather. A partition's key is what its compares read; a bucket scatter's is
what its bucket is looked up by, its done flag and cursor being loaded through that key.
Those, and gathers nothing decides on, are counted apart as other indexed loads, so the
keys are one per element and per key read.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa, loop_dataflow, natural_loops
from pcscope.core.gather_values import CALL, LONG_PATH, LOOP, GatherValues, Guard
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
LOOPS = "the loops by head (share of the run; head count, keys, other indexed loads): "
SCATTERS = "bucket scatters, not partitions (a store's address comes from the key): "
DIAMONDS = "short diamonds, each only picking a value (both sides rejoin within a few rows): "
EXITS = "loop exits (a side only leaves the loop): "
GUARDS = "branches that guard a loop, a call or a long path, not a value choice: "
INDEXED = "indexed loads that are not keys (read through a key, or not decided on): "


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
class Cycle:
    """A cycle of a loop: the loop's own through its head, or an inner one natural_loops
    keeps in it (a partition's second scan), with the key loads and other indexed loads it
    runs."""

    head: int  # pc of its most executed head
    iterations: int  # that head's count
    keys: int  # executions of the key loads in it
    indexed: int  # executions of its other indexed loads


@dataclass(frozen=True)
class GatherLoop:
    rows: tuple[int, ...]  # the loop's rows (less those another mechanism counts)
    streams: tuple[int, ...]  # rows of the index loads feeding a gather
    gathers: tuple[int, ...]  # rows of the key loads
    indexed: tuple[int, ...]  # rows of the other indexed loads (through a key, or unused)
    branches: tuple[int, ...]  # rows of the conditional branches on the keys
    roles: tuple[Role, ...]  # per branch: a value choice, a loop exit, or what it guards
    moves: bool  # the loop stores index values back (a partition or swap)
    scatters: tuple[int, ...]  # rows of stores whose address comes from a key (a bucket scatter)
    decisions: tuple[Decision, ...]  # the branches on the keys, grouped by decision
    keys: int  # key load executions
    indexed_loads: int  # executions of the other indexed loads
    cycles: tuple[Cycle, ...]  # the loop's own (first), then inner cycles holding key loads

    @property
    def iterations(self) -> int:
        """Passes through the loop's head and through its inner cycles' heads."""
        return sum(c.iterations for c in self.cycles)

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
    for i, found in enumerate(finder.function_loops):
        rows = found.rows
        fn = int(p.function[rows[0]])
        if fn < 0 or finder._libc_names[fn] is not None or finder.share(rows) < MIN_SHARE:
            continue
        nested = frozenset(int(p.pc[r]) for inner in
                           natural_loops.nested_in(finder.function_loops, found)
                           for r in inner.rows)
        loop = gather_loop([finder.op(r) for r in rows], rows, [finder.count(r) for r in rows],
                           nested, finder.loop_entries(i))
        if loop is None or claimed[[*loop.gathers, *loop.indexed, *loop.branches]].any():
            continue
        own = replace(loop, rows=tuple(r for r in loop.rows if not claimed[r]))
        if finder.share(own.rows) >= MIN_SHARE:
            by_fn.setdefault(fn, []).append(own)
    return [_mechanism(finder, loops) for loops in by_fn.values()]


def gather_loop(ops: list[Op], rows: list[int], counts: list[int], nested: frozenset[int],
                entries: frozenset[int] = frozenset()) -> GatherLoop | None:
    """The gather through an index array of one loop (``ops[0]`` its first row; ``nested``
    the pcs of loops nested in it; ``entries`` the pcs control enters it at, ``ops[0]``
    when none is known), or None."""
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
    # what the decisions and the scatter's places read, each chain taken at its start
    consumed = set().union(*(flow.sources[i] for i in branches),
                       *(_sources_of(ops, flow, i, ops[i].addr) for i in scatters))
    keys = {g for g in gathers & consumed if not flow.sources[g] & gathers}
    indexed = gathers - keys
    cycle, heads = natural_loops.inner_cycles(ops, entries or frozenset((ops[0].pc,)))
    return GatherLoop(
        tuple(rows), tuple(rows[i] for i in used), tuple(rows[i] for i in sorted(keys)),
        tuple(rows[i] for i in sorted(indexed)),
        tuple(rows[i] for i in branches), tuple(_roles(ops, branches, nested, cycle, heads)),
        moves, tuple(rows[i] for i in scatters),
        tuple(_decisions(ops, rows, branches)), sum(counts[i] for i in keys),
        sum(counts[i] for i in indexed), _loop_cycles(ops, counts, keys, indexed, cycle, heads))


def _loop_cycles(ops: list[Op], counts: list[int], keys: set[int], indexed: set[int],
                 cycle: list[int], heads: dict[int, frozenset[int]]) -> tuple[Cycle, ...]:
    """The loop's own cycle, then each inner cycle holding indexed loads: its head, the head's
    count (the most executed head of several), its key loads' and its other indexed loads'
    executions."""
    count = {o.pc: counts[i] for i, o in enumerate(ops)}
    out = []
    for c in sorted({-1, *(cycle[i] for i in keys | indexed)}):
        mine = heads[c] or {min(o.pc for i, o in enumerate(ops) if cycle[i] == c)}
        head = max(sorted(mine), key=count.__getitem__)
        out.append(Cycle(head, count[head], sum(counts[i] for i in keys if cycle[i] == c),
                         sum(counts[i] for i in indexed if cycle[i] == c)))
    return tuple(out)


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


@dataclass(frozen=True)
class Role:
    """What a branch on a key does: picks a value (a short diamond: both sides reach
    ``join`` with at most ``rows`` rows on a side and no call or loop between), exits the
    loop (one side only leaves it), or guards "a loop", "a call" or "a long path"."""

    kind: str  # DIAMOND, EXIT, or what the branch guards
    join: int | None = None  # the pc both sides reach, a diamond's
    rows: int = 0  # the longer side's rows before the join
    head: str = ""  # what the join is when it is a head: the loop's or an inner cycle's


DIAMOND = "a short diamond"
EXIT = "exits the loop"


@dataclass(frozen=True)
class _Path:
    pcs: tuple[int, ...]  # the rows run, the loop's (or scan's) head last if reached
    end: str  # EXIT, LOOP, CALL, or "" (reached the head, or SIDE rows run)


def _roles(ops: list[Op], at: list[int], nested: frozenset[int], cycle: list[int],
           heads: dict[int, frozenset[int]]) -> list[Role]:
    """The role of each branch ``ops[i]`` for ``i`` in ``at``. A loop may hold cycles of
    its own that natural_loops keeps in it (a partition's second scan is entered less often
    than the loop head: a ``continue`` into the middle): each row belongs to the cycle it
    runs in (pcscope.core.natural_loops.inner_cycles), and a side entering another cycle
    leaves the branch's loop as surely as a side leaving the function's loop."""
    by_pc = {o.pc: i for i, o in enumerate(ops)}
    return [_role(ops, by_pc, nested, cycle, heads[cycle[i]], i) for i in at]


def _role(ops: list[Op], by_pc: dict[int, int], nested: frozenset[int], cycle: list[int],
          heads: frozenset[int], at: int) -> Role:
    """The role of ``ops[at]`` from the paths of its two sides (pcscope.core.gather_partition
    ._paths): the paths leaving its cycle are another branch's business unless a side has
    nothing else (then this branch is the exit); the first row every other path reaches is
    the diamond's join."""
    branch = ops[at]
    if branch.target is None:
        return Role(LONG_PATH)
    sides = [_paths(ops, by_pc, nested, cycle, heads, at, pc)
             for pc in (branch.pc + 4, branch.target)]
    stay = [[p for p in side if p.end != EXIT] for side in sides]
    if not stay[0] or not stay[1]:
        return Role(EXIT)
    every = [p for side in stay for p in side]
    join = next((pc for pc in every[0].pcs if all(pc in p.pcs for p in every)), None)
    if join is not None:
        return Role(DIAMOND, join, max(p.pcs.index(join) for p in every),
                    "" if join not in heads else "the loop head " if cycle[at] < 0 else
                    "its inner cycle's head ")
    return Role(next((p.end for p in every if p.end), LONG_PATH))


def _paths(ops: list[Op], by_pc: dict[int, int], nested: frozenset[int], cycle: list[int],
           heads: frozenset[int], at: int, start: int) -> list[_Path]:
    """Every path from ``start`` of at most SIDE rows and the row after (a join), both ways
    of each conditional branch, within the cycle of ``ops[at]``: each ends at its cycle's
    head, on a call or a nested loop, where it leaves the cycle (EXIT), or after SIDE + 1
    rows."""
    out: list[_Path] = []
    todo: list[tuple[int, tuple[int, ...]]] = [(start, ())]
    while todo:
        pc, path = todo.pop()
        i = by_pc.get(pc)
        if len(path) > SIDE or pc in path:
            out.append(_Path(path, ""))
        elif pc in nested:
            out.append(_Path(path, LOOP))
        elif i is None or cycle[i] != cycle[at]:
            out.append(_Path(path, EXIT))
        elif pc in heads:
            out.append(_Path((*path, pc), ""))
        elif isa.is_call(ops[i].mnemonic):
            out.append(_Path((*path, pc), CALL))
        else:
            o, here = ops[i], (*path, pc)
            after = () if isa.ends_flow(o.mnemonic) else (pc + 4,)
            nxt = (*after, *(() if o.target is None else (o.target,)))
            if not nxt:
                out.append(_Path(here, EXIT))
            todo.extend((n, here) for n in nxt)
    return out


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
            (at == 0 or int(pcs[at - 1]) != target - 4 or isa.ends_flow(finder.op(at - 1).mnemonic)):
        return min(int(counts[at]), runs) / runs
    return None


def _mechanism(finder: _Finder, loops: list[GatherLoop]) -> Mechanism:
    """Figures and checks of the heaviest loop; a site per loop."""
    loop = max(loops, key=lambda x: finder.share(x.rows))
    p = finder.p
    indexed = sorted({r for x in loops for r in x.indexed})
    shares = {r: taken_share(finder, r) for r in loop.branches}
    decided = "; ".join(f"`{p.asm(r)}` at {int(p.pc[r]):#x} (count {finder.count(r):,}"
                        + (f", taken {shares[r]:.0%})" if shares[r] is not None else ")")
                        for r in loop.branches)
    roles = list(zip(loop.branches, loop.roles, strict=True))
    three, equal, tested = _three_way(finder, loop)
    scatters = [x for x in loops if x.scatters]
    values = GatherValues(
        tuple(_named(p, r) for r, role in roles if role.kind == DIAMOND),
        tuple(_named(p, r) for r, role in roles if role.kind == EXIT),
        tuple(Guard(f"`{p.asm(r)}` at {int(p.pc[r]):#x}", role.kind) for r, role in roles
              if role.kind not in (DIAMOND, EXIT)),
        _texts(p, loop.streams), _texts(p, loop.gathers), decided,
        tuple(f"{_named(p, r)} (rejoining at {role.head}{role.join:#x} within {role.rows})"
              for r, role in roles if role.kind == DIAMOND),
        loop.partition, three,
        "; ".join(f"`{p.asm(x.scatters[0])}` at {int(p.pc[x.scatters[0]]):#x} (its loop "
                  f"{finder.share(x.rows):.2%} of the run)" for x in scatters),
        "; ".join(_loop_said(finder, x) for x in sorted(loops,
                                                        key=lambda x: -finder.share(x.rows))))
    checks = [
        "index loads (4 or 8 bytes) at an address that moves by a constant each iteration: "
        + values.streams,
        "key loads from a fixed base indexed by the loaded index: " + values.gathers,
        *([INDEXED + ", ".join(f"`{p.asm(r)}` at {int(p.pc[r]):#x}" for r in indexed)]
          if indexed else []),
        f"conditional branches on the loaded key: {decided}",
        "no prfm in the loop",
    ]
    if values.rejoining:
        checks.append(DIAMONDS + ", ".join(values.rejoining))
    if values.exits:
        checks.append(EXITS + ", ".join(values.exits))
    if values.guards:
        checks.append(GUARDS + values.guarding())
    if values.partition:
        checks.append(PARTITION)
    if values.three_way:
        checks.append(THREE_WAY + values.three_way)
    if values.scatters:
        checks.append(SCATTERS + values.scatters)
    checks.append(LOOPS + values.loops)
    if len(loops) > 1:
        checks.append(f"{len(loops)} such loops in the function")
    return finder.mechanism("gather-branch", [
        finder.site(x.rows, max(x.gathers, key=lambda r: (finder.count(r), -r)))
        for x in loops], [
        Metric("keys gathered", sum(x.keys for x in loops), "executions",
               "executions of the key loads: indexed by a loaded index, read by a decision "
               "or a scatter's store address"),
        Metric("other indexed loads", sum(x.indexed_loads for x in loops), "executions",
               "executions of the loads indexed by a loaded index or a key that are not keys "
               "(a bucket's flag or cursor read through its key)"),
        Metric("loop iterations", sum(x.iterations for x in loops), "executions",
               "the loops' head counts"),
        Metric("branches on the key", len(loop.branches), "branches",
               "conditional branches deciding on the gathered key (the heaviest loop)"),
        Metric("value-choice branches", sum(r.kind == DIAMOND for r in loop.roles), "branches",
               f"branches on the key whose two sides rejoin within {SIDE} instructions "
               "with no call or loop between (the heaviest loop)"),
        *([] if equal is None else [Metric(
            "keys equal", equal, "%", "of the keys its three-way decisions test, those found "
            "equal: the equality branch's equal side over the decisions (the heaviest loop)"),
            Metric("keys tested three ways", tested, "executions",
                   "the runs of the heaviest loop's three-way decisions"),
            Metric("partition keys", sum(x.keys for x in loops if x.partition), "executions",
                   "the key loads of the loops that partition (not the bucket scatters)")]),
        *([Metric("bucket scatter share", round(100 * sum(finder.share(x.rows)
                                                          for x in scatters), 2), "%",
                  "the bucket scatter loops' part of the run, inside the mechanism's share"),
           Metric("scatter keys", sum(x.keys for x in scatters), "executions",
                  "the bucket scatter loops' key loads: they address loads and stores, no "
                  "branch reads them")]
          if scatters else []),
        *([Metric("inner cycles", inner, "cycles",
                  "cycles nested in the loops, whose heads the loop iterations count too")]
          if (inner := sum(len(x.cycles) - 1 for x in loops)) else []),
    ], checks, values=values)


def _three_way(finder: _Finder, loop: GatherLoop) -> tuple[str, float | None, int]:
    """The loop's three-way decisions, each with the part of its keys found equal (from the
    equality branch's taken share), that part over all of them (%) and their runs; "", None
    and 0 when none."""
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
        return "", None, 0
    return "; ".join(said) + (f"; equal on {equal / decided:.0%} of all {decided:,}"
                              if len(said) > 1 else ""), round(100 * equal / decided, 1), decided


def _loop_said(finder: _Finder, loop: GatherLoop) -> str:
    """A loop by its head: its share, its head's count, keys and other indexed loads, and its
    inner cycles'."""
    own, *inner = loop.cycles
    return (f"{own.head:#x} ({finder.share(loop.rows):.2%}; head {own.iterations:,}, "
            + _loads_said(own) + "".join(f"; inner cycle {c.head:#x}: head {c.iterations:,}, "
                                         + _loads_said(c) for c in inner) + ")")


def _loads_said(cycle: Cycle) -> str:
    """A cycle's keys, and its other indexed loads when it has any."""
    return f"keys {cycle.keys:,}" + (f", other indexed loads {cycle.indexed:,}"
                                     if cycle.indexed else "")


def _named(profile: Profile, row: int) -> str:
    """A branch by its mnemonic and pc (its whole text is in the list of branches)."""
    return f"`{profile.asm(row).split()[0]}` at {int(profile.pc[row]):#x}"


def _texts(profile: Profile, rows: tuple[int, ...]) -> str:
    """The distinct instruction texts of ``rows`` (at most three), quoted."""
    return ", ".join(f"`{text}`" for text in list(dict.fromkeys(profile.asm(r) for r in rows))[:3])
