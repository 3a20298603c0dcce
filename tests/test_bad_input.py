"""Hostile input, table-driven: every class of bad profile, ALP, guide, CLI argument and
importer input ends in exactly one line ``pcscope: error: …`` on stderr and exit code 2 —
no traceback, the file and line named where there is one, and nothing half-written (no
output file, no build folder, no index left pointing at a failed build).

The cases run in-process through ``pcscope.cli.main.main`` (fast on two cores); the few that
need a real process (standard input, a hanging tool) start one.
"""

from __future__ import annotations

import gzip
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pcscope.cli.main import main

PROFILE = "pc,samples,asm\n0x1000,10,nop\n0x1004,5,ret\n"
TAB_PROFILE = "pc\tsamples\tasm\n0x1000\t10\tnop\n"
BIG = 2**62


@dataclass(frozen=True)
class Case:
    """argv items may hold ``{d}`` (the case's folder); ``files`` are written there first
    (str: UTF-8 text, bytes: as is). ``where``: the ``file:line`` the error must name,
    relative to the folder; ``says``: words the message must hold."""

    name: str
    argv: tuple[str, ...]
    files: dict[str, str | bytes] = field(default_factory=dict)
    where: str | None = None
    says: str = ""


def index(*extra: str, files: dict | None = None, where: str | None = None,
          says: str = "", name: str = "", profile: str = "p.csv") -> Case:
    fs = {"p.csv": PROFILE} | (files or {})
    return Case(name, ("index", f"{{d}}/{profile}", "--index-dir", "{d}/idx", *extra),
                fs, where, says)


def profile(name: str, text: str | bytes, where: str | None = None, says: str = "",
            file: str = "p.csv", *extra: str) -> Case:
    return Case(name, ("index", f"{{d}}/{file}", "--index-dir", "{d}/idx", *extra),
                {file: text}, where, says)


def rows(*lines: str, header: str = "pc,samples,asm") -> str:
    return "\n".join((header,) + lines) + "\n"


