"""How often control takes each direct edge of one function, as far as exact execution counts
determine it. A row's runs are the sum of the runs of its edges out (a conditional branch's
jump and fall-through; a call falls through once its callee returns); a row's runs are the
sum of the runs of its edges in too, when nothing else may reach it: not the function's first
row (its callers come in there), and no row of a function that jumps through a register (a
switch's table may reach any row). An equation with one edge's runs unknown gives them, and
so on until none does. The runs of an edge the equations leave open (two branches into the
same two joins) stay unknown: the counts alone cannot tell them."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pcscope.core import isa
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op


@dataclass(frozen=True)
class Edges:
    """The direct edges of one function and their runs."""

    source: tuple[int, ...]  # per edge: the row it leaves
    runs: tuple[int | None, ...]  # None: not known from the counts
    table_jumps: frozenset[int]  # the rows jumping through a register (where to is not known)
    ins: dict[int, list[int]] = field(repr=False, compare=False)  # per row: the edges to it

    def into(self, row: int) -> list[int]:
        """The edges going to ``row``."""
        return self.ins.get(row, [])


def read(profile: Profile, op: Callable[[int], Op], region: Sequence[int]) -> Edges | None:
    """The edges among the rows ``region`` (one function's, address order) and their runs;
    None when the counts contradict the flow (not exact: sampled)."""
    fn = profile.function[region[0]]
    count = profile.samples
    source: list[int] = []
    to: list[int | None] = []
    table_jumps = set()
    for r in region:
        o = op(r)
        if isa.is_indirect(o.mnemonic) and not isa.is_call(o.mnemonic):
            table_jumps.add(r)
        if o.target is not None and not isa.is_call(o.mnemonic):
            t = profile.row_of(o.target)
            source.append(r)
            to.append(t if t is not None and profile.function[t] == fn else None)
        # a next row missing from the profile never ran: that way on has no runs
        if not isa.ends_flow(o.mnemonic) and r + 1 < len(profile) and \
                profile.function[r + 1] == fn and op(r + 1).pc == o.pc + 4:
            source.append(r)
            to.append(r + 1)
    out_of: dict[int, list[int]] = defaultdict(list)
    into: dict[int, list[int]] = defaultdict(list)
    for e, (a, b) in enumerate(zip(source, to, strict=True)):
        out_of[a].append(e)
        if b is not None:
            into[b].append(e)
    equations = [(int(count[r]), edges) for r, edges in out_of.items()]
    if not table_jumps:
        equations += [(int(count[r]), into[r]) for r in region[1:] if into[r]]
    runs = _solve(equations, len(source))
    if runs is None:
        return None
    return Edges(tuple(source), tuple(runs), frozenset(table_jumps), dict(into))


def _solve(equations: list[tuple[int, list[int]]], n: int) -> list[int | None] | None:
    """The runs of ``n`` edges from equations (a total, the edges summing to it), each edge
    given by an equation in which it is the only one unknown; None when one gives fewer than
    no runs."""
    runs: list[int | None] = [None] * n
    of_edge: dict[int, list[int]] = defaultdict(list)
    for i, (_, edges) in enumerate(equations):
        for e in edges:
            of_edge[e].append(i)
    work = list(range(len(equations)))
    while work:
        total, edges = equations[work.pop()]
        unknown = {e for e in edges if runs[e] is None}
        if len(unknown) != 1:
            continue
        rest = total - sum(r for r in (runs[e] for e in edges) if r is not None)
        if rest < 0:
            return None
        (e,) = unknown
        runs[e] = rest
        work.extend(of_edge[e])
    return runs
