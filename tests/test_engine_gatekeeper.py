"""The gatekeeper: duplicates merge (same category, overlapping PCs or windows), the
strongest evidence leads, ideas rank by weight × confidence, questions deepen once each."""

from __future__ import annotations

import pytest
from engine_helpers import mini_workload

from pcscope.core.contract.findings import Finding
from pcscope.core.engine.gatekeeper import merge, questions
from pcscope.core.engine.ideas import Accepted, windows_of


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


def test_overlapping_windows_merge_but_other_categories_do_not(profile):
    a = accepted(profile, "w1.c1.f1", "dependent-load", [0x1000])
    b = accepted(profile, "w1.c2.f1", "dependent-load", [0x1004])  # same window w1
    c = accepted(profile, "w1.c3.f1", "branch-mispredict", [0x1008])  # same window, other kind
    d = accepted(profile, "w1.c4.f1", "dependent-load", [0x2000])  # other window
    ideas = merge([a, b, c, d], profile)
    groups = sorted(i.merged_from for i in ideas)
    assert groups == [("finding:w1.c1.f1", "finding:w1.c2.f1"), ("finding:w1.c3.f1",),
                      ("finding:w1.c4.f1",)]


def test_merging_is_transitive_and_order_independent(profile):
    a = accepted(profile, "w1.c1.f1", "other", [0x1000])
    b = accepted(profile, "w1.c2.f1", "other", [0x1000, 0x2000])
    c = accepted(profile, "w1.c10.f1", "other", [0x2004, 0x3000])
    first = merge([a, b, c], profile)
    second = merge([c, b, a], profile)
    assert first == second
    assert len(first) == 1
    # finding numbers sort numerically: c2 before c10
    assert first[0].merged_from == ("finding:w1.c1.f1", "finding:w1.c2.f1", "finding:w1.c10.f1")


def test_ideas_rank_by_weight_times_confidence(profile):
    total = profile.total
    hot = accepted(profile, "w1.c1.f1", "other", [0x1000], confidence=0.2)  # window w1
    warm = accepted(profile, "w1.c2.f1", "other", [0x2004], confidence=0.9)  # window w2
    ideas = merge([hot, warm], profile)
    w1 = (820000 + 818000 + 818000) / total
    w2 = (510000 + 509000 + 12000) / total
    assert [i.weight for i in ideas] == pytest.approx([w2, w1])  # 0.9*w2 > 0.2*w1
    assert ideas[0].pc_weight == pytest.approx(509000 / total)
    assert ideas[0].score == pytest.approx(0.9 * w2)


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