# -- profile (docs/formats.md §1) ----------------------------------------------------------------
PROFILE_CASES = [
    profile("empty file", "", "p.csv:1", "header"),
    profile("blank header", "\n\n", "p.csv:1", "header"),
    profile("no pc column", "samples,asm\n1,nop\n", "p.csv:1", "pc"),
    profile("no samples column", "pc,asm\n0x1,nop\n", "p.csv:1", "samples"),
    profile("no asm column", "pc,samples\n0x1,1\n", "p.csv:1", "asm"),
    profile("column twice", "pc,samples,asm,pc\n0x1,1,nop,0x2\n", "p.csv:1", "twice"),
    profile("header only", "pc,samples,asm\n", None, "no instructions"),
    profile("pc not a number", rows("0x1000,1,nop", "zz,1,nop"), "p.csv:3", "pc"),
    profile("pc empty", rows(",1,nop"), "p.csv:2", "pc"),
    profile("pc bare 0x", rows("0x,1,nop"), "p.csv:2", "pc"),
    profile("pc negative", rows("-5,1,nop"), "p.csv:2", "pc"),
    profile("pc beyond 64 bits", rows("0x1ffffffffffffffff,1,nop"), "p.csv:2", "pc"),
    profile("pc two tokens", rows("0x10 0x14,1,nop"), "p.csv:2", "pc"),
    profile("samples not a number", rows("0x10,abc,nop"), "p.csv:2", "samples"),
    profile("samples empty", rows("0x10,,nop"), "p.csv:2", "samples"),
    profile("samples negative", rows("0x10,-3,nop"), "p.csv:2", "negative"),
    profile("samples fractional", rows("0x10,1.5,nop"), "p.csv:2", "samples"),
    profile("samples exponent", rows("0x10,1e3,nop"), "p.csv:2", "samples"),
    profile("samples beyond int64", rows("0x10,99999999999999999999,nop"), "p.csv:2",
            "samples"),
    profile("samples sum overflows", rows(f"0x10,{BIG},nop", f"0x14,{BIG},nop"), "p.csv:3",
            "sum"),
    profile("samples sum overflows over many rows",
            rows(*[f"0x{16 + 4 * i:x},{2**60},nop" for i in range(9)]), "p.csv:9", "sum"),
    profile("samples NaN text", rows("0x10,nan,nop"), "p.csv:2", "samples"),
    profile("asm empty", rows("0x10,1,"), "p.csv:2", "asm"),
    profile("asm only spaces", rows('0x10,1,"   "'), "p.csv:2", "asm"),
    profile("cycles not a number", rows("0x10,1,nop,x", header="pc,samples,asm,cycles"),
            "p.csv:2", "cycles"),
    profile("cycles negative", rows("0x10,1,nop,-1", header="pc,samples,asm,cycles"),
            "p.csv:2", "cycles"),
    profile("cycles sum overflows",
            rows(f"0x10,1,nop,{BIG}", f"0x14,1,nop,{BIG}", header="pc,samples,asm,cycles"),
            "p.csv:3", "sum"),
    profile("too many fields", rows("0x10,1,nop", "0x14,1,nop,extra"), "p.csv:3", "fields"),
    profile("too many fields after a quoted newline",
            rows('0x10,1,"ldr x0,\n[x1]"', "0x18,1,nop,extra"), "p.csv:4", "fields"),
    profile("samples not a number after a quoted newline",
            rows('0x10,1,"ldr x0,\n[x1]"', "0x18,abc,nop"), "p.csv:4", "samples"),
    profile("unterminated quote", rows('0x10,1,"nop', "0x14,1,ret"), "p.csv:2", "quote"),
    profile("invalid UTF-8", b"pc,samples,asm\n0x10,1,nop\n0x14,1,\xff\xfe\n", "p.csv:3",
            "UTF-8"),
    profile("NUL byte", b"pc,samples,asm\n0x10,1,n\x00op\n", "p.csv:2", "NUL"),
    profile("NUL byte after a quoted newline",
            b'pc,samples,asm\n0x10,1,"ldr x0,\n[x1]"\n0x18,1,n\x00op\n', "p.csv:4", "NUL"),
    profile("samples not a number after a quoted newline in a function name",
            rows('0x10,1,nop,"f\ng"', "0x18,abc,nop,f", header="pc,samples,asm,function"),
            "p.csv:4", "samples"),
    profile("samples not a number after a quoted newline in an extra column",
            rows('0x10,1,nop,"a\nb"', "0x18,abc,nop,c", header="pc,samples,asm,note"),
            "p.csv:4", "samples"),
    profile("samples not a number after a newline that ends an asm cell",
            rows('0x10,1,"nop\n"', "0x18,abc,nop"), "p.csv:4", "samples"),
    profile("cycles empty in one row of a column with numbers",
            rows("0x10,1,nop,5", "0x14,1,nop, ", header="pc,samples,asm,cycles"), "p.csv:3",
            "cycles"),
    profile("cycles not a number in every row",
            rows("0x10,1,nop,x", "0x14,1,nop,y", header="pc,samples,asm,cycles"), "p.csv:2",
            "cycles"),
    profile("NUL byte in the header", b"pc,samples,asm,no\x00te\n0x10,1,nop,x\n", "p.csv:1",
            "NUL"),
    profile("binary garbage", bytes(range(256)) * 4, None, ""),
    profile("truncated gzip", gzip.compress(PROFILE.encode())[:-12], None, "gzip",
            "p.csv.gz"),
    profile("gzip of garbage bytes", b"\x1f\x8b" + b"\x00" * 40, None, "gzip", "p.csv.gz"),
    profile("duplicate pc", rows("0x10,1,nop", "0x10,2,ret"), "p.csv:3", "duplicate"),
    profile("duplicate pc merged overflows", rows(f"0x10,{BIG},nop", f"0x10,{BIG},ret"),
            "p.csv:3", "sum", "p.csv", "--merge-duplicates"),
    profile("samples with a plus sign and spaces inside", rows("0x10,+ 5,nop"), "p.csv:2",
            "samples"),
    profile("tab profile with a comma row", TAB_PROFILE + "0x1004,5,ret\n", "p.tsv:3",
            "", "p.tsv"),
    profile("samples with a thousands separator", rows('0x10,"1,000",nop'), "p.csv:2",
            "samples"),
    profile("short row", rows("0x10,1,nop", "0x14"), "p.csv:3", ""),
    profile("header with BOM and missing column", "\ufeffpc,asm\n0x10,nop\n", "p.csv:1",
            "samples"),
    Case("profile is a directory", ("index", "{d}", "--index-dir", "{d}/idx"), {}, None,
         "directory"),
    Case("profile missing", ("index", "{d}/none.csv", "--index-dir", "{d}/idx"), {}, None,
         "no such file"),
    Case("profile argument empty", ("index", "", "--index-dir", "{d}/idx"), {}, None, ""),
]


# -- ALP (docs/formats.md §2) ----------------------------------------------------------------------
def alp(name: str, *lines: str | bytes, where: int | None = None, says: str = "",
        extra: tuple[str, ...] = ()) -> Case:
    if any(isinstance(line, bytes) for line in lines):
        text: str | bytes = b"\n".join(x if isinstance(x, bytes) else x.encode()
                                       for x in lines) + b"\n"
    else:
        text = "\n".join(lines) + "\n"
    return index("--alp", "{d}/a.jsonl", *extra, files={"a.jsonl": text},
                 where=f"a.jsonl:{where}" if where else None, says=says, name=name)


GOOD = '{"pc": "0x1000", "iterations": 10}'


def rec(**fields) -> str:
    return json.dumps({"pc": "0x1000", "iterations": 10} | fields)


def br(**counts) -> str:
    return rec(branch={"kind": "conditional"} | counts)


def mem(**counts) -> str:
    return rec(mem={"kind": "load"} | counts)


