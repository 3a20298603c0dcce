"""Tantivy instruction and guide index: fields, syntax variants, order, reopening."""

import numpy as np
import pytest

from pcscope.core.errors import UsageError
from pcscope.core.readers.guides import GuideSection
from pcscope.core.readers.profile_csv import read_profile
from pcscope.index.instructions import InstructionIndex
from pcscope.index.text import TextIndex, normalize_query

CSV = """\
function,window,pc,samples,asm,module
main,w1,0x1000,100,"LDR X4, [X0]",app
main,w1,0x1004,50,"ldr x17, [x16, #0xe10]",app
main,w1,0x1008,50,"add x16, x16, #0xe10",app
main,w1,0x100c,7,b.cs 0x1000,app
main,w1,0x1010,7,"movz w0, #0x7",app
<unknown_03>,w2,0x2000,300,"ldaxr w5, [x2]",app
<unknown_03>,w2,0x2004,300,"ldr w1, [w16]",app
<unknown_03>,w2,0x2008,5,"cbnz w6, 0x2000",app
puts,w3,0x3000,40,br x17,libc.so.6
,w4,0x4000,0,dmb ish,
"""


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    folder = tmp_path_factory.mktemp("text")
    (folder / "p.csv").write_text(CSV)
    profile = read_profile(folder / "p.csv")
    sections = [
        GuideSection("guide:uarch/branch-prediction", "uarch", "Branch prediction",
                     ("Branch prediction",), 1, "The predictor learns taken branches.", 3),
        GuideSection("guide:uarch/branch-prediction/indirect-branches", "uarch",
                     "Indirect branches", ("Branch prediction", "Indirect branches"), 2,
                     "BR and BLR targets come from the indirect predictor; "
                     "polymorphic call sites mispredict.", 9),
        GuideSection("guide:uarch/caches", "uarch", "Caches", ("Caches",), 1,
                     "L1D is 64 KiB; a miss to L2 costs 11 cycles.", 20),
    ]  # fmt: skip
    return profile, TextIndex.build(folder / "idx", profile, sections)


def pcs(profile, rows):
    return [int(profile.pc[r]) for r in rows]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("ldr", [0x2004, 0x1000, 0x1004]),  # samples desc
        ("ldr x4", [0x1000]),  # upper-case text, terms AND-ed
        ("LDR X17", [0x1004]),
        ("x16", [0x1004, 0x1008]),  # a word: w16 is another word
        ("[x16", [0x2004, 0x1004]),  # memory base x16 (w16 too), not `add x16, x16`
        ("[w16,", [0x2004, 0x1004]),
        ("base:x16", [0x2004, 0x1004]),
        ('"ldr x17"', [0x1004]),  # phrase
        ('"x17 ldr"', []),
        ("0xe10", [0x1004, 0x1008]),
        ("mnemonic:ldaxr", [0x2000]),
        ("mnemonic:LDAXR", [0x2000]),
        ("mnemonic:b.cs", [0x100C]),  # written b.cs, canonical b.hs
        ("mnemonic:b.hs", [0x100C]),
        ("b.hs", [0x100C]),
        ("b.cs", [0x100C]),
        ("mnemonic:mov", [0x1010]),  # movz is mov
        ("function:<unknown_03>", [0x2000, 0x2004, 0x2008]),
        ("function:MAIN ldr", [0x1000, 0x1004]),
        ("fn:puts", [0x3000]),
        ("window:win:0x3000", [0x3000]),
        ("win:0x4000", [0x4000]),
        ("module:libc.so.6", [0x3000]),
        ("samples:>50", [0x2000, 0x2004, 0x1000]),
        ("samples:[40 TO 50]", [0x1004, 0x1008, 0x3000]),
        ("x16 -ldr", [0x1008]),
        ("mnemonic:br OR mnemonic:dmb", [0x3000, 0x4000]),
        ("operands:x17", [0x1004, 0x3000]),
        ("#0xe10]", [0x1004, 0x1008]),
    ],
)
def test_queries(index, query, expected):
    profile, text = index
    rows, total = text.search(query, 10)
    assert pcs(profile, rows) == expected
    assert total == len(expected)


