"""The planner: candidates (mechanisms, unexplained hot windows) ranked by own share (plus
what measured ALP figures add) × modelled penalty; the preset's call bound holds for the
whole run whatever the profile's size; the hottest candidate of every category gets a
call; shares add up."""

from __future__ import annotations

import pytest
from engine_helpers import run

from pcscope.core.engine.candidates import candidates, first_wave_calls, plan
from pcscope.core.engine.coverage import coverage_rows
from pcscope.core.engine.penalties import PENALTIES, UNEXPLAINED
from pcscope.core.engine.presets import load_preset
from pcscope.core.mechanisms import Mechanism, MechanismTable, Site
from pcscope.index.store import open_workload

WINDOWS = 6000
BODIES = {  # every 50th window holds one of these; the rest is plain arithmetic
    0: ["ldaxr w1, [x0]", "add w1, w1, #1", "stlxr w2, w1, [x0]", "cbnz w2, {pc0}"],
    1: ["ldr x3, [x1, #8]", "blr x3", "add x0, x0, #1", "ret"],
    2: ["udiv x1, x2, x3", "add x0, x0, x1", "subs x4, x4, #1", "b.ne {pc0}"],
    3: ["dmb ish", "ldr x1, [x0]", "add x1, x1, #1", "str x1, [x0]"],
}
PLAIN = ["add x0, x0, #1", "eor x1, x1, x0", "subs x2, x2, #1", "b.ne {pc0}"]


