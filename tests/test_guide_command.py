"""`pcscope guide`: an engineer reads and searches the guides from the command line."""

from __future__ import annotations

import json

import pytest

from pcscope.cli.cmd_guide import marked
from pcscope.cli.main import main
from pcscope.core.readers.guides import read_guide
from pcscope.index.text import GuideIndex
from pcscope.samples import guides


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["guide", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_section_by_id_and_by_its_former_id(capsys) -> None:
    code, out, _ = run(capsys, "guide:uarch/atomics/lse-atomics")
    assert code == 0
    assert out.splitlines()[1] == "guide:uarch/atomics/lse-atomics"
    assert "What to try" in out
    code, out, _ = run(capsys, "guide:uarch/memory-copy-and-set/memcpy")  # renamed since
    assert code == 0 and "(was guide:uarch/memory-copy-and-set/memcpy)" in out


def test_an_unknown_id_is_one_error_line(capsys) -> None:
    code, out, err = run(capsys, "guide:uarch/nope")
    assert code == 2 and out == ""
    assert err.strip() == "pcscope: error: no guide section guide:uarch/nope (pcscope guide lists them)"


def test_query_ranks_sections_and_marks_the_words(capsys) -> None:
    code, out, _ = run(capsys, "store forwarding", "--limit", "3")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == "3 sections match 'store forwarding':"
    ids = [line.split()[1] for line in lines[1::2]]
    assert "guide:uarch/load-and-store-unit/store-to-load-forwarding" in ids
    assert all("[" in line for line in lines[2::2])  # each fragment shows its matches


def test_json_hits_point_at_the_matched_words(capsys) -> None:
    code, out, _ = run(capsys, '"exclusive monitor"', "--json", "--limit", "2")
    data = json.loads(out)
    assert code == 0 and data["query"] == '"exclusive monitor"' and data["hits"]
    for hit in data["hits"]:
        words = {hit["snippet"][a:b].lower() for a, b in hit["highlights"]}
        assert words <= {"exclusive", "monitor"} and words, hit


def test_spans_count_characters_not_bytes() -> None:
    """A fragment with multi-byte characters (– ×) before the match still marks the word."""
    sections = [s for path in guides() for s in read_guide(path)]
    for m in GuideIndex.build(sections).search("cycles", 20):
        assert all(m.snippet[a:b].lower().startswith("cycle") for a, b in m.highlights), m.id


@pytest.mark.parametrize(("snippet", "spans", "expected"), [
    ("a b c", ((2, 3),), "a [b] c"),
    ("no match", (), "no match"),
    ("x\ny", ((0, 1), (2, 3)), "[x] [y]"),
])
def test_marked(snippet, spans, expected) -> None:
    assert marked(snippet, spans) == expected


def test_listing_every_section(capsys) -> None:
    code, out, _ = run(capsys)
    assert code == 0 and "guide:uarch/atomics/lse-atomics  LSE atomics" in out