ALP_CASES = [
    alp("not JSON", GOOD.replace("0x1000", "0x1004"), "{", where=2),
    alp("JSON array", "[1, 2]", where=1),
    alp("JSON string", '"pc"', where=1),
    alp("no pc", '{"iterations": 1}', where=1, says="pc"),
    alp("no iterations", '{"pc": "0x1000"}', where=1, says="iterations"),
    alp("iterations negative", rec(iterations=-1), where=1),
    alp("iterations fractional", rec(iterations=1.5), where=1),
    alp("iterations a string", rec(iterations="10"), where=1),
    alp("iterations beyond 2^53", rec(iterations=2**60), where=1),
    alp("iterations sum overflows", *[rec(loop=f"l{i}", iterations=2**53) for i in range(1100)],
        where=1024, says="overflow"),
    alp("pc garbage", rec(pc="zz"), where=1, says="pc"),
    alp("ALP pc beyond 64 bits", rec(pc="0x1ffffffffffffffff"), where=1, says="64"),
    alp("pc negative integer", rec(pc=-4), where=1),
    alp("pc a float", rec(pc=4.5), where=1),
    alp("pc null", rec(pc=None), where=1),
    alp("branch kind unknown", rec(branch={"kind": "sideways"}), where=1),
    alp("branch not an object", rec(branch=[1]), where=1),
    alp("branch executed negative", br(executed=-1), where=1),
    alp("branch mispredicted > executed", br(executed=5, mispredicted=9), where=1,
        says="mispredicted"),
    alp("branch taken > executed", br(executed=5, taken=6), where=1, says="taken"),
    alp("branch mispredicted > executed later", GOOD, json.dumps(
        {"pc": "0x1004", "iterations": 1, "branch": {"kind": "call", "executed": 1,
                                                     "mispredicted": 2}}),
        where=2, says="mispredicted"),
    alp("mem kind unknown", rec(mem={"kind": "teleport"}), where=1),
    alp("mem l1d_miss > accesses", mem(accesses=3, l1d_miss=4), where=1, says="l1d_miss"),
    alp("mem l2_miss > accesses", mem(accesses=3, l2_miss=4), where=1, says="l2_miss"),
    alp("mem llc_miss > accesses", mem(accesses=3, llc_miss=4), where=1, says="llc_miss"),
    alp("mem tlb_miss > accesses", mem(accesses=3, tlb_miss=4), where=1, says="tlb_miss"),
    alp("mem store_forwarded > accesses", mem(accesses=3, store_forwarded=4), where=1,
        says="store_forwarded"),
    alp("mem miss negative", mem(accesses=3, l1d_miss=-1), where=1),
    alp("mem avg_latency negative", mem(accesses=3, avg_latency=-2.0), where=1),
    alp("mem avg_latency overflow to infinity", rec(mem={"kind": "load"}).replace(
        '"load"}', '"load", "avg_latency": 1e999}'), where=1, says="range"),
    alp("mem avg_latency NaN literal", rec().replace("}", ', "mem": {"kind": "load", '
        '"avg_latency": NaN}}'), where=1),
    alp("stage negative", rec(stages={"fetch": -1.0}), where=1),
    alp("stage infinity", rec(stages={"fetch": 0}).replace("0}", "1e400}"), where=1,
        says="range"),
    alp("stage Infinity literal", rec(stages={"fetch": 0}).replace("0}", "Infinity}"), where=1),
    alp("stage a string", rec(stages={"fetch": "1"}), where=1),
    alp("stages not an object", rec(stages=[1, 2]), where=1),
    alp("decode before fetch", rec(stages={"fetch": 10.0, "decode": 5.0}), where=1,
        says="decode"),
    alp("retire before complete", rec(stages={"complete": 9.0, "retire": 3.0}), where=1,
        says="retire"),
    alp("issue before dispatch with a gap", rec(stages={"fetch": 0.0, "dispatch": 5.0,
        "issue": 4.0, "retire": 9.0}), where=1, says="issue"),
    alp("stage order broken on a later line", GOOD, rec(pc="0x1004", stages={"fetch": 2.0,
        "retire": 1.0}), where=2, says="retire"),
    alp("extra stage negative", rec(stages={"fetch": 0.0, "wakeup": -3.0}), where=1),
    alp("extra stage infinity", rec(stages={"fetch": 0}).replace("0}", '0, "wakeup": 1e999}'),
        where=1, says="range"),
    alp("loop label a number", rec(loop=5), where=1),
    alp("asm a number", rec(asm=5), where=1),
    alp("nested 100k deep", '{"pc": "0x1000", "iterations": 1, "x": ' + "[" * 100_000
        + "]" * 100_000 + "}", where=1, says="deep"),
    alp("nested objects 50k deep", '{"pc": "0x1000", "iterations": 1, "x": '
        + '{"a": ' * 50_000 + "1" + "}" * 50_000 + "}", where=1, says="deep"),
    alp("second record for a pc", GOOD, GOOD, where=2, says="second"),
    alp("branch kind contradicts", br(), rec(loop="l", branch={"kind": "call"}), where=2,
        says="kind"),
    alp("mem kind contradicts", mem(), rec(loop="l", mem={"kind": "store"}), where=2,
        says="kind"),
    alp("ALP invalid UTF-8", GOOD.encode(), b'{"pc": "0x1004", "iterations": 1, "asm": "\xff"}',
        where=2, says="UTF-8"),
    index("--alp", "{d}/a.jsonl.gz", files={"a.jsonl.gz": gzip.compress(GOOD.encode())[:-9]},
          says="gzip", name="ALP truncated gzip"),
    index("--alp", "{d}", says="directory", name="ALP is a directory"),
    index("--alp", "{d}/none.jsonl", says="no such file", name="ALP missing"),
]


