"""The loops of a profile as an engineer reads them: each back edge's natural loop (the rows
that reach it without passing the head, blocks placed after the back edge included), two heads
of one cycle that the way in can bypass as one loop, a ``continue`` into the middle of a loop
as part of it, and a loop nested in another (its body inside the other's) taken out of the
outer one's rows; and the cycles inside one loop. Only warm loops are read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass

import numpy as np

from pcscope.core import edge_runs, isa
from pcscope.core.patterns import CodeFacts, backward_branches, taken_runs
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

LOOP_MIN_SHARE = 0.001  # a loop below this share of the total is not read
LOOP_MAX_ROWS = 512  # a longer range is a function's outer loop, not one loop
NESTED = 2.0  # head runs per outer head run from which an inner loop is a loop of its own


@dataclass(frozen=True)
class Loop:
    """One warm loop: its head (the row its iterations are counted at), its own rows and its
    whole body (the rows of the loops nested in it included)."""

    head: int
    rows: list[int]  # address order; the rows of the loops nested in it left out
    body: frozenset[int]


def loops(profile: Profile, facts: CodeFacts, regions: np.ndarray | None = None) -> list[Loop]:
    """Each warm loop: the natural loop of every back edge to one head (the rows that reach
    a back edge without passing the head), its own rows being those not in a loop nested in
    it. A back edge whose head does not reach it (a jump back to an exit block) makes no
    loop. A loop whose body lies in another's is nested in it only when every way into it
    that the function's code reaches goes through that one's rows and its head runs at least
    NESTED times as often; else it is the same loop: a jump back into its middle (a
    ``continue``), or a second head of one cycle that the way in can bypass (the loop's head
    is then the busier one, which its iterations pass). A loop stays inside
    one window, or one of ``regions`` (per row, such as the function codes: a loop split over
    two windows is one loop of its function)."""
    win = (profile.window if regions is None else regions).astype(np.int64)
    branches, heads = backward_branches(profile, facts, win)
    prefix = np.concatenate(([0.0], np.cumsum(profile.value, dtype=np.float64)))
    floor = LOOP_MIN_SHARE * profile.total
    keep = (branches - heads < LOOP_MAX_ROWS) & (prefix[branches + 1] - prefix[heads] >= floor)
    by_head: dict[int, list[int]] = defaultdict(list)
    for b, h in zip(branches[keep].tolist(), heads[keep].tolist(), strict=True):
        by_head[h].append(b)
    bodies: dict[int, frozenset[int]] = {}
    flow = _Flow.of(facts)
    for h in sorted(by_head):
        ends = by_head[h]
        if prefix[max(ends) + 1] - prefix[h] < floor:
            continue
        body, cycles = _natural_loop(profile, facts, flow, win, h, ends)
        if cycles:
            bodies[h] = body
    counts = profile.samples
    head_of = {h: h for h in bodies}
    same: set[int] = set()  # loops that are part of another
    for h, body in bodies.items():
        entered = region = None
        for g, other in bodies.items():
            if g == h or not body < other:
                continue
            if region is None or entered is None:  # read once per loop, for all around it
                region = np.flatnonzero(win == win[min(body)])
                entered = _entered_from(profile, facts, win, region, body)
            # a way in passes g's rows by (g's head too): from the region's first row, not
            # only through g (a block of h laid out far away jumps back in from h's rows)
            bypassed = bool(entered - other) and \
                bool(_reached_avoiding(profile, facts, win, region, other) & (entered - other))
            if bypassed or counts[h] < NESTED * counts[g]:
                same.add(h)
            if bypassed and counts[head_of[h]] > counts[head_of[g]]:
                head_of[g] = head_of[h]  # its iterations pass the busier head
    kept = {h: body for h, body in bodies.items() if h not in same}
    out = []
    for h, body in kept.items():
        inner = set().union(*(other for g, other in kept.items() if g != h and other < body))
        rows = sorted((body - inner) | {h})
        if float(profile.value[rows].sum()) >= floor:
            out.append(Loop(head_of[h], rows, body))
    return out


def _reached_avoiding(profile: Profile, facts: CodeFacts, win: np.ndarray, region: np.ndarray,
                      avoid: frozenset[int]) -> set[int]:
    """The rows of a region (its rows ``region``) that control reaches from its first row
    without running a row of ``avoid`` (following fall-through and direct jumps)."""
    first, last = int(region[0]), int(region[-1])
    if first in avoid:
        return set()
    pcs = profile.pc[first:last + 1].astype(np.int64)
    targets = facts.target[first:last + 1]
    to = first + np.searchsorted(pcs, targets)
    reached, stack = {first}, [first]
    while stack:
        r = stack.pop()
        k = r - first
        nxt = []
        t = int(to[k])
        if targets[k] >= 0 and not facts.call[r] and t <= last and pcs[t - first] == targets[k]:
            nxt.append(t)
        if r < last and win[r + 1] == win[r] and _falls_into(profile, facts, r):
            nxt.append(r + 1)
        for n in nxt:
            if n not in reached and n not in avoid:
                reached.add(n)
                stack.append(n)
    return reached


def _entered_from(profile: Profile, facts: CodeFacts, win: np.ndarray, region: np.ndarray,
                  body: frozenset[int]) -> set[int]:
    """The rows of ``body``'s region (its rows ``region``) outside it from which control goes
    into it: a jump to one of its rows, a row of the region falling into one."""
    rows = np.fromiter(sorted(body), dtype=np.int64)
    jumps, falls = _ways_in(profile, facts, region, rows)
    return {*jumps[~facts.call[jumps]].tolist(),
            *(int(r) - 1 for r in falls if win[r - 1] == win[r])}


def _ways_in(profile: Profile, facts: CodeFacts, region: np.ndarray,
             rows: np.ndarray) -> tuple[np.ndarray, list[int]]:
    """How control comes into ``rows`` (ascending) from outside them: the other rows of
    their region (``region``) whose direct branch or call targets one of them, and those of
    them the row before (outside them, of any region) falls into."""
    outside = np.setdiff1d(region, rows)
    jumps = outside[np.isin(facts.target[outside], profile.pc[rows].astype(np.int64))]
    before = rows[rows > 0] - 1
    falls = [int(r) + 1 for r in before[~np.isin(before, rows)]
             if _falls_into(profile, facts, int(r))]
    return jumps, falls


def _falls_into(profile: Profile, facts: CodeFacts, r: int) -> bool:
    """Control goes on from row ``r`` to the next row (it does not end the flow, and the next
    row's pc follows)."""
    return int(profile.pc[r + 1]) == int(profile.pc[r]) + 4 and \
        not isa.ends_flow(facts.names[facts.canon[r]])


@dataclass(frozen=True)
class _Flow:
    """Per row: where control does not go on to the next row (isa.ends_flow), and the jumps
    through a register that are not calls."""

    ends: np.ndarray
    register_jumps: np.ndarray

    @classmethod
    def of(cls, facts: CodeFacts) -> _Flow:
        return cls(facts.flags(isa.ends_flow),
                   facts.flags(lambda m: isa.is_indirect(m) and not isa.is_call(m)))


def _natural_loop(profile: Profile, facts: CodeFacts, flow: _Flow, win: np.ndarray, head: int,
                  ends: list[int]) -> tuple[frozenset[int], bool]:
    """The head and every row of its window (up to LOOP_MAX_ROWS on) that reaches a back
    edge without passing the head, following fall-through and direct jumps: blocks placed
    after the back edge that jump back in are part of the loop; and whether they make a
    cycle through the head: it goes on into them, or to a register jump (``br``: an
    interpreter's dispatch reaches its handlers' jumps back that way)."""
    hi = min(head + LOOP_MAX_ROWS, len(profile) - 1)
    while win[hi] != win[head]:
        hi -= 1
    pcs = profile.pc[head:hi + 1].astype(np.int64)
    targets = facts.target[head:hi + 1]
    to = np.searchsorted(pcs, targets)  # the offset from head of each target
    # the edges, read for all the rows at once: direct jumps (not calls) to a row of the
    # range, and fall-through to the next row
    jumped = (targets >= 0) & ~facts.call[head:hi + 1] & (to < len(pcs))
    jumped[jumped] = pcs[to[jumped]] == targets[jumped]
    falls = np.flatnonzero(~flow.ends[head:hi] & (pcs[1:] == pcs[:-1] + 4))
    sources = np.concatenate((np.flatnonzero(jumped), falls)) + head
    dests = np.concatenate((to[jumped], falls + 1)) + head
    preds: dict[int, list[int]] = defaultdict(list)
    succ: dict[int, list[int]] = defaultdict(list)
    for a, b in zip(sources.tolist(), dests.tolist(), strict=True):
        preds[b].append(a)
        succ[a].append(b)
    # register jumps: where they go is not known
    jumps = set((np.flatnonzero(flow.register_jumps[head:hi + 1]) + head).tolist())
    body = {head}
    stack = [e for e in ends if e != head]
    while stack:
        r = stack.pop()
        if r in body:
            continue
        body.add(r)
        stack.extend(p for p in preds[r] if p not in body)
    reached, stack = {head}, [head]
    while stack:
        for r in succ[stack.pop()]:
            if r not in reached:
                reached.add(r)
                stack.append(r)
    return frozenset(body), head in ends or bool(reached & (body - {head} | jumps))


TIGHT_ROWS = 64  # executed rows of a contiguous loop body read as one tight loop


def tight_loops(profile: Profile, branches: np.ndarray, heads: np.ndarray) -> list[range]:
    """Warm contiguous loops: the rows from a back edge's head to the back edge itself
    (at most TIGHT_ROWS, all of one function), the most-taken back edge first; a range
    overlapping one already kept is left out, so the back edges of one loop give one range
    (an inner cycle of a larger natural loop is its own tight loop here)."""
    floor = LOOP_MIN_SHARE * profile.total
    near = (branches - heads < TIGHT_ROWS) & (profile.function[branches] == profile.function[heads])
    candidates = [(-taken, b - h, h, b) for b, h, taken in zip(
        branches[near].tolist(), heads[near].tolist(),
        taken_runs(profile, branches[near]).tolist(), strict=True)]
    out: list[range] = []
    used: set[int] = set()
    for _, _, h, b in sorted(candidates):
        rows = range(h, b + 1)
        if used.isdisjoint(rows) and float(profile.value[h:b + 1].sum()) >= floor:
            used.update(rows)
            out.append(rows)
    return out


def entries(profile: Profile, facts: CodeFacts, rows: Sequence[int]) -> frozenset[int]:
    """The pcs of a loop's rows (address order) that control reaches from outside them: a
    row the row before falls into from outside, a function's first row, a jump's or call's
    target from another row of the function."""
    fn = int(profile.function[rows[0]])
    jumps, falls = _ways_in(profile, facts, _function_rows(profile, fn),
                            np.asarray(rows, dtype=np.int64))
    jumped = set(facts.target[jumps].tolist())
    inside = set(rows)
    pcs = profile.pc
    # a function's first row too: its callers come in there (the row before is another's)
    return frozenset(int(pcs[r]) for r in rows if int(pcs[r]) in jumped or r - 1 not in inside
                     and (r == 0 or profile.function[r - 1] != fn or r in falls))


def _function_rows(profile: Profile, fn: int) -> np.ndarray:
    """The rows of function code ``fn``, ascending: its group; the rows of no function (-1)
    are in none, so they are found by a scan."""
    return profile.function_rows(fn) if fn >= 0 else np.flatnonzero(profile.function == fn)


def entry_runs(profile: Profile, op: Callable[[int], Op], body: Collection[int]) -> int | None:
    """How often control comes into the rows ``body`` from the other rows of its function,
    read from exact counts (pcscope.core.edge_runs): per row of it entered from outside, the
    runs of the edges coming in from outside; else (their runs left open by the counts) its
    count less the runs of the edges coming from inside, when those are known and no row of
    ``body`` jumps through a register. None when neither is known for some row: a conditional
    branch whose taken runs the counts cannot tell (the rows after it and at its target are
    reached by other paths too, so their counts mix them). Jumps into the function from other
    functions are not read, but for callers at its first row."""
    rows = sorted(body)
    region = _function_rows(profile, int(profile.function[rows[0]])).tolist()
    edges = edge_runs.read(profile, op, region)
    if edges is None:
        return None
    first = region[0]
    total = 0
    for s in rows:
        into = edges.into(s)
        outside = [e for e in into if edges.source[e] not in body]
        if s != first and not outside:
            continue
        runs = [edges.runs[e] for e in outside]
        inside = [edges.runs[e] for e in into if edges.source[e] in body]
        if s != first and None not in runs:
            total += sum(r for r in runs if r is not None)
        elif None not in inside and edges.table_jumps.isdisjoint(body) and \
                int(profile.samples[s]) >= sum(r for r in inside if r is not None):
            total += int(profile.samples[s]) - sum(r for r in inside if r is not None)
        else:
            return None
    return total


def inner_cycles(ops: Sequence[Op], entries: frozenset[int]) -> tuple[list[int],
                                                                    dict[int, frozenset[int]]]:
    """Per row, the cycle it runs in: -1 for the loop's own (through its heads, the rows
    control enters it at: ``entries``), else the id of a cycle that stays clear of them (the
    strongly connected parts of the loop's flow without its back edges); and per cycle its
    heads, the rows entered from outside it. A block placed before the loop's entry that
    jumps into it (a ``continue`` path laid out first) is the loop's own, not a cycle."""
    by_pc = {o.pc: i for i, o in enumerate(ops)}
    succ = [[by_pc[t] for t in (() if isa.ends_flow(o.mnemonic) else (o.pc + 4,)) +
             (() if o.target is None or isa.is_call(o.mnemonic) else (o.target,))
             if t in by_pc and t not in entries] for o in ops]
    comp = _components(succ)
    sizes = np.bincount(np.asarray(comp))
    cycle = [c if sizes[c] > 1 or i in succ[i] else -1 for i, c in enumerate(comp)]
    heads: dict[int, set[int]] = {-1: set(entries)}
    for i, nxt in enumerate(succ):
        for j in nxt:
            if cycle[j] != -1 and cycle[j] != cycle[i]:
                heads.setdefault(cycle[j], set()).add(ops[j].pc)
    return cycle, {c: frozenset(h) for c, h in heads.items()} | {
        c: frozenset() for c in set(cycle) - heads.keys()}


def _components(succ: list[list[int]]) -> list[int]:
    """Tarjan's strongly connected components of the graph ``succ``, iteratively: the
    component id of each node."""
    index: dict[int, int] = {}
    low: dict[int, int] = {}
    comp = [-1] * len(succ)
    stack: list[int] = []
    count = 0
    for root in range(len(succ)):
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, k = work.pop()
            if k == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
            if k < len(succ[v]):
                work.append((v, k + 1))
                w = succ[v][k]
                if w not in index:
                    work.append((w, 0))
                elif comp[w] < 0:
                    low[v] = min(low[v], index[w])
                continue
            if low[v] == index[v]:
                while True:
                    w = stack.pop()
                    comp[w] = count
                    if w == v:
                        break
                count += 1
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[v])
    return comp



def nested_in(loops: list[Loop], outer: Loop) -> list[Loop]:
    """The loops of ``loops`` nested in ``outer``: their body lies in its body."""
    return [loop for loop in loops if loop.body < outer.body]


def loop_at(loops: list[Loop]) -> dict[int, int]:
    """Per row of ``loops``: the position of the loop whose own row it is."""
    return {r: i for i, loop in enumerate(loops) for r in loop.rows}
