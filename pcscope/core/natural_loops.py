"""The loops of a profile as an engineer reads them: each back edge's natural loop (the rows
that reach it without passing the head, blocks placed after the back edge included), two heads
of one cycle as one loop, a ``continue`` into the middle of a loop as part of it, and a loop
nested in another taken out of the outer one's rows. Only warm loops are read."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from pcscope.core import isa
from pcscope.core.patterns import CodeFacts, backward_branches
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

LOOP_MIN_SHARE = 0.001  # a loop below this share of the total is not read
LOOP_MAX_ROWS = 512  # a longer range is a function's outer loop, not one loop
NESTED = 2.0  # head runs per outer head run from which an inner loop is a loop of its own


def loops(profile: Profile, facts: CodeFacts, regions: np.ndarray | None = None) -> list[list[int]]:
    """Each warm loop's own rows: the natural loop of every back edge to one head (the rows
    that reach a back edge without passing the head), less the rows of loops nested in it.
    A loop inside another whose head runs less than NESTED times as often is not nested but
    a jump back into the middle of the same loop (a ``continue``): its rows stay the outer
    loop's. A loop stays inside one window, or one of ``regions`` (per row, such as the
    function codes: a loop split over two windows is one loop of its function)."""
    win = (profile.window if regions is None else regions).astype(np.int64)
    branches, heads = backward_branches(profile, facts, win)
    prefix = np.concatenate(([0.0], np.cumsum(profile.value, dtype=np.float64)))
    floor = LOOP_MIN_SHARE * profile.total
    keep = (branches - heads < LOOP_MAX_ROWS) & (prefix[branches + 1] - prefix[heads] >= floor)
    by_head: dict[int, list[int]] = defaultdict(list)
    for b, h in zip(branches[keep].tolist(), heads[keep].tolist(), strict=True):
        by_head[h].append(b)
    bodies: dict[int, set[int]] = {}
    seen: set[frozenset[int]] = set()
    for h in sorted(by_head):
        ends = by_head[h]
        if prefix[max(ends) + 1] - prefix[h] < floor:
            continue
        body = _natural_loop(profile, facts, win, h, ends)
        if frozenset(body) not in seen:  # two heads of one cycle: one loop
            seen.add(frozenset(body))
            bodies[h] = body
    counts = profile.samples
    kept = {h: body for h, body in bodies.items()  # a subset entered as often: a re-entry
            if not any(body < other and counts[h] < NESTED * counts[g]
                       for g, other in bodies.items() if g != h)}
    out = []
    for h, body in kept.items():
        inner = set().union(*(other for g, other in kept.items() if g != h and other < body))
        rows = sorted((body - inner) | {h})
        if float(profile.value[rows].sum()) >= floor:
            out.append(rows)
    return out


def _natural_loop(profile: Profile, facts: CodeFacts, win: np.ndarray, head: int,
                  ends: list[int]) -> set[int]:
    """The head and every row of its window (up to LOOP_MAX_ROWS on) that reaches a back
    edge without passing the head, following fall-through and direct jumps: blocks placed
    after the back edge that jump back in are part of the loop."""
    hi = min(head + LOOP_MAX_ROWS, len(profile) - 1)
    while win[hi] != win[head]:
        hi -= 1
    pcs = profile.pc[head:hi + 1].astype(np.int64)
    targets = facts.target[head:hi + 1]
    to = head + np.searchsorted(pcs, targets)
    preds: dict[int, list[int]] = defaultdict(list)
    for k, r in enumerate(range(head, hi + 1)):
        m = facts.names[facts.canon[r]]
        t = int(to[k])
        if targets[k] >= 0 and not facts.call[r] and t <= hi and pcs[t - head] == targets[k]:
            preds[t].append(r)
        if not isa.ends_flow(m) and r < hi and pcs[k + 1] == pcs[k] + 4:
            preds[r + 1].append(r)
    body = {head}
    stack = [e for e in ends if e != head]
    while stack:
        r = stack.pop()
        if r in body:
            continue
        body.add(r)
        stack.extend(p for p in preds[r] if p not in body)
    return body


TIGHT_ROWS = 64  # executed rows of a contiguous loop body read as one tight loop


def tight_loops(profile: Profile, branches: np.ndarray, heads: np.ndarray) -> list[range]:
    """Warm contiguous loops: the rows from a back edge's head to the back edge itself
    (at most TIGHT_ROWS, all of one function), the most-taken back edge first; a range
    overlapping one already kept is left out, so the back edges of one loop give one range
    (an inner cycle of a larger natural loop is its own tight loop here)."""
    counts, pcs = profile.samples, profile.pc
    floor = LOOP_MIN_SHARE * profile.total
    candidates = []
    for b, h in zip(branches.tolist(), heads.tolist(), strict=True):
        if b - h >= TIGHT_ROWS or profile.function[b] != profile.function[h]:
            continue
        after = b + 1
        falls = after < len(profile) and int(pcs[after]) == int(pcs[b]) + 4 and \
            profile.asm(b).split(" ", 1)[0] != "b"  # an unconditional b is always taken
        taken = int(counts[b]) - (int(counts[after]) if falls else 0)
        candidates.append((-taken, b - h, h, b))
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
    row the row before falls into from outside, a function's first row, a jump's target
    from another row of the function."""
    inside = set(rows)
    fn = profile.function[rows[0]]
    outside = np.setdiff1d(np.flatnonzero(profile.function == fn), rows)
    jumped = set(facts.target[outside].tolist())
    pcs = profile.pc
    return frozenset(int(pcs[r]) for r in rows if int(pcs[r]) in jumped or r - 1 not in inside
                     and (r == 0 or profile.function[r - 1] != fn or
                          int(pcs[r - 1]) == int(pcs[r]) - 4 and
                          not isa.ends_flow(facts.names[facts.canon[r - 1]])))


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



def nested_in(loops: list[list[int]], outer: list[int]) -> list[list[int]]:
    """The loops of ``loops`` (each its own rows, head first, as ``loops`` makes them)
    nested in ``outer``: their head lies between ``outer``'s head and its last row, and is
    not one of its own rows."""
    own = set(outer)
    return [rows for rows in loops
            if outer[0] < rows[0] < outer[-1] and rows[0] not in own]


def loop_at(loops: list[list[int]]) -> dict[int, int]:
    """Per row of ``loops``: the position of the loop whose own row it is."""
    return {r: i for i, rows in enumerate(loops) for r in rows}