# -- guides ------------------------------------------------------------------------------------
def guide(name: str, file: str, text: str | bytes, where: int | None = None,
          says: str = "") -> Case:
    return index("--guide", f"{{d}}/{file}", files={file: text},
                 where=f"{file}:{where}" if where else None, says=says, name=name)


GUIDE_CASES = [
    guide("guide invalid UTF-8", "g.md", b"# A\ntext\n\xff\n", 3, "UTF-8"),
    guide("guide empty", "g.md", "", None, "empty"),
    guide("guide only blank lines", "g.txt", "\n\n  \n", None, "empty"),
    guide("guide binary", "g.md", b"\x00\x01\x02binary\x00" * 20, 1, "binary"),
    guide("guide truncated gzip", "g.md.gz", gzip.compress(b"# A\n" * 100)[:-10], None, "gzip"),
    guide("guide damaged PDF", "g.pdf", b"%PDF-1.4 not really", None, "PDF"),
    index("--guide", "{d}/none.md", says="no such file", name="guide missing"),
    index("--guide", "{d}", says="directory", name="guide is a directory"),
]


# -- command-line arguments --------------------------------------------------------------------
def cli(name: str, *argv: str, says: str = "", files: dict | None = None) -> Case:
    return Case(name, argv, {"p.csv": PROFILE} | (files or {}), None, says)


