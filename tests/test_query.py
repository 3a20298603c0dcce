"""Search primitives: hand-computed results, bounds and truncation, regex safety, CLI JSON."""

import json

import pytest

from pcscope.core.asmtext import by_first_row, distinct_rows
from pcscope.core.errors import UsageError
from pcscope.core.patterns import find_patterns
from pcscope.core.readers.profile_csv import read_profile
from pcscope.index.query import MAX_LIMIT, QueryEngine
from pcscope.index.text import TextIndex

# Total samples: 1000.
CSV = """\
function,window,pc,samples,asm,module
main,w1,0x1000,100,"ldr x0, [x1]",app
main,w1,0x1004,50,"ldr x2, [x0, #8]",app
main,w1,0x1008,50,"add x3, x3, #1",app
main,w1,0x100c,10,b.ne 0x1000,app
<unknown_01>,w2,0x2000,300,"LDAXR W5, [X2]",app
<unknown_01>,w2,0x2004,300,"stlxr w6, w5, [x2]",app
<unknown_01>,w2,0x2008,5,"cbnz w6, 0x2000",app
puts,w3,0x3000,40,"adrp x16, #0x20000",libc.so.6
puts,w3,0x3004,40,"ldr x17, [x16, #0xe10]",libc.so.6
puts,w3,0x3008,40,"add x16, x16, #0xe10",libc.so.6
puts,w3,0x300c,40,br x17,libc.so.6
,w4,0x4000,25,"udiv w0, w1, w2",
,w4,0x4004,0,dmb ish,
"""


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    folder = tmp_path_factory.mktemp("query")
    (folder / "p.csv").write_text(CSV)
    profile = read_profile(folder / "p.csv")
    return QueryEngine(profile, find_patterns(profile),
                       lambda: TextIndex.build(folder / "text", profile))  # fmt: skip


def pcs(result):
    return [h.pc for h in result.hits]


def test_search_hits_and_fields(engine):
    result = engine.search("ldr", 10)
    assert pcs(result) == ["0x1000", "0x1004", "0x3004"]
    assert (result.total, result.truncated) == (3, False)
    hit = engine.search("mnemonic:ldaxr", 5).hits[0].model_dump()
    assert hit == {"id": "pc:0x2000", "pc": "0x2000", "asm": "LDAXR W5, [X2]",
                   "function": "<unknown_01>", "window": "win:0x2000", "samples": 300,
                   "share": 0.3, "module": "app"}  # fmt: skip
    none = engine.search("udiv", 5).hits[0]
    assert (none.function, none.module, none.window) == (None, None, "win:0x4000")


def test_search_limit_and_truncation(engine):
    result = engine.search("x16", 2)
    assert pcs(result) == ["0x3000", "0x3004"]  # 40 each: lower PC first
    assert (result.total, result.truncated) == (3, True)
    for bad in (0, MAX_LIMIT + 1):
        with pytest.raises(UsageError):
            engine.search("ldr", bad)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("fn:0x2000", ["0x2000", "0x2004", "0x2008"]),  # hidden function by its ID
        ("fn:puts br", ["0x300c"]),
        ("window:w3 add", ["0x3008"]),  # a window label
        ("win:0x4000", ["0x4000", "0x4004"]),
        ("-window:w1 ldr", ["0x3004"]),
        ("module:libc.so.6 x17", ["0x3004", "0x300c"]),
        ("samples:>100", ["0x2000", "0x2004"]),
        ("[x16", ["0x3004"]),
    ],
)
def test_search_ids_and_labels(engine, query, expected):
    assert pcs(engine.search(query, 10)) == expected