@pytest.mark.parametrize(
    ("condition", "keep"),
    [
        (">50", lambda s: s > 50), (">=50", lambda s: s >= 50), ("<7", lambda s: s < 7),
        ("<=7", lambda s: s <= 7), ("50", lambda s: s == 50), ("6", lambda s: s == 6),
        ("[7 TO 50]", lambda s: 7 <= s <= 50), ("{7 TO 50]", lambda s: 7 < s <= 50),
        ("[7 TO 50}", lambda s: 7 <= s < 50), ("{7 TO 50}", lambda s: 7 < s < 50),
        ("[* TO 7]", lambda s: s <= 7), ("{100 TO *]", lambda s: s > 100),
        ("*", lambda s: True), ("[50 TO 7]", lambda s: False), (">300", lambda s: False),
        (str(1 << 63), lambda s: False),
    ],
)
def test_samples_conditions_are_rank_ranges(index, condition, keep):
    """Samples are no field: each condition is the range of ranks holding those samples."""
    profile, text = index
    order = sorted(range(len(profile)), key=lambda r: (-int(profile.samples[r]), int(profile.pc[r])))
    expected = [r for r in order if keep(int(profile.samples[r]))]
    rows, total = text.search(f"samples:{condition}", 10)
    assert rows.tolist() == expected and total == len(expected)
    ldr = [r for r in order if not keep(int(profile.samples[r])) and "ldr" in profile.asm(r).lower()]
    assert text.search(f"-samples:{condition} ldr", 10)[0].tolist() == ldr


@pytest.mark.parametrize("condition", [">abc", "[10 TO", ">1.5", str(1 << 64), '"5"'])
def test_bad_samples_conditions(index, condition):
    with pytest.raises(UsageError, match="samples takes"):
        index[1].search(f"samples:{condition}", 5)


def test_modules_and_windows_in_several_runs_of_rows(tmp_path):
    """Window and module terms are unions of row ranges: a module met again later in the
    rows, a window cut by another, and rows without a module all answer exactly."""
    (tmp_path / "p.csv").write_text(
        "function,window,pc,samples,asm,module\n"
        "f,w1,0x10,5,nop,Lib.so\n" "f,w1,0x14,6,ldr x0,Lib.so\n" "g,w2,0x18,7,ldr x1,app\n"
        "h,w3,0x1c,8,ldr x2,\n" "f,w1,0x20,9,ldr x3,lib.so\n" "f,w1,0x24,4,add x3,LIB.SO\n"
    )  # fmt: skip
    profile = read_profile(tmp_path / "p.csv")
    text = TextIndex.build(tmp_path / "idx", profile)
    module = [r for r in range(len(profile)) if profile.module[r] >= 0
              and profile.modules[profile.module[r]].lower() == "lib.so"]  # fmt: skip
    assert len(module) == 4

    def rows(query):
        found, total = text.search(query, 10)
        assert total == len(found)
        return sorted(found.tolist())

    assert rows("module:lib.so") == rows('module:"LIB.so"') == module
    assert rows("-module:lib.so ldr") == sorted(
        r for r in range(len(profile)) if r not in module and "ldr" in profile.asm(r))
    assert rows("module:nosuch") == [] and rows("module:app") == rows("fn:g")
    for w, first in enumerate(profile.windows.first_pcs()):
        expected = np.flatnonzero(profile.window == w).tolist()
        assert rows(f"win:{int(first):#x}") == rows(f"window:WIN:{int(first):#X}") == expected
    with pytest.raises(UsageError, match="unterminated"):
        text.search('module:"lib', 5)


def test_limit_keeps_the_heaviest_and_counts_all(index):
    profile, text = index
    rows, total = text.search("ldr", 2)
    assert pcs(profile, rows) == [0x2004, 0x1000] and total == 3
    # ties (50, 50) keep PC order across the cut
    rows, total = text.search("ldr OR add", 3)
    assert pcs(profile, rows) == [0x2004, 0x1000, 0x1004] and total == 4


def test_matching_rows_ascending(index):
    profile, text = index
    assert pcs(profile, text.matching_rows("ldr")) == [0x1000, 0x1004, 0x2004]
    assert len(text.matching_rows("nothinglikethis")) == 0