P = "{d}/p.csv"
IDX = ("--index-dir", "{d}/idx")
CLI_CASES = [
    cli("unknown command", "frobnicate", says="frobnicate"),
    cli("unknown option", "index", P, "--frob", says="--frob"),
    cli("missing query", "search", P, *IDX, says="QUERY"),
    cli("--rows negative", "index", P, *IDX, "--rows", "-1", says="--rows"),
    cli("--rows zero", "index", P, *IDX, "--rows", "0", says="--rows"),
    cli("--rows not a number", "index", P, *IDX, "--rows", "many", says="--rows"),
    cli("--top zero", "index", P, *IDX, "--top", "0", says="--top"),
    cli("--top negative", "index", P, *IDX, "--top", "-3", says="--top"),
    cli("--top fractional", "index", P, *IDX, "--top", "2.5", says="--top"),
    cli("--top beyond int64", "index", P, *IDX, "--top", "9" * 30, says="--top"),
    cli("--coverage zero", "index", P, *IDX, "--coverage", "0", says="--coverage"),
    cli("--coverage above one", "index", P, *IDX, "--coverage", "1.5", says="--coverage"),
    cli("--coverage nan", "index", P, *IDX, "--coverage", "nan", says="--coverage"),
    cli("--coverage inf", "index", P, *IDX, "--coverage", "inf", says="--coverage"),
    cli("--limit zero", "search", P, *IDX, "nop", "--limit", "0", says="--limit"),
    cli("show pc garbage", "show", P, *IDX, "zz", says="zz"),
    cli("show pc beyond 64 bits", "show", P, *IDX, "0x1ffffffffffffffff",
        says="not in the profile"),
    cli("show pc not in the profile", "show", P, *IDX, "0x9999", says="0x9999"),
    cli("show --before negative", "show", P, *IDX, "0x1000", "--before", "-1",
        says="--before"),
    cli("show --after not a number", "show", P, *IDX, "0x1000", "--after", "x",
        says="--after"),
    cli("search unbalanced quote", "search", P, *IDX, '"ldr x1', says="bad query"),
    cli("search unbalanced paren", "search", P, *IDX, "(ldr", says="bad query"),
    cli("search unknown field", "search", P, *IDX, "nosuchfield:x", says="bad query"),
    cli("search bad range", "search", P, *IDX, "samples:[10 TO", says="bad query"),
    cli("search bad number", "search", P, *IDX, "samples:>abc", says="bad query"),
    cli("search empty query", "search", P, *IDX, "", says="query"),
    cli("search query too long", "search", P, *IDX, "a " * 20_000, says="long"),
    cli("regex invalid", "search", P, *IDX, "--regex", "(", says="regex"),
    cli("regex too long", "search", P, *IDX, "--regex", "a" * 20_000, says="long"),
    cli("--field without --regex", "search", P, *IDX, "nop", "--field", "asm",
        says="--field"),
    cli("--field unknown", "search", P, *IDX, "nop", "--regex", "--field", "x",
        says="--field"),
    cli("group --by unknown", "group", P, *IDX, "--by", "colour", says="--by"),
    cli("group --where bad query", "group", P, *IDX, "--by", "mnemonic", "--where", "(",
        says="bad query"),
    cli("--index-dir is a file", "index", P, "--index-dir", P, says="p.csv"),
    cli("--json in a missing folder is fine but a folder is not", "analyze", P, *IDX,
        "--json", "{d}", says="{d}"),
    cli("--markdown is a directory", "analyze", P, *IDX, "--markdown", "{d}", says="{d}"),
    cli("--json below a file", "analyze", P, *IDX, "--json", "{d}/p.csv/r.json",
        says="not a folder"),
    cli("--session is a directory", "analyze", P, *IDX, "--session", "{d}",
        says="session"),
    cli("--session is not SQLite", "analyze", P, *IDX, "--session", "{d}/s.sqlite",
        says="corrupt", files={"s.sqlite": "this is not a database\n" * 100}),
    cli("--session truncated SQLite", "analyze", P, *IDX, "--session", "{d}/s.sqlite",
        says="corrupt", files={"s.sqlite": b"SQLite format 3\x00" + b"\x00" * 50}),
    cli("--max-seconds zero", "analyze", P, *IDX, "--max-seconds", "0", says="--max-seconds"),
    cli("--max-seconds nan", "analyze", P, *IDX, "--max-seconds", "nan",
        says="--max-seconds"),
    cli("--max-seconds inf", "analyze", P, *IDX, "--max-seconds", "inf",
        says="--max-seconds"),
    cli("--max-calls negative", "analyze", P, *IDX, "--max-calls", "-1", says="--max-calls"),
    cli("--focus unknown", "analyze", P, *IDX, "--focus", "astrology", says="astrology"),
    cli("--preset unknown", "analyze", P, *IDX, "--preset", "ludicrous", says="ludicrous"),
    cli("--model unknown", "analyze", P, *IDX, "--model", "nosuchmodel", says="nosuchmodel"),
    cli("--strategy unknown", "analyze", P, *IDX, "--strategy", "vibes", says="--strategy"),
    cli("--hint-file missing", "analyze", P, *IDX, "--hint-file", "{d}/none.txt",
        says="none.txt"),
    cli("--hint-file invalid UTF-8", "analyze", P, *IDX, "--hint-file", "{d}/h.txt",
        says="h.txt", files={"h.txt": b"\xff\xfe\n"}),
    cli("eval --max-seconds negative", "eval", P, "--a", "bounded:offline", "--b",
        "bounded:offline", "--judge", "offline", "--max-seconds", "-1", says="--max-seconds"),
    cli("eval --trials zero", "eval", P, "--a", "x", "--b", "y", "--judge", "z", "--trials",
        "0", says="--trials"),
    cli("calls with a corrupt session", "calls", P, "--session", "{d}/s.sqlite",
        says="corrupt", files={"s.sqlite": "garbage " * 600}),
    cli("calls --run zero", "calls", P, *IDX, "--run", "0", says="--run"),
    cli("call id too long", "call", "w1." + "c" * 5000, P, *IDX, says="long"),
    cli("--mca garbage", "index", P, *IDX, "--mca", "{d}/m.jsonl", says="m.jsonl",
        files={"m.jsonl": "not json\n"}),
    cli("--mca wrong shape", "index", P, *IDX, "--mca", "{d}/m.jsonl", says="m.jsonl",
        files={"m.jsonl": '{"pc": "0x1000", "block_rthroughput": "fast"}\n'}),
    cli("sample unknown option", "sample", "-o", "{d}/s", "--frob", says="--frob"),
    cli("sample --scale zero", "sample", "-o", "{d}/s", "--scale", "0", says="--scale"),
    cli("import without a source", "import", says="SOURCE"),
    cli("import perf without --script", "import", "perf", says="--script"),
    cli("import gem5 --ticks-per-cycle zero", "import", "gem5", "{d}/t.txt",
        "--ticks-per-cycle", "0", says="--ticks-per-cycle", files={"t.txt": "x\n"}),
    cli("import gem5 --ticks-per-cycle nan", "import", "gem5", "{d}/t.txt",
        "--ticks-per-cycle", "nan", says="--ticks-per-cycle", files={"t.txt": "x\n"}),
    cli("import gem5 --ticks-per-cycle inf", "import", "gem5", "{d}/t.txt",
        "--ticks-per-cycle", "inf", says="--ticks-per-cycle", files={"t.txt": "x\n"}),
    cli("import gem5 --reorder-window zero", "import", "gem5", "{d}/t.txt",
        "--reorder-window", "0", says="--reorder-window", files={"t.txt": "x\n"}),
    cli("import mca --iterations zero", "import", "mca", P, "--iterations", "0",
        says="--iterations"),
    cli("import perf --base malformed", "import", "perf", "--script", "{d}/s.txt", "--base",
        "libc", says="--base", files={"s.txt": "    1  1000 f (/lib/x.so)\n"}),
    cli("import perf --base not hex", "import", "perf", "--script", "{d}/s.txt", "--base",
        "libc=zz", says="--base", files={"s.txt": "    1  1000 f (/lib/x.so)\n"}),
    cli("import -o is a directory", "import", "spe", "{d}/s.txt", "-o", "{d}",
        says="{d}", files={"s.txt": "x\n"}),
]


