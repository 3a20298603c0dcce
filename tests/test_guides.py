"""Guide readers (formats.md §3): section IDs, nesting, code fences, duplicates, .txt, PDF."""

from __future__ import annotations

import gzip
import sys
import types

import pytest

from pcscope.core.errors import InputError
from pcscope.core.readers.guides import read_guide, section_index, slugify

UARCH = """\
Intro paragraph before any heading.

# Branch Prediction

Predictors in general.

## Indirect Branches

BLR targets come from the BTB.

#### A deep note

Still part of indirect branches.

```
# not a heading, inside a fence
## neither is this
```

## Conditional branches

B.cond and CBZ.

### Loops

Loop predictor.

# Memory

Loads and stores.
"""


def write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def by_id(sections):
    return {s.id: s for s in sections}


def test_section_ids_levels_paths_and_lines(tmp_path):
    sections = read_guide(write(tmp_path, "uarch.md", UARCH))
    assert [s.id for s in sections] == [
        "guide:uarch",
        "guide:uarch/branch-prediction",
        "guide:uarch/branch-prediction/indirect-branches",
        "guide:uarch/branch-prediction/conditional-branches",
        "guide:uarch/branch-prediction/conditional-branches/loops",
        "guide:uarch/memory",
    ]
    s = by_id(sections)
    loops = s["guide:uarch/branch-prediction/conditional-branches/loops"]
    assert loops.path == ("Branch Prediction", "Conditional branches", "Loops")
    assert (loops.level, loops.heading, loops.line, loops.doc) == (3, "Loops", 24, "uarch")
    assert loops.text == "Loop predictor."
    assert s["guide:uarch"].level == 0 and s["guide:uarch"].text == (
        "Intro paragraph before any heading.")


def test_parent_text_runs_to_next_heading_of_same_or_higher_level(tmp_path):
    s = by_id(read_guide(write(tmp_path, "uarch.md", UARCH)))
    top = s["guide:uarch/branch-prediction"].text
    assert top.startswith("Predictors in general.")
    assert "## Indirect Branches" in top and "Loop predictor." in top
    assert "Loads and stores." not in top
    cond = s["guide:uarch/branch-prediction/conditional-branches"].text
    assert cond == "B.cond and CBZ.\n\n### Loops\n\nLoop predictor."


def test_deeper_headings_and_fenced_code_stay_in_text(tmp_path):
    s = by_id(read_guide(write(tmp_path, "uarch.md", UARCH)))
    text = s["guide:uarch/branch-prediction/indirect-branches"].text
    assert "#### A deep note" in text
    assert "Still part of indirect branches." in text
    assert "# not a heading, inside a fence" in text
    assert not any("not-a-heading" in i for i in s)


def test_tilde_fence_and_unclosed_fence(tmp_path):
    text = ("# A\n~~~~\n# inside\n~~~\n# still inside (closing fence too short)\n~~~~\n"
            "# B\n```\n# C\n")
    sections = read_guide(write(tmp_path, "g.md", text))
    assert [s.id for s in sections] == ["guide:g/a", "guide:g/b"]
    assert sections[1].text == "```\n# C"


def test_no_preamble_section_when_text_before_first_heading_is_blank(tmp_path):
    sections = read_guide(write(tmp_path, "g.md", "\n  \n# Only\nbody\n"))
    assert [s.id for s in sections] == ["guide:g/only"]
    assert sections[0].line == 3


def test_duplicate_heading_paths_get_stable_suffixes(tmp_path):
    text = ("# Notes\none\n## Details\na\n# Notes\ntwo\n## Details\nb\n## Details\nc\n"
            "# Notes 2\nreal\n")
    ids = [s.id for s in read_guide(write(tmp_path, "g.md", text))]
    assert ids == ["guide:g/notes", "guide:g/notes/details",
                   "guide:g/notes-2", "guide:g/notes-2/details", "guide:g/notes-2/details-2",
                   "guide:g/notes-2-2"]     # a real "Notes 2" after a suffixed one
    assert len(set(ids)) == len(ids)


def test_same_heading_under_different_parents_is_not_a_duplicate(tmp_path):
    text = "# A\n## Tips\nx\n# B\n## Tips\ny\n"
    assert [s.id for s in read_guide(write(tmp_path, "g.md", text))] == [
        "guide:g/a", "guide:g/a/tips", "guide:g/b", "guide:g/b/tips"]


