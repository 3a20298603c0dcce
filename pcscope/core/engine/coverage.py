"""The report's coverage table: the top functions and mechanisms, and for each whether an
idea came of it, or why not:

- healthy figures: examined, and the simulator's figures at its PCs show nothing costly;
- no rule matched: examined, but nothing was measured there (no ALP) and no code-shape
  rule fired — not a verdict of health;
- out of budget: a candidate the call bound left out;
- too small to examine: its candidates were each below the share worth a call, with nothing
  measured (the preset's ``min_share``);
- not a candidate: hot, but with no pattern, mechanism or measured cost to examine;
- outside the hot selection (cold).

Besides the top mechanisms, every mechanism an idea's text names (a per-operation tree names
where a member's other rows are counted) gets a row, so each reference resolves to an idea
or to this table.

A top function without an idea also says what its code is (pcscope.core.code_character:
crypto extensions in use, already vectorised, scalar FP, or scalar integer code and the
measurement that would decide), so the biggest hot code never goes unexplained.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING

from pcscope.core import code_character, function_counts
from pcscope.core.engine.ideas import Idea
from pcscope.core.workload import Workload

if TYPE_CHECKING:
    from pcscope.core.engine.orchestrator import RunResult

TOP_FUNCTIONS = 10
TOP_MECHANISMS = 10
IDEA, COLD, HEALTHY, OUT_OF_BUDGET = "idea", "outside the hot selection", "healthy figures", "out of budget"
NO_RULE = "no rule matched (nothing measured)"
NOT_CANDIDATE = "not a candidate (no pattern, mechanism or measured cost)"
SMALL = "too small to examine (each of its candidates below {floor:.1%}, nothing measured)"
MECHANISM_ID = re.compile(r"mech:[a-z-]+:0x[0-9a-f]+")


@dataclass(frozen=True)
class CoverageRow:
    what: str  # "function" or "mechanism"
    id: str
    name: str
    share: float  # own share of the profile total
    status: str  # IDEA, HEALTHY, NO_RULE, OUT_OF_BUDGET, NOT_CANDIDATE or COLD
    ideas: tuple[int, ...]  # ranks (1-based) of the ideas about it
    code: str = ""  # what a function without an idea is, from its instructions
    decides: str = ""  # the measurement that decides, when nothing specific is known

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
    small_windows = {w for c in plan.small if c.mechanism is None for w in c.windows} \
        if plan else set()
    small_mechs = {c.id for c in plan.small} if plan else set()
    mechanisms = list(workload.mechanisms)
    selected = frozenset(result.selection.windows)
    alp = workload.alp
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
        small = plan.min_share if plan and (windows & small_windows or
                                            in_mechs & small_mechs) else None
        fn_rows = profile.function_rows(fn.index)
        measured = _measured(alp, profile.pc[fn_rows])
        code = code_character.Character("") if ranks else code_character.describe(
            (profile.asm(r), float(profile.value[r])) for r in fn_rows.tolist())
        rows.append(CoverageRow("function", fn.id, fn.name or fn.id, fn.weight,
                                _status(ranks, examined, left, measured,
                                        bool(windows & selected), small), ranks,
                                _what(code, profile, fn_rows), code.decides))
    heaviest = mechanisms[:TOP_MECHANISMS]
    listed = {m.id for m in heaviest} | {mid for idea in result.ideas for mid in idea.mechanisms}
    # a mechanism an idea's text names must be found in the report: its idea, or a row here
    named = dict.fromkeys(mid for idea in result.ideas
                          for mid in MECHANISM_ID.findall(f"{idea.claim} {idea.recommendation}")
                          if mid not in listed)
    cited = [m for m in map(workload.mechanisms.get, named) if m is not None]
    for m in [*heaviest, *cited]:
        pcs = set(m.pcs)
        ranks = tuple(n for n, idea in enumerate(result.ideas, 1)
                      if m.id in idea.mechanisms or pcs & set(idea.pcs))
        sites = {int(profile.window[r]) for r in
                 (profile.row_of(pc) for pc in m.pcs) if r is not None}
        rows.append(CoverageRow("mechanism", m.id, f"{m.kind} ({m.category})", m.share,
                                _status(ranks, m.id in examined_mechs, m.id in left_mechs,
                                        _measured(alp, m.pcs), bool(sites & selected),
                                        plan.min_share if plan is not None and
                                        m.id in small_mechs else None),
                                ranks))
    return rows


def _what(code: code_character.Character, profile, rows) -> str:
    """What the code is; with exact counts, where no rule applies, what the counts show
    instead of saying so (entries, instructions per entry, the heaviest loop's trips)."""
    if not code.what.endswith(code_character.NO_RULE) or profile.basis != "executions":
        return code.what
    counts = function_counts.of(profile, rows)
    if counts is None:
        return code.what
    return f"{code.what.removesuffix(code_character.NO_RULE)}; {counts.text()}"


def _status(ranks: tuple[int, ...], examined: bool, left_out: bool, measured: bool,
            selected: bool, small: float | None = None) -> str:
    if ranks:
        return IDEA
    if examined:
        return HEALTHY if measured else NO_RULE
    if left_out:
        return OUT_OF_BUDGET
    if small is not None:
        return SMALL.format(floor=small)
    return NOT_CANDIDATE if selected else COLD


def _measured(alp, pcs) -> bool:
    """Whether the simulator measured any of these PCs (only then can figures be healthy)."""
    return alp is not None and any(alp.get(int(pc)) is not None for pc in pcs)


def _functions(workload: Workload, idea: Idea) -> set[int]:
    """The functions an idea is about: those of its PCs and of its mechanisms' sites (one
    idea may cover a loop compiled into several functions)."""
    profile = workload.profile
    sites = [pc for mid in idea.mechanisms if (m := workload.mechanisms.get(mid)) is not None
             for pc in m.pcs]
    rows = [r for r in (profile.row_of(pc) for pc in (*idea.pcs, *sites)) if r is not None]
    return {int(profile.function[r]) for r in rows}