# -- importers -----------------------------------------------------------------------------------
def imp(name: str, kind: str, text: str | bytes, where: int | None = None, says: str = "",
        extra: tuple[str, ...] = (), file: str = "in.txt") -> Case:
    argv = ("import", kind, "--script", f"{{d}}/{file}") if kind == "perf" else (
        "import", kind, f"{{d}}/{file}")
    return Case(name, argv + ("-o", "{d}/out.x") + extra, {file: text},
                f"{file}:{where}" if where else None, says)


def perf_line(period: str = "1000", ip: str = "7f0000001000") -> str:
    return f"    {period}  {ip} hot (/lib/libhot.so)"


PERF_GOOD = perf_line()
PERF_CASES = [
    imp("perf empty", "perf", "", None, "no samples"),
    imp("perf garbage only", "perf", "hello world\nfoo bar\n", None, "no samples"),
    imp("perf period negative", "perf", f"{PERF_GOOD}\n{perf_line('-5')}\n", 2, "period"),
    imp("perf period zero", "perf", f"{PERF_GOOD}\n{perf_line('0')}\n", 2, "period"),
    imp("perf period fractional", "perf", f"{PERF_GOOD}\n{perf_line('2.5')}\n", 2, "period"),
    imp("perf period 1e26", "perf", f"{PERF_GOOD}\n{perf_line('1e26')}\n", 2, "period"),
    imp("perf period beyond 2^53", "perf", f"{PERF_GOOD}\n{perf_line(str(2**60))}\n", 2,
        "period"),
    imp("perf ip beyond 64 bits", "perf", f"{PERF_GOOD}\n{perf_line(ip='1' + '0' * 17)}\n", 2,
        "64"),
    imp("perf invalid UTF-8", "perf", PERF_GOOD.encode() + b"\n\xff\xfe\n", 2, "UTF-8"),
    imp("perf truncated gzip", "perf", gzip.compress(PERF_GOOD.encode() * 50)[:-10], None,
        "gzip", file="in.txt.gz"),
    imp("perf unknown --event", "perf", PERF_GOOD + "\n", None, "--event",
        ("--event", "cycles")),
    imp("perf --objdump missing", "perf", PERF_GOOD + "\n", None, "none.txt",
        ("--objdump", "{d}/none.txt")),
    imp("perf --objdump garbage", "perf", PERF_GOOD + "\n", None, "file format",
        ("--objdump", "{d}/in.txt")),
    imp("perf script is a directory", "perf", "", None, "directory", file="dir/"),
]
PERF_CASES[-1] = Case("perf script is a directory", ("import", "perf", "--script", "{d}",
                                                    "-o", "{d}/out.x"), {}, None, "directory")

ANN_HEAD = (" Percent |\tSource code & Disassembly of libhot.so for cpu-clock (200 samples, "
            "percent: local period)\n" + "-" * 40 + "\n         :  0000000000001100 <hot>:\n")
ANN_HEAD_N = ANN_HEAD.replace(" Percent |", " Samples |")


def ann(value: str, addr: str = "1100", head: str = ANN_HEAD) -> str:
    return f"{head}   50.00 :   1104:   nop\n{value:>8} :   {addr}:   ret\n"


ANNOTATE_CASES = [
    imp("annotate empty", "annotate", "", None, "no annotated"),
    imp("annotate garbage", "annotate", "nothing here\n", None, "no annotated"),
    imp("annotate percent over 100", "annotate", ann("150.00"), 5, "100"),
    imp("annotate percents sum over 100", "annotate", ann("60.00"), 5, "100"),
    imp("annotate percent huge", "annotate", ann("1" + "0" * 30 + ".0"), 5, ""),
    imp("annotate samples negative", "annotate", ann("-3", head=ANN_HEAD_N), 5, ""),
    imp("annotate samples over the header total", "annotate", ann("900", head=ANN_HEAD_N), 5,
        "samples"),
    imp("annotate samples fractional", "annotate", ann("2.5", head=ANN_HEAD_N), 5, "whole"),
    imp("annotate header total beyond 2^53", "annotate",
        ann("1.00").replace("200 samples", f"{2**60} samples"), 1, "samples"),
    imp("annotate instruction before any header", "annotate", "   50.00 :   1104:   nop\n", None,
        "no annotated"),
    imp("annotate invalid UTF-8", "annotate", ANN_HEAD.encode() + b"  1.0 : 1104: \xff\n", 4,
        "UTF-8"),
]

SPE_GOOD = ("[002]  4521.100001:    l1d-access:        ffffd1e04000        288080142 |OP LOAD|"
            "LVL L1 hit|SNP None|TLB Walker hit|LCK No|BLK  N/A               5     "
            "ffff8e3b0688 hot_sum+0x18 (/usr/lib/libhot_a64.so)")