def test_ids_survive_unrelated_text_changes(tmp_path):
    before = read_guide(write(tmp_path, "uarch.md", UARCH))
    edited = UARCH.replace("Predictors in general.", "Predictors in general.\n\nMore text,\n"
                           "several lines.\n").replace("Loads and stores.", "Other words.")
    after = read_guide(write(tmp_path, "uarch.md", edited))
    assert [s.id for s in after] == [s.id for s in before]
    assert by_id(after)["guide:uarch/memory"].text == "Other words."


def test_heading_forms(tmp_path):
    text = ("#Not a heading\n# Closed heading ##\n  ## Indented two\n    # code, not heading\n"
            "##### five\n# C# and `BLR` [link](http://x.y)\n#\n")
    sections = read_guide(write(tmp_path, "g.md", text))
    assert [(s.level, s.heading) for s in sections] == [
        (0, "g"), (1, "Closed heading"), (2, "Indented two"),
        (1, "C# and `BLR` [link](http://x.y)"), (1, "")]
    assert [s.id for s in sections][3:] == ["guide:g/c-and-blr-link", "guide:g/section"]


def test_slugify():
    assert slugify("Indirect Branches") == "indirect-branches"
    assert slugify("  LDAXR/STLXR pairs (LL/SC) ") == "ldaxr-stlxr-pairs-ll-sc"
    assert slugify("memcpy_large: 4.2 GB/s") == "memcpy-large-4-2-gb-s"
    assert slugify("Über-Cache") == "ber-cache"
    assert slugify("日本語") == "section"
    assert slugify("see [the table](#t)") == "see-the-table"
    assert slugify("!!!") == "section"


def test_text_file_blocks(tmp_path):
    text = "Branch hints\nUse likely/unlikely.\nKeep hot paths straight.\n\n\n  \nAtomics\n" \
           "Prefer LSE.\n\nAtomics\nAgain.\n\nTitle only\n"
    sections = read_guide(write(tmp_path, "SW Guide.txt", text))
    assert [(s.id, s.line) for s in sections] == [
        ("guide:sw-guide/branch-hints", 1), ("guide:sw-guide/atomics", 7),
        ("guide:sw-guide/atomics-2", 10), ("guide:sw-guide/title-only", 13)]
    assert sections[0].text == "Use likely/unlikely.\nKeep hot paths straight."
    assert sections[0].path == ("Branch hints",) and sections[0].level == 1
    assert sections[3].text == ""


def test_gzip_guide_doc_name_drops_both_suffixes(tmp_path):
    path = tmp_path / "uarch.md.gz"
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write(UARCH)
    sections = read_guide(path)
    assert sections[1].id == "guide:uarch/branch-prediction"
    assert sections[0].heading == "uarch"


def test_invalid_utf8_is_an_input_error_with_its_line(tmp_path):
    path = tmp_path / "g.md"
    path.write_bytes(b"# A\nfine\nbad \xc3\x28 byte\n")
    with pytest.raises(InputError) as err:
        read_guide(path)
    assert err.value.line == 3


