"""The findings pane groups ideas by mechanism and links mechanism IDs like any evidence."""

from __future__ import annotations

from pcscope.tui.idea_view import ShownIdea
from pcscope.tui.widgets.findings import by_mechanism


def idea(n: int, *mechanisms: str) -> ShownIdea:
    return ShownIdea.from_json({"id": f"idea:other:0x{n:x}", "mechanisms": list(mechanisms),
                                "evidence": [f"pc:0x{n:x}"]})


def test_ideas_of_one_mechanism_follow_the_best_of_them():
    ranked = [idea(1, "mech:llsc:0x10"), idea(2), idea(3, "mech:plt:0x20"),
              idea(4, "mech:llsc:0x10"), idea(5, "mech:plt:0x20", "mech:llsc:0x10")]
    assert [i.id[-3:] for i in by_mechanism(ranked)] == [
        "0x1", "0x4", "0x2", "0x3", "0x5"]


def test_a_mechanism_is_an_evidence_link():
    assert idea(1, "mech:llsc:0x10").evidence_links == ["mech:llsc:0x10", "pc:0x1"]
    assert ShownIdea.from_json({"id": "x", "evidence": ["pc:0x1"]}).evidence_links == ["pc:0x1"]


def test_the_detail_shows_the_checks_beside_the_claim():
    from pcscope.core.triage import Verdict
    from pcscope.tui.widgets.findings import idea_detail

    shown = ShownIdea.from_json({"id": "x", "claim": "A loop.",
                                 "checks": ["no prfm in the loop", "heaviest: a, b"]})
    assert shown.checks == ("no prfm in the loop", "heaviest: a, b")
    text = idea_detail(shown, Verdict()).plain
    assert "Claim A loop.\nChecks passed\n· no prfm in the loop\n· heaviest: a, b\n" \
           "Recommendation" in text
    assert "Checks" not in idea_detail(ShownIdea.from_json({"id": "y"}), Verdict()).plain


def test_the_detail_says_what_the_numbers_are_under_the_claim():
    from pcscope.core.triage import Verdict
    from pcscope.tui.widgets.findings import idea_detail

    shown = ShownIdea.from_json({"id": "x", "claim": "A loop. To confirm, measure misses.",
                                 "numbers": "The counts are exact executions, not time."})
    assert "Claim A loop. To confirm, measure misses.\nNumbers The counts are exact " \
           "executions, not time.\nRecommendation" in idea_detail(shown, Verdict()).plain
    assert "Numbers" not in idea_detail(ShownIdea.from_json({"id": "y"}), Verdict()).plain
