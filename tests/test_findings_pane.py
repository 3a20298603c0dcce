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