def test_pdf_without_a_reader_says_what_is_needed(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", None)   # import fails as if not installed
    path = tmp_path / "guide.pdf"
    path.write_bytes(b"%PDF-1.4\n")
    with pytest.raises(InputError) as err:
        read_guide(path)
    assert "pypdf" in err.value.what


class _Page:
    def __init__(self, text):
        self.text = text

    def extract_text(self):
        return self.text


class _Entry:
    def __init__(self, title, page):
        self.title, self.page = title, page


def _fake_pypdf(pages, outline):
    class PdfReader:
        def __init__(self, path):
            self.pages = [_Page(t) for t in pages]
            self.outline = outline

        def get_destination_page_number(self, entry):
            return entry.page

    return types.SimpleNamespace(PdfReader=PdfReader)


def test_pdf_sections_follow_the_outline(tmp_path, monkeypatch):
    outline = [_Entry("Branches", 0), [_Entry("Indirect", 1), _Entry("Indirect", 1)],
               _Entry("Memory", 3)]
    pages = ["p1 branches", "p2 indirect", "p3 more", "p4 memory", "p5 end"]
    monkeypatch.setitem(sys.modules, "pypdf", _fake_pypdf(pages, outline))
    path = tmp_path / "SWOG.pdf"
    path.write_bytes(b"%PDF")
    sections = read_guide(path)
    assert [(s.id, s.level, s.line) for s in sections] == [
        ("guide:swog/branches", 1, 1), ("guide:swog/branches/indirect", 2, 2),
        ("guide:swog/branches/indirect-2", 2, 2), ("guide:swog/memory", 1, 4)]
    assert sections[0].text == "p1 branches"
    assert sections[1].text == "p2 indirect\np3 more"      # up to the next entry's page
    assert sections[3].text == "p4 memory\np5 end"
    assert sections[1].path == ("Branches", "Indirect")


def test_pdf_without_outline_is_one_section_per_page(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "pypdf", _fake_pypdf(["one", "two"], []))
    path = tmp_path / "g.pdf"
    path.write_bytes(b"%PDF")
    assert [(s.id, s.text) for s in read_guide(path)] == [
        ("guide:g/page-1", "one"), ("guide:g/page-2", "two")]


RENAMED = """\
# Copy

<!-- former IDs: guide:g/copy/memcpy -->

## memcpy and memmove

<!-- former IDs: guide:g/copy/old-memcpy, guide:g/old/memcpy -->
Copies.

```
<!-- former IDs: guide:g/inside/a/fence -->
```

### Variants

Names.
"""


def test_former_ids_attach_to_their_section_and_leave_its_text(tmp_path):
    sections = by_id(read_guide(write(tmp_path, "g.md", RENAMED)))
    copy = sections["guide:g/copy"]
    memcpy = sections["guide:g/copy/memcpy-and-memmove"]
    assert copy.aliases == ("guide:g/copy/memcpy",)
    assert memcpy.aliases == ("guide:g/copy/old-memcpy", "guide:g/old/memcpy")
    assert sections["guide:g/copy/memcpy-and-memmove/variants"].aliases == ()
    assert copy.text.count("former IDs") == 1      # only the fenced one, which is code
    assert memcpy.text.startswith("Copies.")
    assert "<!-- former IDs: guide:g/inside/a/fence -->" in memcpy.text   # code stays text
    assert (memcpy.line, sections["guide:g/copy/memcpy-and-memmove/variants"].line) == (5, 14)


def test_section_index_answers_to_ids_and_former_ids(tmp_path):
    index = section_index(read_guide(write(tmp_path, "g.md", RENAMED)))
    assert index["guide:g/copy/memcpy"].id == "guide:g/copy"
    assert index["guide:g/old/memcpy"].id == "guide:g/copy/memcpy-and-memmove"
    assert index["guide:g/copy/memcpy-and-memmove"].id == "guide:g/copy/memcpy-and-memmove"
    assert "guide:g/inside/a/fence" not in index


@pytest.mark.parametrize("line, what", [
    ("<!-- former IDs: guide:g/b -->", "also a section's ID"),
    ("<!-- former IDs: guide:other/a -->", "not of this guide"),
    ("<!-- former IDs: guide:g/x, guide:g/x -->", "listed twice"),
])
def test_bad_former_ids_are_input_errors_with_their_line(tmp_path, line, what):
    path = write(tmp_path, "g.md", f"# A\n\n{line}\n\n# B\n")
    with pytest.raises(InputError) as err:
        read_guide(path)
    assert err.value.line == 3 and what in err.value.what


def test_evidence_store_resolves_a_former_id_to_the_renamed_section(tmp_path):
    from pcscope.core.evidence import EvidenceStore
    from pcscope.index.store import open_workload

    (tmp_path / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")
    guide = write(tmp_path, "g.md", RENAMED)
    store = EvidenceStore(open_workload(tmp_path / "p.csv", guides=[guide],
                                       index_dir=tmp_path / "idx"))
    old = store.resolve("guide:g/old/memcpy")
    assert old.id == "guide:g/old/memcpy" and old.text.startswith("Copies.")
    assert old.title == "memcpy and memmove (now guide:g/copy/memcpy-and-memmove)"
    assert store.resolve("guide:g/copy/memcpy-and-memmove").title == "memcpy and memmove"
    assert not store.exists("guide:g/inside/a/fence")