@pytest.mark.parametrize(
    ("pattern", "field", "expected", "total"),
    [
        (r"ldr x1[67], \[x16", "asm", ["0x3004"], 1),
        ("LDAXR", "asm", ["0x2000"], 1),  # case-insensitive both ways
        ("ldaxr w5", "asm", ["0x2000"], 1),
        (r"x(1[67])\b", "asm", ["0x3000", "0x3004"], 4),  # limit 2
        (r"^b\.", "mnemonic", ["0x100c"], 1),
        ("^st", "mnemonic", ["0x2004"], 1),
        ("div$", "mnemonic", ["0x4000"], 1),
        ("^mov$", "mnemonic", [], 0),
        (r"#0x[0-9a-f]+\]$", "asm", ["0x3004"], 1),
        (r"\W\Wx1", "asm", ["0x1000", "0x3004"], 3),  # \W: not ASCII-mode compatible
    ],
)
def test_regex(engine, pattern, field, expected, total):
    result = engine.regex(pattern, field, 2)
    assert pcs(result) == expected
    assert (result.total, result.truncated) == (total, total > len(expected))
    assert (result.kind, result.field, result.query) == ("regex", field, pattern)


def test_distinct_rows_number_texts_by_first_row():
    import polars as pl

    rows = pl.Series(["ldr x0", "add", "ldr x0", "nop", "add", None, ""])
    first, codes = distinct_rows(rows)
    assert first.tolist() == [0, 1, 3, 5] and codes.tolist() == [0, 1, 0, 2, 1, 3, 3]
    first, codes = distinct_rows(rows.clear())
    assert len(first) == len(codes) == 0


def test_by_first_row_renumbers_and_drops_unused_codes():
    import numpy as np

    first, codes = by_first_row(np.array([4, 2, 4, 0, 2], dtype=np.uint32))  # 1, 3 unused
    assert first.tolist() == [0, 1, 3] and codes.tolist() == [0, 1, 0, 2, 1]
    assert codes.dtype == np.int32


def test_regex_mnemonic_matches_canonical_spelling(tmp_path):
    (tmp_path / "p.csv").write_text('pc,samples,asm\n0x10,5,b.cs 0x10\n0x14,3,"movz w0, #1"\n')
    engine = QueryEngine(read_profile(tmp_path / "p.csv"))
    assert pcs(engine.regex(r"^b\.hs$", "mnemonic")) == ["0x10"]
    assert pcs(engine.regex(r"^b\.cs$", "mnemonic")) == ["0x10"]
    assert pcs(engine.regex(r"^mov$", "mnemonic")) == ["0x14"]


@pytest.mark.parametrize(
    "pattern",
    ["(", r"(a)\1", "(?=x)", "a" * 300, r"\w{1000}", "(?:a{50}){101}", ""],
)
def test_regex_rejected(engine, pattern):
    with pytest.raises(UsageError):
        engine.regex(pattern, "asm")


def test_regex_without_backtracking(tmp_path):
    """A catastrophic pattern for a backtracking engine answers at once (linear engine)."""
    (tmp_path / "p.csv").write_text(f"pc,samples,asm\n0x10,1,{'a' * 40}!\n0x14,2,aaa\n")
    engine = QueryEngine(read_profile(tmp_path / "p.csv"))
    assert pcs(engine.regex("^(a+)+$", "asm")) == ["0x14"]


def test_regex_bad_field(engine):
    with pytest.raises(UsageError):
        engine.regex("x", "function")


def test_group_mnemonic(engine):
    result = engine.group("mnemonic", None, 3)
    assert [(g.key, g.count, g.samples, g.share) for g in result.groups] == [
        ("ldaxr", 1, 300, 0.3), ("stlxr", 1, 300, 0.3), ("ldr", 3, 190, 0.19),
    ]  # fmt: skip
    assert (result.total, result.truncated, result.instructions) == (10, True, 13)
    everything = engine.group("mnemonic", None, 20).groups
    assert [g.key for g in everything] == ["ldaxr", "stlxr", "ldr", "add", "adrp", "br",
                                           "udiv", "b.ne", "cbnz", "dmb"]  # fmt: skip
    assert sum(g.samples for g in everything) == 1000