SPE_CASES = [
    imp("spe empty", "spe", "", None, "no Arm SPE"),
    imp("spe garbage", "spe", "hello\nworld\n", None, "no Arm SPE"),
    imp("spe ip not hex", "spe", SPE_GOOD + "\n" + SPE_GOOD.replace("ffff8e3b0688",
        "zzzz8e3b0688") + "\n", 2, "ip"),
    imp("spe ip beyond 64 bits", "spe", SPE_GOOD + "\n" + SPE_GOOD.replace("ffff8e3b0688",
        "1ffff8e3b06880000") + "\n", 2, "64"),
    imp("spe weight negative", "spe", SPE_GOOD.replace("  5     ", " -5     ") + "\n", 1, ""),
    imp("spe invalid UTF-8", "spe", SPE_GOOD.encode() + b"\n\xff\n", 2, "UTF-8"),
    imp("spe truncated gzip", "spe", gzip.compress((SPE_GOOD + "\n").encode() * 40)[:-10],
        None, "gzip", file="in.txt.gz"),
]


def o3(fetch: int = 1000, pc: str = "0x00400580", stages=(1500, 2000, 2500, 3000, 5000),
       retire: int = 5500, seq: str = "1") -> str:
    names = ("decode", "rename", "dispatch", "issue", "complete")
    lines = [f"O3PipeView:fetch:{fetch}:{pc}:0:{seq}:ldr   x1, [x0], #8"]
    lines += [f"O3PipeView:{n}:{t}" for n, t in zip(names, stages, strict=True)]
    lines.append(f"O3PipeView:retire:{retire}:store:0")
    return "\n".join(lines) + "\n"


GEM5_CASES = [
    imp("gem5 empty", "gem5", "", None, "no O3PipeView"),
    imp("gem5 garbage", "gem5", "hello\nworld\n", None, "O3PipeView"),
    imp("gem5 tick beyond int64", "gem5", o3(fetch=2**70), 1, "tick"),
    imp("gem5 retire tick beyond int64", "gem5", o3(retire=2**64 + 5), 7, "tick"),
    imp("gem5 retire before fetch", "gem5", o3(fetch=9000, stages=(9100, 9200, 9300, 9400,
        9500), retire=100), 7, "retire"),
    imp("gem5 issue before dispatch", "gem5", o3(stages=(1500, 2000, 2500, 2400, 5000)), 5,
        "issue"),
    imp("gem5 complete before issue", "gem5", o3(stages=(1500, 2000, 2500, 3000, 2900)), 6,
        "complete"),
    imp("gem5 unknown stage", "gem5", o3().replace("rename", "teleport"), 3, "stage"),
    imp("gem5 decode without fetch", "gem5", "O3PipeView:decode:1500\n", 1, "fetch"),
    imp("gem5 pc not hex", "gem5", o3(pc="0xzz0580"), 1, ""),
    imp("gem5 seq not a number", "gem5", o3(seq="x"), 1, ""),
    imp("gem5 fetch fields missing", "gem5", "O3PipeView:fetch:1000\n", 1, ""),
    imp("gem5 tick negative", "gem5", o3(fetch=-5), 1, ""),
    imp("gem5 tick fractional", "gem5", o3().replace("decode:1500", "decode:1500.5"), 2, ""),
    imp("gem5 invalid UTF-8 in asm", "gem5", o3().encode().replace(b"ldr", b"\xffdr"), 1,
        "UTF-8"),
]


def fake_tool(script: str) -> dict[str, str]:
    return {"llvm-mca": f"#!{sys.executable}\n{script}\n"}


MCA_ARGS = ("--llvm-mca", "{d}/llvm-mca")
MCA_CASES = [
    Case(name, ("import", "mca", P, *MCA_ARGS, "-o", "{d}/out.x", *extra),
         {"p.csv": PROFILE} | fake_tool(script), None, says)
    for name, script, says, extra in [
        ("mca tool prints garbage", "import sys\nprint('%%% not json')", "llvm-mca", ()),
        ("mca tool prints the wrong JSON", "print('{\"CodeRegions\": 5}')", "llvm-mca", ()),
        ("mca tool fails", "import sys\nsys.stderr.write('boom\\n')\nsys.exit(3)", "llvm-mca",
         ()),
        ("mca tool killed by a signal", "import os, signal\nos.kill(os.getpid(), 9)",
         "llvm-mca", ()),
        ("mca tool hangs", "import time\ntime.sleep(60)", "timeout", ("--timeout", "0.5")),
    ]
] + [
    Case("mca tool missing", ("import", "mca", P, "--llvm-mca", "{d}/none", "-o", "{d}/o.x"),
         {"p.csv": PROFILE}, None, "none"),
    Case("mca tool not executable", ("import", "mca", P, "--llvm-mca", "{d}/p.csv", "-o",
                                     "{d}/o.x"), {"p.csv": PROFILE}, None, "p.csv"),
    Case("mca --timeout zero", ("import", "mca", P, "--timeout", "0"), {"p.csv": PROFILE},
         None, "--timeout"),
]

