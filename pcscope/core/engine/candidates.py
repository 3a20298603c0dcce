"""Candidates: what a call may be spent on, ranked, and the first wave's calls they fill.

A candidate is a mechanism (``Workload.mechanisms``) or a selected hot window that holds no
mechanism (unexplained heat still gets a look). It ranks by its cost × the modelled
penalty of its category (penalties.py), where the cost is its own share plus what its ALP
figures add (measured.py: each flagged PC's share × how far past its threshold it is, less
one), so a small window whose barrier waits 150 cycles ranks by what it costs, while a
figure just past its threshold moves little; without ALP the cost is the own share. A
window takes the costliest category its pattern hits or its measured ALP figures show,
else ``unexplained``. The run's call bound (``max_calls``, shared by every
wave and review) fixes how many first-wave calls there are, whatever the profile's size;
candidates that do not fit are left out and reported (the coverage stop). The hottest
candidate of every category present always gets a call, and so does every window or
mechanism an engineer's note names.

A call holds one mechanism and up to two related ones (same kind or category, sharing a
function), or up to ``windows_per_slice`` windows. When forced candidates alone need more
calls than the bound allows, they share the least-filled calls instead. Calls the deeper
waves leave unused (no open question needed them) go to the best candidates left out
(``extend``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pcscope.core.engine.hints import Hint
from pcscope.core.engine.measured import Measured, measured
from pcscope.core.engine.penalties import UNEXPLAINED, penalty
from pcscope.core.engine.presets import Settings
from pcscope.core.ids import win_id
from pcscope.core.mechanisms import Mechanism
from pcscope.core.profile import HotSelection, Profile
from pcscope.core.workload import Workload

MECHANISMS_PER_CALL = 3
LEFT_OUT_LISTED = 20  # left-out candidates named in the report (all are counted)
OUTSIDE_SHARE = 0.01  # own share that makes a mechanism outside the selection a candidate


@dataclass(frozen=True)
class Candidate:
    id: str  # mech:<kind>:0x… or win:0x…
    category: str  # the mechanism's; a window's costliest pattern category, or unexplained
    categories: tuple[str, ...]  # every category it shows (a window can hold several)
    share: float  # own share of the profile total
    penalty: float
    windows: tuple[int, ...]  # the windows holding it, hottest site first
    mechanism: Mechanism | None = None
    measured: float = 0.0  # what its ALP figures add to its share (measured.py)

    @property
    def score(self) -> float:
        return (self.share + self.measured) * self.penalty

    def to_json(self) -> dict:
        return {"id": self.id, "category": self.category, "share": round(self.share, 6),
                "measured": round(self.measured, 6), "penalty": self.penalty}


@dataclass(frozen=True)
class CallGroup:
    number: int
    candidates: tuple[Candidate, ...]

    @property
    def share(self) -> float:
        return sum(c.share for c in self.candidates)


@dataclass(frozen=True)
class Plan:
    calls: tuple[CallGroup, ...]
    left_out: tuple[Candidate, ...]
    candidates: int
    selected_share: float  # the selection's share of the profile total
    examined_share: float  # share of the selected cycles the calls examine
    examined_windows: frozenset[int]  # of window candidates (a mechanism's are its sites)
    examined_mechanisms: frozenset[str]
    small: tuple[Candidate, ...] = ()  # not worth a call (below min_share, nothing measured)
    min_share: float = 0.0

    def to_json(self) -> dict:
        """The report's ``run.coverage`` (what the first wave examined, what it left out)."""
        return {
            "candidates": self.candidates,
            "calls": len(self.calls),
            "selected_share": round(self.selected_share, 6),
            "examined_share": round(self.examined_share, 6),
            "examined_windows": len(self.examined_windows),
            "examined_mechanisms": sorted(self.examined_mechanisms),
            "left_out_count": len(self.left_out),
            "left_out_share": round(sum(c.share for c in self.left_out), 6),
            "left_out": [c.to_json() for c in self.left_out[:LEFT_OUT_LISTED]],
            "small_floor": self.min_share,
            "small_count": len(self.small),
            "small_share": round(sum(c.share for c in self.small), 6),
        }


def first_wave_calls(settings: Settings, reviewed: bool) -> int | None:
    """Calls the first wave may use: the bound less what deeper waves and reviews keep."""
    if settings.max_calls is None:
        return None
    later = (settings.depth - 1) * settings.max_questions + (settings.depth if reviewed else 0)
    return max(1, settings.max_calls - later)


