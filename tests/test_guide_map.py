"""The category and mechanism-kind table names existing bundled sections for every category
and kind, and the rules catalog cites only what it lists."""

from __future__ import annotations

import pytest

from pcscope.core.backends.rules import CATALOG
from pcscope.core.contract.categories import CATEGORIES
from pcscope.core.guide_map import CATEGORY_SECTIONS, MECHANISM_SECTIONS, sections_for
from pcscope.core.mechanism_finder import KINDS
from pcscope.core.readers.guides import read_guide
from pcscope.samples import guides

# The mechanism kinds the mechanism finder reports (a barrier kind is listed ahead of it).
MECHANISM_KINDS = (*KINDS, "barrier")


@pytest.fixture(scope="module")
def section_ids():
    return {s.id for path in guides() for s in read_guide(path)}


def test_every_category_and_mechanism_kind_has_sections():
    assert set(CATEGORY_SECTIONS) == set(CATEGORIES)
    assert set(MECHANISM_SECTIONS) <= set(MECHANISM_KINDS)  # the rest use their category's
    for entry in [*CATEGORY_SECTIONS.values(), *MECHANISM_SECTIONS.values()]:
        assert len(entry) == len(set(entry)) >= 2


def test_every_listed_section_is_a_current_bundled_section(section_ids):
    listed = {i for entry in [*CATEGORY_SECTIONS.values(), *MECHANISM_SECTIONS.values()]
              for i in entry}
    assert not listed - section_ids          # current IDs, not former ones


@pytest.mark.parametrize("entry", [*CATEGORY_SECTIONS.items(), *MECHANISM_SECTIONS.items()],
                         ids=lambda e: e[0] if isinstance(e, tuple) else "")
def test_entries_start_with_the_explaining_then_the_fixing_section(entry):
    _name, ids = entry              # readers that fetch two sections get one of each guide
    assert ids[0].startswith("guide:uarch/") and ids[1].startswith("guide:swopt/")


def test_a_mechanism_kind_narrows_its_category_and_unknowns_fall_back():
    dispatch = sections_for("indirect-branch", "dispatch")
    assert dispatch[1] == "guide:swopt/branches/interpreter-dispatch"
    assert sections_for("indirect-branch") == CATEGORY_SECTIONS["indirect-branch"]
    assert sections_for("cache-miss", "no-such-kind") == CATEGORY_SECTIONS["cache-miss"]
    assert sections_for("no-such-category") == CATEGORY_SECTIONS["other"]


def test_rules_cite_sections_of_their_own_category_or_mechanism():
    for rule in CATALOG.values():
        assert rule.guides in {CATEGORY_SECTIONS[rule.category], *MECHANISM_SECTIONS.values()}, \
            rule.name