# Lines an importer passes over are no error, but never silent: counted on stderr with
# the first line numbers (case.where holds the expected "skipped N line" words).
SKIP_CASES = [
    imp("spe line cut short", "spe", SPE_GOOD + "\n[002]  4521.100002:    l1d-access:\n", 2,
        "1 line skipped"),
    imp("perf line that is no sample", "perf", f"{PERF_GOOD}\nsomething else entirely\n", 2,
        "1 line skipped"),
    imp("perf several lines that are no sample", "perf",
        f"{PERF_GOOD}\n" + "garbage here\n" * 7, 2, "7 lines skipped"),
]

ALL = (PROFILE_CASES + ALP_CASES + GUIDE_CASES + CLI_CASES + PERF_CASES + ANNOTATE_CASES
       + SPE_CASES + GEM5_CASES + MCA_CASES)


def test_the_table_is_big_and_names_are_unique():
    names = [c.name for c in ALL + SKIP_CASES]
    assert len(names) == len(set(names)), [n for n in names if names.count(n) > 1]
    assert len(ALL) + len(SKIP_CASES) >= 200, len(ALL)


def materialise(case: Case, d: Path) -> list[str]:
    for name, content in case.files.items():
        path = d / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
        if name == "llvm-mca":
            path.chmod(0o755)
    return [a.replace("{d}", str(d)) for a in case.argv]


def leftovers(d: Path, before: set[Path]) -> list[str]:
    """What a failed command left behind: new files or folders other than its index root
    and session folder, build folders, or an index pointing at a build."""
    out = []
    for path in d.rglob("*"):
        if path in before:
            continue
        rel = path.relative_to(d)
        if rel.parts[0] == "idx":
            live = (path.parent / "current").resolve()
            if path.name.startswith((".text-", ".mechanisms-", ".current-")) or (
                    path.name.startswith("build-") and path != live):
                out.append(str(rel))
            continue
        out.append(str(rel))
    return out


@pytest.mark.parametrize("case", ALL, ids=[c.name for c in ALL])
def test_bad_input_is_one_clean_line(case, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    d = tmp_path / "case"
    d.mkdir()
    argv = materialise(case, d)
    before = set(d.rglob("*"))
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse's own exit would be a bug too
        code = f"SystemExit({exc.code})"
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert code == 2, f"exit {code}, stderr: {err!r}"
    assert len(lines) == 1, err
    assert lines[0].startswith("pcscope: error: "), err
    assert "Traceback" not in err and "internal error" not in err, err
    if case.where:
        assert f"{d}/{case.where}:" in lines[0], err
    if case.says:
        assert case.says.replace("{d}", str(d)).lower() in lines[0].lower(), err
    assert not leftovers(d, before), leftovers(d, before)
    assert not (tmp_path / "state").exists() or not list((tmp_path / "state").rglob("trace*"))


@pytest.mark.parametrize("case", SKIP_CASES, ids=[c.name for c in SKIP_CASES])
def test_skipped_lines_are_counted_on_stderr(case, tmp_path, capsys):
    d = tmp_path
    code = main(materialise(case, d))
    err = capsys.readouterr().err
    assert code == 0, err
    notes = [line for line in err.splitlines() if "warning" in line]
    assert len(notes) == 1, err
    assert case.says in notes[0] and f"(line {case.where.split(':')[1]}" in notes[0], err


def test_skip_bad_lines_skips_and_counts_alp_records_that_break_the_field_rules(tmp_path,
                                                                                 capsys):
    (tmp_path / "p.csv").write_text(PROFILE)
    (tmp_path / "a.jsonl").write_text("\n".join([
        GOOD, br(pc="0x1004", executed=1, mispredicted=2).replace('"0x1000"', '"0x1004"'),
        mem(accesses=1, l1d_miss=5).replace('"0x1000"', '"0x1008"'),
        rec(stages={"fetch": 5.0, "retire": 1.0}).replace('"0x1000"', '"0x100c"')]) + "\n")
    argv = ["index", str(tmp_path / "p.csv"), "--alp", str(tmp_path / "a.jsonl"), "--index-dir",
            str(tmp_path / "idx")]
    assert main([*argv, "--skip-bad-lines", "--json"]) == 0
    alp_stats = json.loads(capsys.readouterr().out)["alp"]
    assert alp_stats["records"] == 1 and alp_stats["skipped_lines"] == 3
    assert main([*argv, "--skip-bad-lines"]) == 0
    assert "3 bad lines skipped" in " ".join(capsys.readouterr().out.split())


def test_extra_column_names_are_no_file_names(tmp_path, capsys):
    """Extra columns are kept under numbered files: a header naming ../x writes nothing
    outside the index."""
    (tmp_path / "p.csv").write_text("pc,samples,asm,../../x,a/b\n0x10,1,nop,u,v\n")
    assert main(["index", str(tmp_path / "p.csv"), "--index-dir", str(tmp_path / "i" / "idx"),
                 "--json"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["i", "p.csv"]
    assert sorted(p.name for p in (tmp_path / "i").iterdir()) == ["idx"]
    from pcscope.index.store import open_workload

    extras = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "i" / "idx").profile.extras
    assert sorted(extras) == ["../../x", "a/b"]
    capsys.readouterr()