def candidates(workload: Workload, selection: HotSelection) -> list[Candidate]:
    """Every mechanism with a site in the selection or, when the selection is the heaviest
    windows up to a target, an own share of at least OUTSIDE_SHARE (such a selection can stop
    just short of it; an engineer's pick scopes the run), and every selected window holding
    none, best score first."""
    profile = workload.profile
    selected = set(selection.windows)
    shown = measured(workload, selection.windows)
    out = [c for c in (_mechanism(profile, m, shown) for m in workload.mechanisms)
           if selected.intersection(c.windows) or
           (selection.by_weight and c.share >= OUTSIDE_SHARE)]
    claimed = {w for c in out for w in c.windows}
    free = [w for w in selection.windows if w not in claimed]
    found = _window_categories(workload, free)
    for w in free:
        if w in shown.categories:
            found[w] = tuple(dict.fromkeys(found.get(w, ()) + shown.categories[w]))
    # read as arrays: a selection of a large profile holds tens of thousands of windows
    first_pcs = profile.windows.first_pcs()[free].tolist()
    weights = profile.windows.weights()[free].tolist()
    out += [_window(w, win_id(pc), weight, found.get(w, ()), shown.window_cost.get(w, 0.0))
            for w, pc, weight in zip(free, first_pcs, weights, strict=True)]
    return sorted(out, key=lambda c: (-c.score, -c.share, c.id))


def plan(workload: Workload, selection: HotSelection, *, calls: int | None,
         windows_per_call: int, hints: Sequence[Hint] = (), min_share: float = 0.0) -> Plan:
    """Calls on the ranked candidates. One with nothing measured whose own share is below
    ``min_share`` gets none (no idea that small is reported): a flat profile stops when
    nothing above it is left instead of spending its bound, and the report says so; the
    hottest candidate of every category and every one a note names still get theirs."""
    ranked = candidates(workload, selection)
    ranked += _hinted_windows(workload, ranked, hints)
    forced = _forced(ranked, _hinted_ids(workload, ranked, hints))
    small = [c for c in ranked if c.id not in forced and not c.measured
             and c.share < min_share]
    too_small = {c.id for c in small}
    worth = [c for c in ranked if c.id not in too_small]
    order = [c for c in worth if c.id in forced] + [c for c in worth if c.id not in forced]
    groups, left_out = _pack(order, forced, calls, windows_per_call)
    made = [CallGroup(n, tuple(g)) for n, g in enumerate(groups, 1)]
    return _plan_of(workload, selection, made, left_out, len(ranked), tuple(small), min_share)


def extend(workload: Workload, selection: HotSelection, done: Plan, *, calls: int,
           windows_per_call: int) -> tuple[Plan, list[CallGroup]]:
    """Up to ``calls`` more calls on the best candidates ``done`` left out (numbered after
    its calls), and the plan that includes them."""
    groups, left_out = _pack(list(done.left_out), set(), calls, windows_per_call)
    more = [CallGroup(n, tuple(g)) for n, g in enumerate(groups, len(done.calls) + 1)]
    return _plan_of(workload, selection, [*done.calls, *more], left_out,
                    done.candidates, done.small, done.min_share), more


def _plan_of(workload: Workload, selection: HotSelection, groups: list[CallGroup],
             left_out: list[Candidate], count: int, small: tuple[Candidate, ...],
             min_share: float) -> Plan:
    examined = frozenset(w for g in groups for c in g.candidates if c.mechanism is None
                         for w in c.windows)
    mechanisms = [c.mechanism for g in groups for c in g.candidates if c.mechanism is not None]
    selected_share, examined_share = _coverage(profile=workload.profile, selection=selection,
                                               windows=examined, mechanisms=mechanisms)
    return Plan(
        calls=tuple(groups), left_out=tuple(left_out), candidates=count,
        selected_share=selected_share, examined_share=examined_share,
        examined_windows=examined, examined_mechanisms=frozenset(m.id for m in mechanisms),
        small=small, min_share=min_share,
    )


def _mechanism(profile: Profile, m: Mechanism, shown: Measured) -> Candidate:
    sites = sorted(m.sites, key=lambda s: -s.share)
    rows = _rows(profile, [s.pc for s in sites])
    windows = tuple(dict.fromkeys(int(profile.window[r]) for r in rows))
    return Candidate(m.id, m.category, (m.category,), m.share, penalty(m.category).fraction,
                     windows, m, shown.cost_of(m.pcs))


def _window(w: int, wid: str, weight: float, categories: tuple[str, ...],
            cost: float = 0.0) -> Candidate:
    category = max(categories, key=lambda c: penalty(c).fraction) if categories \
        else UNEXPLAINED
    return Candidate(wid, category, categories or (UNEXPLAINED,), weight,
                     penalty(category).fraction, (w,), measured=cost)


