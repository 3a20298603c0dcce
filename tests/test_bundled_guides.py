"""The bundled guides: every section has a stable ID and is found by a search for its topic."""

from __future__ import annotations

import re

import pytest

from pcscope.core.readers.guides import read_guide
from pcscope.core.readers.profile_csv import read_profile
from pcscope.index.text import TextIndex
from pcscope.samples import guides

TOPIC_WORDS = re.compile(r"[a-z0-9]+")


@pytest.fixture(scope="module")
def sections():
    found = [s for path in guides() for s in read_guide(path)]
    assert {s.doc for s in found} == {"uarch", "swopt"}
    return found


@pytest.fixture(scope="module")
def text(tmp_path_factory, sections):
    folder = tmp_path_factory.mktemp("g")
    (folder / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")
    return TextIndex.build(folder / "text", read_profile(folder / "p.csv"), sections)


def test_ids_are_unique_and_stable(sections):
    ids = [s.id for s in sections]
    assert len(ids) == len(set(ids))
    again = [s.id for path in guides() for s in read_guide(path)]
    assert again == ids
    for s in sections:
        assert re.fullmatch(r"guide:(uarch|swopt)(/[a-z0-9-]+)*", s.id), s.id


def test_every_leaf_section_is_found_by_its_topic(sections, text):
    leaves = [s for s in sections if not any(o.id.startswith(s.id + "/") for o in sections)]
    assert len(leaves) >= 50
    missed = []
    for s in leaves:
        query = " ".join(TOPIC_WORDS.findall(s.heading.lower()))
        ids = [m.id for m in text.search_guides(query, 3)]
        if s.id not in ids:
            missed.append((s.id, query, ids))
    assert not missed, missed