@pytest.fixture(scope="module")
def big(tmp_path_factory):
    """6,000 windows of 4 instructions with a long-tailed weight (the 90% selection holds
    thousands of windows), and a mechanism on every 7th LL/SC window."""
    folder = tmp_path_factory.mktemp("big")
    lines = ["function,window,pc,samples,asm"]
    for w in range(WINDOWS):
        base = 0x100000 + w * 0x100
        body = BODIES[w // 50 % 4] if w % 50 == 7 else PLAIN
        weight = 1_000_000 // (w + 10) + 5
        for i, asm in enumerate(body):
            text = asm.format(pc0=hex(base))
            lines.append(f'f{w // 3},w{w},{hex(base + 4 * i)},{weight},"{text}"')
    (folder / "big.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    workload = open_workload(folder / "big.csv", index_dir=folder / "idx")
    profile = workload.profile
    mechanisms = []
    for w in range(7, WINDOWS, 50 * 4 * 7):  # LL/SC windows, one in seven
        base = 0x100000 + w * 0x100
        pcs = tuple(base + 4 * i for i in range(4))
        share = sum(int(profile.value[profile.row_of(pc)]) for pc in pcs) / profile.total
        site = Site(base, f"f{w // 3}", pcs, share)
        mechanisms.append(Mechanism("llsc", "atomic-llsc", base, (site,), (f"f{w // 3}",),
                                    share))
    mechanisms.sort(key=lambda m: -m.share)
    workload.mechanism_loader = lambda: MechanismTable(tuple(mechanisms))
    return workload


@pytest.mark.parametrize("preset", ["quick", "standard", "deep"])
def test_the_call_bound_holds_for_the_whole_run_at_every_preset(big, preset, tmp_path):
    settings = load_preset(preset)
    # every candidate worth a call (min_share 0): the long tail exceeds the bound
    result = run(big, "scripted:question", session=tmp_path / "s.sqlite", preset=preset,
                 min_share=0.0,
                 **{k: getattr(settings, k) for k in ("max_calls", "coverage", "depth",
                                                      "max_questions", "windows_per_slice")})
    assert len(result.selection.windows) > 4 * settings.max_calls  # slices would not fit
    assert 0 < len(result.calls) <= settings.max_calls
    assert result.stop_reason == "coverage"  # all it planned ran; the bound left some out
    assert "skipped" not in [r.status for r in result.records]
    plan_ = result.plan
    assert plan_.left_out and 0 < plan_.examined_share < 1
    if settings.depth > 1:
        assert max(c.wave for c in result.calls) > 1  # deeper waves ran inside the bound


def test_the_hottest_candidate_of_every_category_gets_a_call(big):
    selection = big.hot(coverage=0.9)
    ranked = candidates(big, selection)
    made = plan(big, selection, calls=first_wave_calls(load_preset("quick"), False),
                windows_per_call=4)
    planned = {c.id for g in made.calls for c in g.candidates}
    categories = {cat for c in ranked for cat in c.categories}
    assert {"atomic-llsc", "indirect-branch", "division", "barrier", UNEXPLAINED} <= categories
    for category in categories:
        hottest = next(c for c in ranked if category in c.categories)
        assert hottest.id in planned, category
    assert len(made.calls) <= 12
    # ranked by own share × the penalty of the category
    scores = [c.share * PENALTIES[c.category].fraction for c in ranked]
    assert scores == sorted(scores, reverse=True)


def test_shares_add_up(big):
    selection = big.hot(coverage=0.9)
    ranked = candidates(big, selection)
    profile = big.profile
    mechanisms = [c for c in ranked if c.mechanism is not None]
    windows = [c for c in ranked if c.mechanism is None]
    # a mechanism is a candidate when one of its sites is in the selection
    selected = set(selection.windows)
    held = [m for m in big.mechanisms
            if any(int(profile.window[profile.row_of(s.pc)]) in selected for s in m.sites)]
    assert 0 < len(held) < len(big.mechanisms)
    assert [c.id for c in mechanisms] == [m.id for m in held]
    assert all(c.share == m.share for c, m in zip(mechanisms, held, strict=True))
    # a selected window is a candidate of its own unless a mechanism holds it
    claimed = {w for c in mechanisms for w in c.windows if w in set(selection.windows)}
    assert sum(c.share for c in windows) + sum(profile.windows[w].weight for w in claimed) \
        == pytest.approx(selection.coverage)
    # with no bound every selected cycle is examined
    whole = plan(big, selection, calls=None, windows_per_call=4)
    assert not whole.left_out and whole.examined_share == pytest.approx(1.0)
    # under a bound, the examined share is the examined windows' and mechanisms' own
    bounded = plan(big, selection, calls=10, windows_per_call=4)
    seen = sum(profile.windows[w].weight for w in bounded.examined_windows)
    seen += sum(c.share for g in bounded.calls for c in g.candidates if c.mechanism)
    assert bounded.examined_share * bounded.selected_share == pytest.approx(seen)


def test_a_brief_is_anchored_on_its_mechanism(tmp_path):
    from engine_helpers import mini_workload

    from pcscope.core.engine.briefs import brief, pattern_rows
    from pcscope.core.engine.candidates import CallGroup
    from pcscope.core.engine.tools import SharedMemory
    from pcscope.core.evidence import EvidenceStore

    workload = mini_workload(tmp_path)
    profile = workload.profile
    pcs = (0x3000, 0x3004, 0x3008, 0x300C)
    share = sum(int(profile.value[profile.row_of(pc)]) for pc in pcs) / profile.total
    mech = Mechanism("llsc", "atomic-llsc", 0x3000,
                     (Site(0x3000, "<unknown_02>", pcs, share),), ("<unknown_02>",), share,
                     metrics=(), checks=("exclusive pair with a retry branch",))
    workload.mechanism_loader = lambda: MechanismTable((mech,))
    made = plan(workload, workload.hot(coverage=1.0), calls=None, windows_per_call=4)
    group = next(g for g in made.calls if g.candidates[0].id == mech.id)
    assert isinstance(group, CallGroup) and len(group.candidates) == 1
    alp = SharedMemory(EvidenceStore(workload)).alp

    made_brief = brief(workload, group, token_cap=2000, guide_k=2,
                       alp_records=lambda wanted: [alp.record(pc) for pc in wanted],
                       marked=pattern_rows(workload))
    text = made_brief.text()
    assert text.startswith("<evidence>\nmechanism mech:llsc:0x3000: kind llsc")
    assert "checks passed: exclusive pair with a retry branch" in text
    assert "site pc:0x3000 in <unknown_02>" in text
    assert all(f"pc:{hex(pc)}" in text for pc in pcs)  # every site instruction, in order
    assert text.index("pc:0x3000") < text.index("pc:0x3004") < text.index("pc:0x300c")
    # the guide table's sections for LL/SC, not a text search
    assert [g[0] for g in made_brief.guides] == ["guide:uarch/atomics/exclusive-monitor",
                                                 "guide:swopt/synchronization/"
                                                 "atomic-instruction-choice"]
    given = made_brief.given()
    assert mech.id in given and "win:0x3000" in given
    assert made_brief.seed(())["mechanisms"] == [mech.id]
    # the mechanism claims its window: no window candidate for it
    assert "win:0x3000" not in {c.id for g in made.calls for c in g.candidates}


def test_a_site_spanning_windows_gives_the_brief_every_window_it_shows(tmp_path):
    """A JIT region or a long loop spans several windows: a reader of the brief's windows
    (the offline analyst) must see the site's instructions in each, not only the first."""
    from engine_helpers import mini_workload

    from pcscope.core.engine.briefs import brief, pattern_rows

    workload = mini_workload(tmp_path)
    profile = workload.profile
    pcs = (0x1000, 0x1004, 0x2000, 0x2004)  # one site over windows w1 and w2
    share = sum(int(profile.value[profile.row_of(pc)]) for pc in pcs) / profile.total
    mech = Mechanism("jit", "other", 0x2004, (Site(0x2004, "[jit]", pcs, share),),
                     ("[jit]",), share)
    workload.mechanism_loader = lambda: MechanismTable((mech,))
    made = plan(workload, workload.hot(coverage=1.0), calls=None, windows_per_call=4)
    group = next(g for g in made.calls if g.candidates[0].id == mech.id)
    made_brief = brief(workload, group, token_cap=2000, guide_k=2,
                       alp_records=lambda wanted: [None] * len(wanted),
                       marked=pattern_rows(workload))
    assert made_brief.seed(())["windows"] == ["win:0x1000", "win:0x2000"]
    assert {"win:0x1000", "win:0x2000"} <= set(made_brief.given())


@pytest.mark.parametrize(("kind", "variant"), [("B", "default"), ("B", "alt"), ("A", "alt")])
def test_measured_alp_costs_give_unexplained_windows_a_category(tmp_path, kind, variant):
    """Read from every field that carries the cost: the alt variant shows mispredicts per
    iteration, misses at L2/LLC, execute latency instead of the average, no forwarding
    count, far atomics without L1D misses (and the default variant's look-alikes stay
    healthy, checked by the planted benchmarks' precision)."""
    from engine_helpers import generated

    from pcscope.core.alp_columns import AlpRecords
    from pcscope.core.engine.measured import _from_columns, _from_records, measured

    workload, truth = generated(tmp_path, kind, 102, variant)
    records = workload.alp.records
    assert isinstance(records, AlpRecords)
    # the column pass and the record pass agree, PC by PC: how far past each threshold
    pcs, past = _from_columns(records)
    pcs_r, past_r = _from_records(records.values())
    assert (pcs == pcs_r).all()
    for name, ratio in past.items():
        assert ratio == pytest.approx(past_r[name]), name
    selection = workload.hot(coverage=0.9)
    shown = measured(workload, selection.windows)
    found = shown.categories
    profile = workload.profile
    measured = {"branch-mispredict", "cache-miss", "store-forwarding", "tlb-miss",
                "atomic-contention"}
    for planted in truth["planted"]:
        if planted["category"] in measured:
            w = int(profile.window[profile.row_of(int(planted["pc"], 16))])
            assert planted["category"] in found.get(w, ()), planted
            assert shown.window_cost[w] > 0, planted  # each is past its threshold


def test_calls_no_question_needs_go_to_what_the_first_wave_left_out(big, tmp_path):
    settings = load_preset("standard")
    bound = {k: getattr(settings, k) for k in ("max_calls", "coverage", "depth",
                                               "max_questions", "windows_per_slice")}
    result = run(big, "scripted:ok", session=tmp_path / "s.sqlite", min_share=0.0, **bound)
    first = [c for c in result.calls if c.wave == 1]
    more = [c for c in result.calls if c.wave == 2]
    assert len(first) == settings.max_calls - settings.max_questions
    assert len(more) == settings.max_questions and all(c.parent is None for c in more)
    assert len(result.calls) == settings.max_calls and result.stop_reason == "coverage"
    planned = [c.id for g in result.plan.calls for c in g.candidates]
    assert len(planned) == len(set(planned))  # nothing examined twice
    assert not set(planned) & {c.id for c in result.plan.left_out}
    assert [c.id for c in more] == [f"w2.c{n}" for n in range(1, len(more) + 1)]


def test_a_flat_profile_stops_when_nothing_worth_a_call_is_left(big, tmp_path):
    """The long tail below min_share with nothing measured gets no call (review: deep spent
    69 calls on a flat profile for what quick found in 4); the hottest candidate of every
    category still does, and the report counts what was not examined."""
    settings = load_preset("deep")
    selection = big.hot(coverage=settings.coverage)
    ranked = candidates(big, selection)
    made = plan(big, selection, calls=first_wave_calls(settings, False),
                windows_per_call=settings.windows_per_slice, min_share=0.005)
    planned = {c.id for g in made.calls for c in g.candidates}
    assert not made.left_out and made.small
    assert all(c.share < 0.005 and not c.measured for c in made.small)
    assert {c.id for c in ranked if c.share >= 0.005} <= planned
    for category in {cat for c in ranked for cat in c.categories}:
        assert next(c for c in ranked if category in c.categories).id in planned
    assert len(planned) + len(made.small) == len(ranked)
    coverage = made.to_json()
    assert coverage["small_count"] == len(made.small) and coverage["small_floor"] == 0.005
    result = run(big, "scripted:ok", session=tmp_path / "s.sqlite", preset="deep",
                 **{k: getattr(settings, k) for k in ("max_calls", "coverage", "depth",
                                                      "max_questions", "windows_per_slice")})
    assert result.stop_reason == "complete" and len(result.calls) < settings.max_calls // 4
    # a top function whose windows were all too small says so, not "not a candidate"
    statuses = {r.status for r in coverage_rows(result, big)}
    assert "too small to examine (each of its candidates below 0.5%, nothing measured)" \
        in statuses


@pytest.mark.parametrize("cites", [True, False])
def test_a_mechanism_an_idea_names_gets_a_coverage_row(big, cites, monkeypatch):
    """A reference must resolve: a mechanism outside the top ones that an idea's text names
    (no idea about it) is a row of the coverage table; one no idea names is not."""
    from types import SimpleNamespace

    from pcscope.core.engine import coverage

    monkeypatch.setattr(coverage, "TOP_MECHANISMS", 1)
    named = list(big.mechanisms)[-1]
    assert named.id != list(big.mechanisms)[0].id
    idea = SimpleNamespace(claim=f"2 more in `{named.id}`." if cites else "Nothing cited.",
                           recommendation="", mechanisms=(), pcs=())
    result = SimpleNamespace(plan=None, selection=big.hot(coverage=0.9), ideas=[idea])
    ids = [r.id for r in coverage_rows(result, big) if r.what == "mechanism"]
    assert ids == [list(big.mechanisms)[0].id, *([named.id] if cites else [])]