@pytest.mark.parametrize("query", ["", "   ", "ldr AND", "pc:0x1000", "nosuchfield:x OR ("])
def test_bad_queries(index, query):
    with pytest.raises(UsageError):
        index[1].search(query, 5)


def test_guides(index):
    _, text = index
    hits = text.search_guides("indirect branch mispredict", 5)
    assert hits[0].id == "guide:uarch/branch-prediction/indirect-branches"
    assert hits[0].line == 9 and hits[0].heading == "Indirect branches"
    assert {h.id for h in hits} == {"guide:uarch/branch-prediction",
                                    "guide:uarch/branch-prediction/indirect-branches"}  # fmt: skip
    assert len(text.search_guides("branch", 1)) == 1
    assert text.search_guides("cache miss", 5)[0].id == "guide:uarch/caches"
    assert text.search_guides("   ", 5) == []
    assert isinstance(text.search_guides("[unbalanced (", 5), list)  # lenient: never raises


def test_reopen(index, tmp_path):
    profile, text = index
    again = TextIndex.open(text.directory)
    assert again.rows == len(profile) == 10
    assert pcs(profile, again.search("ldr", 10)[0]) == [0x2004, 0x1000, 0x1004]
    assert again.build_stats.instructions == 10 and again.build_stats.guides == 3
    with pytest.raises(FileNotFoundError):
        TextIndex.open(tmp_path / "missing")


def test_rank_order_is_samples_descending_then_pc(index):
    profile, text = index
    arrays = InstructionIndex.open(text.directory / "instructions")
    expected = sorted(range(10), key=lambda r: (-int(profile.samples[r]), int(profile.pc[r])))
    assert arrays.rank_rows.tolist() == expected
    assert [int(arrays.row_ranks[r]) for r in expected] == list(range(10))
    texts = {profile.asm(r) for r in range(10)}
    assert arrays.texts == len(texts) == 10