def test_group_function_window_module(engine):
    functions = engine.group("function", None, 10).groups
    assert [(g.key, g.id, g.count, g.samples) for g in functions] == [
        ("<unknown_01>", "fn:0x2000", 3, 605), ("main", "fn:main", 4, 210),
        ("puts", "fn:puts", 4, 160), ("(none)", None, 2, 25),
    ]  # fmt: skip
    windows = engine.group("window", None, 10).groups
    assert [(g.key, g.samples) for g in windows] == [
        ("win:0x2000", 605), ("win:0x1000", 210), ("win:0x3000", 160), ("win:0x4000", 25),
    ]  # fmt: skip
    modules = engine.group("module", None, 10).groups
    assert [(g.key, g.count, g.samples, g.share) for g in modules] == [
        ("app", 7, 815, 0.815), ("libc.so.6", 4, 160, 0.16), ("(none)", 2, 25, 0.025),
    ]  # fmt: skip


def test_group_category(engine):
    result = engine.group("category", None, 10)
    assert [(g.key, g.count, g.samples) for g in result.groups] == [
        ("atomic-llsc", 2, 600), ("indirect-branch", 1, 40),
        ("call-overhead", 1, 40), ("division", 1, 25), ("barrier", 1, 0),
    ]  # fmt: skip
    assert result.total == 5 and not result.truncated


def test_group_where(engine):
    result = engine.group("mnemonic", "module:libc.so.6", 10)
    assert [(g.key, g.samples) for g in result.groups] == [
        ("add", 40), ("adrp", 40), ("br", 40), ("ldr", 40),
    ]  # fmt: skip
    assert result.instructions == 4 and result.where == "module:libc.so.6"
    categories = engine.group("category", "fn:puts", 10)
    assert [g.key for g in categories.groups] == ["indirect-branch", "call-overhead"]
    assert engine.group("function", "nothinglikethis", 5).groups == []
    with pytest.raises(UsageError):
        engine.group("opcode", None, 5)


def test_share_uses_cycles_when_present(tmp_path):
    (tmp_path / "p.csv").write_text(
        'pc,samples,cycles,asm\n0x10,1,30,"udiv w0, w1, w2"\n0x14,3,10,nop\n'
    )
    profile = read_profile(tmp_path / "p.csv")
    engine = QueryEngine(profile, find_patterns(profile))
    groups = engine.group("mnemonic", None, 5).groups
    assert [(g.key, g.samples, g.share) for g in groups] == [("nop", 3, 0.25), ("udiv", 1, 0.75)]
    hit = engine.regex("udiv", "asm").hits[0]
    assert (hit.samples, hit.share) == (1, 0.75)


