"""The report's coverage table: the top functions and mechanisms, and for each whether an
idea came of it, or why not — cold (outside the selection, never examined), healthy
figures (examined, nothing costly found) or out of budget (left out by the call bound)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from pcscope.core.engine.ideas import Idea
from pcscope.core.workload import Workload

if TYPE_CHECKING:
    from pcscope.core.engine.orchestrator import RunResult

TOP_FUNCTIONS = 10
TOP_MECHANISMS = 10
IDEA, COLD, HEALTHY, OUT_OF_BUDGET = "idea", "cold", "healthy figures", "out of budget"


@dataclass(frozen=True)
class CoverageRow:
    what: str  # "function" or "mechanism"
    id: str
    name: str
    share: float  # own share of the profile total
    status: str  # IDEA, COLD, HEALTHY or OUT_OF_BUDGET
    ideas: tuple[int, ...]  # ranks (1-based) of the ideas about it

    def to_json(self) -> dict:
        out = asdict(self)
        out["share"] = round(self.share, 6)
        out["ideas"] = list(self.ideas)
        return out


def coverage_rows(result: RunResult, workload: Workload) -> list[CoverageRow]:
    profile = workload.profile
    plan = result.plan
    examined_windows = plan.examined_windows if plan else frozenset(result.selection.windows)
    examined_mechs = plan.examined_mechanisms if plan else frozenset()
    left_windows = {w for c in plan.left_out if c.mechanism is None for w in c.windows} \
        if plan else set()
    left_mechs = {c.id for c in plan.left_out} if plan else set()
    mechanisms = list(workload.mechanisms)
    idea_functions = [_functions(workload, idea) for idea in result.ideas]
    rows = []
    top = sorted((f for f in profile.functions if f.value > 0),
                 key=lambda f: (-f.value, f.first_pc))[:TOP_FUNCTIONS]
    for fn in top:
        ranks = tuple(n for n, found in enumerate(idea_functions, 1) if fn.index in found)
        windows = {int(w) for w in set(profile.window[profile.function_rows(fn.index)].tolist())}
        in_mechs = {m.id for m in mechanisms if fn.name in m.functions}
        examined = bool(windows & examined_windows or in_mechs & examined_mechs)
        left = bool(windows & left_windows or in_mechs & left_mechs)
        rows.append(CoverageRow("function", fn.id, fn.name or fn.id, fn.weight,
                                _status(ranks, examined, left), ranks))
    for m in mechanisms[:TOP_MECHANISMS]:
        pcs = set(m.pcs)
        ranks = tuple(n for n, idea in enumerate(result.ideas, 1)
                      if m.id in idea.mechanisms or pcs & set(idea.pcs))
        rows.append(CoverageRow("mechanism", m.id, f"{m.kind} ({m.category})", m.share,
                                _status(ranks, m.id in examined_mechs, m.id in left_mechs),
                                ranks))
    return rows


def _status(ranks: tuple[int, ...], examined: bool, left_out: bool) -> str:
    if ranks:
        return IDEA
    if examined:
        return HEALTHY
    return OUT_OF_BUDGET if left_out else COLD


def _functions(workload: Workload, idea: Idea) -> set[int]:
    profile = workload.profile
    rows = [r for r in (profile.row_of(pc) for pc in idea.pcs) if r is not None]
    return {int(profile.function[r]) for r in rows}