def _rows(profile: Profile, pcs: Sequence[int]) -> list[int]:
    rows = (profile.row_of(pc) for pc in pcs)
    return [r for r in rows if r is not None]


def _window_categories(workload: Workload, windows: list[int]) -> dict[int, tuple[str, ...]]:
    """Per window of ``windows``: the pattern categories hitting its counted rows."""
    profile, patterns = workload.profile, workload.patterns
    wanted = np.zeros(len(profile.windows), dtype=bool)
    wanted[windows] = True
    found: dict[int, list[str]] = {}
    for category, hits in patterns.counts().items():
        if not hits:
            continue
        rows = patterns.rows(category)
        hit = np.zeros(len(profile.windows), dtype=bool)
        hit[profile.window[rows[profile.value[rows] > 0]]] = True
        for w in np.flatnonzero(hit & wanted).tolist():
            found.setdefault(w, []).append(category)
    return {w: tuple(c) for w, c in found.items()}


def _hinted_windows(workload: Workload, ranked: list[Candidate],
                    hints: Sequence[Hint]) -> list[Candidate]:
    """Windows only a note names (outside the selection and every mechanism)."""
    held = {w for c in ranked for w in c.windows}
    extra: dict[int, Candidate] = {}
    for hint in hints:
        w = hinted_window(workload, hint)
        if w is not None and w not in held and w not in extra:
            win = workload.profile.windows[w]
            extra[w] = _window(w, win.id, win.weight, ())
    return list(extra.values())


def _hinted_ids(workload: Workload, ranked: list[Candidate],
                hints: Sequence[Hint]) -> set[str]:
    ids = set()
    for hint in hints:
        w = hinted_window(workload, hint)
        ids |= {c.id for c in ranked if w is not None and w in c.windows}
    return ids


def hinted_window(workload: Workload, hint: Hint) -> int | None:
    profile = workload.profile
    pc = hint.pc
    if pc is None and hint.window is not None:
        pc = int(hint.window.removeprefix("win:"), 16)
    row = profile.row_of(pc) if pc is not None else None
    return None if row is None else int(profile.window[row])


def _forced(ranked: list[Candidate], hinted: set[str]) -> set[str]:
    """The hottest candidate of every category present, and every one a note names."""
    forced = set(hinted)
    seen: set[str] = set()
    for c in ranked:  # best first
        for category in c.categories:
            if category not in seen:
                seen.add(category)
                forced.add(c.id)
    return forced


def _pack(order: list[Candidate], forced: set[str], calls: int | None,
          windows_per_call: int) -> tuple[list[list[Candidate]], list[Candidate]]:
    groups: list[list[Candidate]] = []
    left_out: list[Candidate] = []
    open_windows: list[Candidate] | None = None
    for c in order:
        home = _home(groups, c, open_windows, windows_per_call)
        if home is not None:
            home.append(c)
            continue
        if calls is None or len(groups) < calls:
            groups.append([c])
            if c.mechanism is None:
                open_windows = groups[-1]
        elif c.id in forced:
            min(groups, key=len).append(c)
        else:
            left_out.append(c)
    return groups, left_out


def _home(groups: list[list[Candidate]], c: Candidate, open_windows: list[Candidate] | None,
          windows_per_call: int) -> list[Candidate] | None:
    """An existing call ``c`` joins: the open window call, or a related mechanism's."""
    if c.mechanism is None:
        if open_windows is not None and len(open_windows) < windows_per_call:
            return open_windows
        return None
    for group in groups:
        anchor = group[0].mechanism
        if anchor is not None and len(group) < MECHANISMS_PER_CALL and _related(anchor,
                                                                                c.mechanism):
            return group
    return None


def _related(a: Mechanism, b: Mechanism) -> bool:
    same = a.kind == b.kind or a.category == b.category
    return same and bool(set(a.functions) & set(b.functions))


def _coverage(*, profile: Profile, selection: HotSelection, windows: frozenset[int],
              mechanisms: list[Mechanism]) -> tuple[float, float]:
    """(the selection's share of the total, the share of its cycles the calls examine)."""
    if not profile.total or not selection.windows:
        return 0.0, 0.0
    selected = np.zeros(len(profile.windows), dtype=bool)
    selected[selection.windows] = True
    selected_value = int(profile.windows.value[selected].sum())
    examined_win = np.zeros(len(profile.windows), dtype=bool)
    examined_win[list(windows)] = True
    mask = examined_win[profile.window]
    pcs = [pc for m in mechanisms for pc in m.pcs]
    mask[_rows(profile, pcs)] = True
    examined_value = int(profile.value[mask & selected[profile.window]].sum())
    return (selected_value / profile.total,
            examined_value / selected_value if selected_value else 0.0)