def test_regex_and_group_do_not_build_the_text_index(tmp_path):
    (tmp_path / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")

    def never():
        raise AssertionError("text index opened")

    engine = QueryEngine(read_profile(tmp_path / "p.csv"), None, never)
    assert engine.regex("nop", "asm").total == 1
    assert engine.group("mnemonic").total == 1


def test_search_guides(tmp_path):
    from pcscope.core.readers.guides import GuideSection

    (tmp_path / "p.csv").write_text("pc,samples,asm\n0x10,1,nop\n")
    profile = read_profile(tmp_path / "p.csv")
    long_text = "Barriers order memory accesses. " * 40
    sections = [
        GuideSection("guide:sw/barriers", "sw", "Barriers", ("Barriers",), 1, long_text, 4),
        GuideSection("guide:sw/division", "sw", "Division", ("Division",), 1,
                     "UDIV takes 12 cycles.", 30),
    ]  # fmt: skip
    engine = QueryEngine(profile, None, TextIndex.build(tmp_path / "t", profile, sections))
    result = engine.search_guides("memory barrier", 5)
    assert [h.id for h in result.hits] == ["guide:sw/barriers"]
    hit = result.hits[0]
    assert hit.cut and len(hit.text) == 600 and long_text.startswith(hit.text)
    assert engine.search_guides("division cycles", 5).hits[0].cut is False
    with pytest.raises(UsageError):
        engine.search_guides("x", 0)


# --- the real bzip2 profile --------------------------------------------------------------


@pytest.fixture(scope="module")
def bzip2_engine(bzip2, tmp_path_factory):
    profile = read_profile(bzip2.profile)
    folder = tmp_path_factory.mktemp("bzip2")
    engine = QueryEngine(profile, find_patterns(profile), TextIndex.build(folder / "t", profile))
    return engine, bzip2.facts()


def test_bzip2_indirect_branches_by_search(bzip2_engine):
    engine, facts = bzip2_engine
    expected = facts["hot_indirect_branches"]
    for result in (engine.search("mnemonic:br OR mnemonic:blr", len(expected)),
                   engine.regex(r"^bl?r ", "asm", len(expected))):  # fmt: skip
        assert [(h.pc, h.asm) for h in result.hits] == [(pc, asm) for pc, asm, _ in expected]
        for hit, (_, _, share) in zip(result.hits, expected, strict=True):
            assert hit.share == pytest.approx(share, rel=1e-5)


def test_bzip2_top_functions_by_group(bzip2_engine):
    engine, facts = bzip2_engine
    result = engine.group("function", None, 10)
    assert [(g.key, g.share) for g in result.groups] == [
        (name, pytest.approx(share, rel=1e-5)) for name, share in facts["top_functions"]
    ]
    atomics = engine.group("category", "module:libc.so.6", 20)
    keys = {g.key for g in atomics.groups}
    assert {"atomic-lse", "call-overhead"} <= keys


# --- CLI ----------------------------------------------------------------------------------


def run_cli(capsys, *argv):
    from pcscope.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_search_json(tmp_path, capsys):
    (tmp_path / "p.csv").write_text(CSV)
    index = str(tmp_path / "idx")
    code, out, _ = run_cli(capsys, "search", str(tmp_path / "p.csv"), "ldr", "--limit", "2",
                           "--json", "--index-dir", index)  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert (data["query"], data["total"], data["truncated"]) == ("ldr", 3, True)
    assert [h["id"] for h in data["hits"]] == ["pc:0x1000", "pc:0x1004"]
    assert set(data["hits"][0]) >= {"id", "pc", "asm", "function", "window", "samples"}
    code, out, _ = run_cli(capsys, "search", str(tmp_path / "p.csv"), "^st", "--regex",
                           "--field", "mnemonic", "--json", "--index-dir", index)  # fmt: skip
    assert code == 0 and [h["pc"] for h in json.loads(out)["hits"]] == ["0x2004"]


def test_cli_group_json_and_text(tmp_path, capsys):
    (tmp_path / "p.csv").write_text(CSV)
    args = ["group", str(tmp_path / "p.csv"), "--index-dir", str(tmp_path / "idx")]
    code, out, _ = run_cli(capsys, *args, "--by", "module", "--json")
    assert code == 0
    data = json.loads(out)
    assert [(g["key"], g["samples"]) for g in data["groups"]] == [
        ("app", 815), ("libc.so.6", 160), ("(none)", 25)
    ]
    code, out, _ = run_cli(capsys, *args, "--by", "mnemonic", "--where", "fn:puts",
                           "--limit", "1")  # fmt: skip
    assert code == 0 and "add" in out and "3 more groups" in out


@pytest.mark.parametrize(
    "argv",
    [
        ["search", "{p}", "ldr AND"],
        ["search", "{p}", "(", "--regex"],
        ["search", "{p}", "ldr", "--field", "asm"],
        ["search", "{p}", "ldr", "--limit", "5000"],
        ["group", "{p}", "--by", "function", "--where", "ldr AND"],
    ],
)
def test_cli_errors_are_one_line(tmp_path, capsys, argv):
    (tmp_path / "p.csv").write_text(CSV)
    argv = [a.format(p=tmp_path / "p.csv") for a in argv] + ["--index-dir", str(tmp_path / "i")]
    code, out, err = run_cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err.startswith("pcscope: error: ") and err.count("\n") == 1


def test_cli_group_choices_match_the_query_layer():
    from pcscope.cli.cmd_group import GROUP_BY
    from pcscope.index.query import GROUP_KEYS

    assert GROUP_BY == GROUP_KEYS