def test_empty_guides_and_no_hits(tmp_path):
    (tmp_path / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")
    profile = read_profile(tmp_path / "p.csv")
    text = TextIndex.build(tmp_path / "idx", profile)
    assert text.search_guides("anything", 3) == []
    rows, total = text.search("ldr", 5)
    assert total == 0 and isinstance(rows, np.ndarray) and len(rows) == 0


@pytest.mark.parametrize(
    ("query", "normalized"),
    [
        ("ldr x17", "ldr x17"),
        ("[x16", "base:x16"),
        ("[W3,", "base:x3"),
        ("base:w3", "base:x3"),
        ("function:<unknown_03>", 'function:"<unknown_03>"'),
        ("window:win:0x10", 'window:"win:0x10"'),
        ("win:0x10", 'window:"win:0x10"'),
        ("fn:foo", "function:foo"),
        ("mnemonic:B.CC", "mnemonic:b.lo"),
        ("mnemonic:movz", "mnemonic:mov"),
        ("-b.ne", "-mnemonic:b.ne"),
        ("operands:x1", "asm:x1"),
        ("samples:[1 TO 5]", "samples:[1 TO 5]"),
        ("samples:>10", "samples:>10"),
        ('"ldr x17"', '"ldr x17"'),
        ("#8]!", "#8\\]\\!"),
        ("a OR b", "a OR b"),
    ],
)
def test_normalize_query(query, normalized):
    assert normalize_query(query) == normalized


TEXTS = ["LDR X4, [X0]", "ldr x17, [x16, #0xe10]", "b.eq 0x1000", "movz w0, #0x7",
         "bl 0x10 <Ünïcode_ẞtraße@plt>", "bl 0x20 <ΣΑΣ_ς>", "adr x0, " + "a" * 39 + " x1",
         "adr x0, " + "b" * 40 + " x1", "nop", "#", "ldr   x0 ,x1", "ldr x0 x0 x1 ldr x0",
         "ldr\tx0,\u00a0x1", "add x1, x1, x1"]  # fmt: skip


@pytest.mark.parametrize(
    "query",
    ["ldr", "x0", '"ldr x0"', '"x0 x1"', '"x0 ldr x0"', '"x1 ldr x0"', "ünïcode", "ẞtraße",
     "straße", '"bl 0x20 σας"', "σας_ς", '"adr x0 x1"', "a" * 39, "b" * 40, '"x0 x1 ldr"',
     "asm:[a TO c]", "asm:[b TO c]", '"adr x0 ' + "b" * 40 + ' x1"', "asm:{ldr TO x0]",
     "asm:[x TO *]", "asm:[* TO 0x1}", '"ldr x0 x0 x1 ldr"', "x1 -ldr", "ldr OR nop",
     "e10 OR 0xe10"],
)
def test_texts_match_what_tantivy_matches(tmp_path, query):
    """The asm terms answer as a Tantivy index of the same texts does: tokens (Unicode
    letters, tokens of 40 bytes dropped but counted in phrase positions), phrases,
    term ranges, boolean queries."""
    import tantivy

    from pcscope.index.text import _instruction_schema, _register

    lines = ["pc,samples,asm"] + [f'{0x10 + 4 * i:#x},{i + 1},"{t}"' for i, t in enumerate(TEXTS)]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    profile = read_profile(tmp_path / "p.csv")
    assert [profile.asm(r) for r in range(len(profile))] == TEXTS
    if " " not in query and ":" not in query:
        query = f"asm:{query}"
    ours = TextIndex.build(tmp_path / "idx", profile).matching_rows(query)
    reference = _register(tantivy.Index(_instruction_schema()))
    writer = reference.writer(heap_size=15_000_000, num_threads=1)
    for row, text in enumerate(TEXTS):
        doc = tantivy.Document()
        doc.add_text("asm", text)
        doc.add_unsigned("row", row)
        writer.add_document(doc)
    writer.commit()
    writer.wait_merging_threads()
    reference.reload()
    parsed = reference.parse_query(query, ["asm"], conjunction_by_default=True)
    hits = reference.searcher().search(parsed, 100, order_by_field="row", order=tantivy.Order.Asc).hits
    assert ours.tolist() == sorted(row for row, _ in hits)


@pytest.mark.parametrize("limit", [1, 7, 5000])
def test_terms_within_samples_ranges_by_either_plan(tmp_path, limit):
    """A term within a samples range (a rank range) is answered from the term's texts or by
    scanning the range in rank order, and counted at the nearest block bound plus a scan:
    every plan gives the brute-force answer, with range ends inside blocks and on bounds."""
    rng = np.random.default_rng(5)
    common = ["ldr x0, [x1]", "ldr x2, [x3]", "add x0, x0, #1", "str x4, [sp]"]
    texts = [common[i] if i < 4 else f"ldr x{i % 29}, [x{i % 7}, #{i}]" for i in
             rng.integers(0, 60, 3000).tolist()]  # fmt: skip
    texts[17] = "udiv x0, x1, x2"  # a text of one row
    samples = rng.integers(0, 400, 3000).tolist()
    lines = ["pc,samples,asm"] + [f'{0x1000 + 4 * i:#x},{s},"{t}"'
                                  for i, (s, t) in enumerate(zip(samples, texts, strict=True))]
    (tmp_path / "p.csv").write_text("\n".join(lines) + "\n")
    profile = read_profile(tmp_path / "p.csv")
    text = TextIndex.build(tmp_path / "idx", profile)
    order = sorted(range(3000), key=lambda r: (-samples[r], r))
    for words, has in [("ldr", lambda t: t.startswith("ldr")), ("udiv", lambda t: "udiv" in t),
                       ('"x0 x0"', lambda t: "x0, x0" in t), ("x0 -ldr", lambda t: "x0," in t and not t.startswith("ldr")),
                       ("nosuch", lambda t: False)]:  # fmt: skip
        for low, high in [(0, 399), (1, 5), (100, 101), (37, 250), (0, 0), (399, 399), (250, 5)]:
            rows, total = text.search(f"samples:[{low} TO {high}] {words}", limit)
            expected = [r for r in order if low <= samples[r] <= high and has(texts[r])]
            assert (rows.tolist(), total) == (expected[:limit], len(expected)), (words, low, high)
            assert text.matching_rows(f"samples:[{low} TO {high}] {words}").tolist() == sorted(expected)
