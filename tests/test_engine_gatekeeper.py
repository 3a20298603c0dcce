"""The gatekeeper: duplicates merge (same mechanism; same category and function and code
shape; same category and PC), the strongest evidence leads, ideas rank by own share ×
modelled penalty × confidence, questions deepen once each."""

from __future__ import annotations

import pytest
from engine_helpers import mini_workload

from pcscope.core.contract.findings import Finding
from pcscope.core.engine.gatekeeper import merge, questions
from pcscope.core.engine.ideas import Accepted, windows_of
from pcscope.core.engine.penalties import penalty
from pcscope.core.mechanisms import Mechanism, MechanismTable, Site
from pcscope.index.store import open_workload


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    return mini_workload(tmp_path_factory.mktemp("gate")).profile


def accepted(profile, fid, category, pcs, *, confidence=0.5, basis="profile-only",
             evidence=None, questions=()):
    finding = Finding(title=f"title {fid}", category=category, target="software",
                      claim=f"claim {fid}", recommendation="rec", pcs=[hex(p) for p in pcs],
                      evidence=evidence or [f"pc:{hex(pcs[0])}"], confidence=confidence,
                      basis=basis, questions=list(questions))
    return Accepted(f"finding:{fid}", fid.rsplit(".", 1)[0], 1, "test", finding, tuple(pcs),
                    windows_of(profile, tuple(pcs)))


def test_same_category_and_overlapping_pcs_merge_keeping_the_strongest(profile):
    weak = accepted(profile, "w1.c1.f1", "indirect-branch", [0x2004], confidence=0.3)
    strong = accepted(profile, "w1.c2.f1", "indirect-branch", [0x2004, 0x2000], confidence=0.9,
                      basis="measured", evidence=["pc:0x2004", "alp:0x2004", "note:1"])
    ideas = merge([strong, weak], profile)
    assert len(ideas) == 1
    idea = ideas[0]
    assert idea.merged_from == ("finding:w1.c1.f1", "finding:w1.c2.f1")
    assert idea.claim == "claim w1.c2.f1" and idea.basis == "measured"
    assert idea.confidence == 0.9
    assert set(idea.pcs) == {0x2000, 0x2004}
    # note:/finding:/set: links stay in the record; the idea keeps index evidence
    assert idea.evidence == ("pc:0x2004", "alp:0x2004")
    assert idea.id == "idea:indirect-branch:0x2000"


def _llsc(profile) -> MechanismTable:
    """The exclusive loop at 0x3000-0x300c as one mechanism."""
    pcs = (0x3000, 0x3004, 0x3008, 0x300C)
    share = sum(int(profile.value[profile.row_of(pc)]) for pc in pcs) / profile.total
    site = Site(0x3000, "<unknown_02>", pcs, share)
    return MechanismTable((Mechanism("llsc", "atomic-llsc", 0x3000, (site,), ("<unknown_02>",),
                                     share),))


def test_findings_on_one_mechanism_merge_into_one_idea_of_its_own_share(profile):
    table = _llsc(profile)
    mech = table.mechanisms[0]
    a = accepted(profile, "w1.c1.f1", "atomic-llsc", [0x3000])  # on its site
    b = accepted(profile, "w1.c2.f1", "atomic-llsc", [0x3008], confidence=0.8)  # other PC
    c = accepted(profile, "w1.c3.f1", "barrier", [0x300C],
                 evidence=["pc:0x300c", mech.id])  # cites it: same mechanism
    d = accepted(profile, "w1.c4.f1", "acquire-release", [0x3004])  # other category, no cite
    ideas = merge([a, b, c, d], profile, table)
    groups = sorted(i.merged_from for i in ideas)
    assert groups == [("finding:w1.c1.f1", "finding:w1.c2.f1", "finding:w1.c3.f1"),
                      ("finding:w1.c4.f1",)]
    idea = next(i for i in ideas if len(i.merged_from) == 3)
    assert idea.mechanisms == (mech.id,) and mech.id in idea.evidence
    assert idea.confidence == 0.8 and idea.claim == "claim w1.c2.f1"  # strongest leads
    # own share: every site instruction once, though the findings cite three of four
    assert idea.weight == pytest.approx(mech.share)
    assert idea.pc_weight < idea.weight <= idea.window_weight
    # without the mechanism table the same findings stay apart
    assert len(merge([a, b], profile)) == 2


def test_same_function_category_and_code_shape_merge(tmp_path):
    csv = tmp_path / "twin.csv"
    csv.write_text("function,window,pc,samples,asm\n"
                   "f,w1,0x1000,50,\"ldr x1, [x1]\"\nf,w1,0x1004,50,\"cbnz x1, 0x1000\"\n"
                   "f,w2,0x2000,40,\"ldr x2, [x2]\"\nf,w2,0x2004,40,\"cbnz x2, 0x2000\"\n"
                   "f,w3,0x3000,30,\"ldr x3, [x3, #8]\"\nf,w3,0x3004,30,\"add x3, x3, #1\"\n"
                   "g,w4,0x4000,20,\"ldr x4, [x4]\"\ng,w4,0x4004,20,\"cbnz x4, 0x4000\"\n")
    twin = open_workload(csv, index_dir=tmp_path / "idx").profile
    first = accepted(twin, "w1.c1.f1", "dependent-load", [0x1000, 0x1004])
    second = accepted(twin, "w1.c2.f1", "dependent-load", [0x2000, 0x2004])  # same shape
    other_shape = accepted(twin, "w1.c3.f1", "dependent-load", [0x3000, 0x3004])
    other_function = accepted(twin, "w1.c4.f1", "dependent-load", [0x4000, 0x4004])
    other_category = accepted(twin, "w1.c5.f1", "branch-mispredict", [0x2000, 0x2004])
    ideas = merge([first, second, other_shape, other_function, other_category], twin)
    groups = sorted(i.merged_from for i in ideas)
    assert groups == [("finding:w1.c1.f1", "finding:w1.c2.f1"), ("finding:w1.c3.f1",),
                      ("finding:w1.c4.f1",), ("finding:w1.c5.f1",)]
    merged = next(i for i in ideas if len(i.merged_from) == 2)
    assert merged.weight == pytest.approx(180 / twin.total)  # both loops, once each


def test_merging_is_transitive_and_order_independent(profile):
    a = accepted(profile, "w1.c1.f1", "other", [0x1000])
    b = accepted(profile, "w1.c2.f1", "other", [0x1000, 0x2000])
    c = accepted(profile, "w1.c10.f1", "other", [0x2000, 0x3000])
    first = merge([a, b, c], profile)
    second = merge([c, b, a], profile)
    assert first == second
    assert len(first) == 1
    # finding numbers sort numerically: c2 before c10
    assert first[0].merged_from == ("finding:w1.c1.f1", "finding:w1.c2.f1", "finding:w1.c10.f1")


def test_ideas_rank_by_own_share_times_penalty_times_confidence(profile):
    total = profile.total
    hot = accepted(profile, "w1.c1.f1", "other", [0x1000], confidence=0.2)
    warm = accepted(profile, "w1.c2.f1", "other", [0x2004], confidence=0.9)
    dear = accepted(profile, "w1.c3.f1", "atomic-llsc", [0x3000], confidence=0.9)
    ideas = merge([hot, warm, dear], profile)
    own = {0x1000: 820000 / total, 0x2004: 509000 / total, 0x3000: 122000 / total}
    upside = {0x1000: own[0x1000] * penalty("other").fraction * 0.2,
              0x2004: own[0x2004] * penalty("other").fraction * 0.9,
              0x3000: own[0x3000] * penalty("atomic-llsc").fraction * 0.9}
    assert [i.pcs[0] for i in ideas] == sorted(upside, key=upside.get, reverse=True)
    for idea in ideas:
        pc = idea.pcs[0]
        assert idea.weight == pytest.approx(own[pc]) and idea.pc_weight == idea.weight
        assert idea.score == pytest.approx(upside[pc])
        assert f"own share {own[pc]:.2%}" in idea.upside_how()
    assert ideas[-1].window_weight == pytest.approx((820000 + 818000 + 818000) / total)


def test_advice_that_deletes_instructions_is_sized_by_them_not_by_the_penalty(profile):
    """An idea whose recommendation deletes part of its own share (the flags merged into a
    threaded dispatch) ranks by that part; its upside line names no penalty it ruled out."""
    plain = accepted(profile, "w1.c1.f1", "indirect-branch", [0x2004], confidence=0.5)
    finding = plain.finding.model_copy(update={"removes": 0.6})
    deleting = Accepted("finding:w1.c2.f1", "w1.c2", 1, "test", finding, plain.pcs,
                        plain.windows)
    (idea,) = merge([deleting], profile)
    assert idea.score == pytest.approx(idea.weight * 0.6 * 0.5)
    assert "0.60 (the part of it the recommendation deletes)" in idea.upside_how()
    assert "modelled penalty" not in idea.upside_how()
    (kept,) = merge([plain], profile)
    assert kept.score == pytest.approx(kept.weight * penalty("indirect-branch").fraction * 0.5)
    assert "threaded dispatch" in kept.upside_how()


def test_questions_follow_idea_rank_once_per_text_within_the_limit(profile):
    a = accepted(profile, "w1.c1.f1", "other", [0x1000], confidence=0.1,
                 questions=["Why?", "What feeds it?"])
    b = accepted(profile, "w1.c2.f1", "other", [0x2004], confidence=0.9, questions=["why? "])
    ideas = merge([a, b], profile)
    asked = questions(ideas, [a, b], limit=5)
    assert [(q.text, q.finding.id) for q in asked] == [
        ("why? ", "finding:w1.c2.f1"), ("What feeds it?", "finding:w1.c1.f1")]
    assert len(questions(ideas, [a, b], limit=1)) == 1
    assert questions(ideas, [a], limit=5)[0].finding.id == "finding:w1.c1.f1"


def test_window_share_covers_every_site_of_the_mechanism(tmp_path):
    """An idea citing one of a mechanism's sites is sized by all of them, and so are the
    windows around it: the windows' share is never below the own share."""
    csv = tmp_path / "stubs.csv"
    csv.write_text("function,window,pc,samples,asm\n"
                   "a,w1,0x1000,10,\"br x17\"\na,w1,0x1004,90,\"add x0, x0, #1\"\n"
                   "b,w2,0x2000,500,\"br x17\"\nb,w2,0x2004,5,\"add x1, x1, #1\"\n")
    stubs = open_workload(csv, index_dir=tmp_path / "idx").profile
    sites = tuple(Site(pc, fn, (pc,), int(stubs.value[stubs.row_of(pc)]) / stubs.total)
                  for pc, fn in ((0x1000, "a"), (0x2000, "b")))
    table = MechanismTable((Mechanism("plt", "call-overhead", 0x1000, sites, ("a", "b"),
                                      sum(s.share for s in sites)),))
    finding = accepted(stubs, "w1.c1.f1", "call-overhead", [0x1000],
                       evidence=["pc:0x1000", table.mechanisms[0].id])
    [idea] = merge([finding], stubs, table)
    assert idea.weight == pytest.approx(510 / stubs.total)
    assert idea.window_weight == pytest.approx(1.0)  # both windows, not only w1's 100
    assert idea.pc_weight == pytest.approx(10 / stubs.total)
