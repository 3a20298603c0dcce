"""The sample generator and the bundled workloads (issue 3).

Outputs are read back two ways: with the project's readers (read_profile, read_alp) and
with plain csv/json parsing and an aggregation written here from docs/formats.md §2, so a
bug shared by the generator and a reader cannot hide itself.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import re
import tracemalloc
from collections import defaultdict
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

import numpy as np
import pytest

from pcscope.cli.main import main as pcscope_main
from pcscope.core.errors import UsageError
from pcscope.core.readers.alp import read_alp
from pcscope.core.readers.profile_csv import read_profile
from pcscope.samples import NAMES, bundled, layout
from pcscope.samples.codegen import r as int_keys
from pcscope.samples.codegen import v as fp_keys
from pcscope.samples.generate import Options, generate

CATEGORIES = {  # docs/formats.md §4
    "indirect-branch", "branch-mispredict", "atomic-llsc", "atomic-contention", "barrier",
    "acquire-release", "dependent-load", "cache-miss", "tlb-miss", "store-forwarding",
    "division", "spin-wait", "call-overhead", "memcpy", "fp-dependency", "vectorization",
    "register-spill", "state-in-memory", "string-routine", "hardening", "narrow-access",
    "loop-overhead", "other",
}
STAGES = ("fetch", "decode", "rename", "dispatch", "issue", "complete", "retire")
PC_RE = re.compile(r"^0x[0-9a-f]+$")


# --- reading outputs without the project's code -----------------------------------------

def profile_rows(path: Path) -> tuple[list[str], list[dict]]:
    with gzip.open(path, "rt", encoding="utf-8", newline="") as f:
        reader = csv.DictReader(f)
        return list(reader.fieldnames or []), list(reader)


def alp_lines(path: Path) -> list[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def branch_kind(mnemonic: str) -> str | None:
    if mnemonic in ("cbz", "cbnz", "tbz", "tbnz") or mnemonic.startswith("b."):
        return "conditional"
    return {"b": "direct", "br": "indirect", "blr": "indirect_call", "bl": "call",
            "ret": "return"}.get(mnemonic)


_ATOMIC = re.compile(r"^(ld[ax]*xr[bh]?|st[l]?xr[bh]?|ld[ax]*xp|st[l]?xp|cas\w*|swp\w*|"
                     r"ld(add|clr|eor|set|smax|smin|umax|umin)\w*)$")


def mem_kind(mnemonic: str) -> str | None:
    if mnemonic.startswith("prfm"):
        return "prefetch"
    if _ATOMIC.match(mnemonic):
        return "atomic"
    if mnemonic.startswith("ld"):
        return "load"
    if mnemonic.startswith("st"):
        return "store"
    return None


@dataclass
class Sums:
    """One PC's raw records summed the way docs/formats.md §2 says."""

    asm: str = ""
    iterations: int = 0
    loops: int = 0
    executed: int = 0
    taken: int = 0
    mispredicted: int = 0
    accesses: int = 0
    l1d: int = 0
    tlb: int = 0
    forwarded: int = 0
    latency_x_accesses: float = 0.0
    stage_x_iterations: dict | None = None

    def add(self, rec: dict) -> None:
        self.asm = rec.get("asm", self.asm)
        it = rec["iterations"]
        self.iterations += it
        self.loops += 1
        st = self.stage_x_iterations = self.stage_x_iterations or defaultdict(float)
        for name, value in rec.get("stages", {}).items():
            st[name] += value * it
        if "branch" in rec:
            b = rec["branch"]
            self.executed += b["executed"]
            self.taken += b["taken"]
            self.mispredicted += b["mispredicted"]
        if "mem" in rec:
            m = rec["mem"]
            self.accesses += m["accesses"]
            self.l1d += m.get("l1d_miss", 0)
            self.tlb += m.get("tlb_miss", 0)
            self.forwarded += m.get("store_forwarded", 0)
            self.latency_x_accesses += m["avg_latency"] * m["accesses"]

    def stage(self, name: str) -> float:
        return self.stage_x_iterations[name] / self.iterations

    mp = property(lambda s: s.mispredicted / s.executed)
    taken_rate = property(lambda s: s.taken / s.executed)
    l1d_rate = property(lambda s: s.l1d / s.accesses)
    tlb_rate = property(lambda s: s.tlb / s.accesses)
    fwd_rate = property(lambda s: s.forwarded / s.accesses)
    latency = property(lambda s: s.latency_x_accesses / s.accesses)
    wait = property(lambda s: s.stage("issue") - s.stage("dispatch"))
    execute = property(lambda s: s.stage("complete") - s.stage("issue"))
    per_iteration = property(lambda s: (s.executed or s.accesses) / s.iterations)


def aggregate(records: list[dict]) -> dict[int, Sums]:
    out: dict[int, Sums] = defaultdict(Sums)
    for rec in records:
        out[int(rec["pc"], 16)].add(rec)
    return out


# --- the samples under test -----------------------------------------------------------

@dataclass
class Sample:
    name: str
    folder: Path
    truth: dict
    header: list[str]
    rows: list[dict]
    records: list[dict]

    @property
    def profile(self) -> Path:
        return self.folder / "profile.csv.gz"

    @cached_property
    def model(self):
        """The profile as the project's reader sees it (read once per sample)."""
        return read_profile(self.profile)

    @cached_property
    def sums(self) -> dict[int, Sums]:
        return aggregate(self.records)

    @property
    def alp(self) -> Path:
        return self.folder / "alp.jsonl.gz"


def load(name: str, folder: Path) -> Sample:
    header, rows = profile_rows(folder / "profile.csv.gz")
    truth = json.loads((folder / "truth.json").read_text())
    return Sample(name, folder, truth, header, rows, alp_lines(folder / "alp.jsonl.gz"))


# "blocks-": planned in blocks of 150 windows, as big samples are (layout.BLOCK_WINDOWS).
_SAMPLES = [f"bundled-{n}" for n in NAMES] + ["gen-A-21", "gen-B-22", "gen-C-23",
                                              "gen-planted-24", "blocks-B-25", "blocks-C-26"]
SMALL_BLOCK = 150


@pytest.fixture(scope="module", params=_SAMPLES)
def sample(request, tmp_path_factory) -> Sample:
    name = request.param
    if name.startswith("bundled-"):
        kind = name.removeprefix("bundled-")
        return load(name, bundled(kind).profile.parent)
    how, kind, seed = name.split("-")
    out = tmp_path_factory.mktemp(name)
    if how == "blocks":
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(layout, "BLOCK_WINDOWS", SMALL_BLOCK)
            generate(Options(kind, int(seed), out, windows=4 * SMALL_BLOCK))
        assert json.loads((out / "truth.json").read_text())["blocks"] == 4
    else:
        generate(Options(kind, int(seed), out, windows=130 if kind == "planted" else 150))
    return load(name, out)


@pytest.fixture(scope="module")
def planted_pair(tmp_path_factory) -> tuple[Path, Path, Path]:
    """The planted kind generated twice with seed 7 and once with seed 8."""
    dirs = []
    for seed, tag in ((7, "a"), (7, "b"), (8, "c")):
        out = tmp_path_factory.mktemp(f"det{tag}")
        generate(Options("planted", seed, out, windows=140))
        dirs.append(out)
    return tuple(dirs)


# --- profile ------------------------------------------------------------------------------

def t_windows(sample: Sample) -> int:
    return sample.truth["windows"]


def test_profile_columns_rows_and_pcs(sample):
    kind = sample.truth["kind"]
    want = ["function"] + (["window"] if kind in ("B", "planted") else []) + ["module", "pc",
            "samples"] + (["cycles"] if kind in ("B", "C") else []) + ["asm"]
    assert sample.header == want
    pcs = [r["pc"] for r in sample.rows]
    assert all(PC_RE.match(pc) for pc in pcs)
    assert len(set(pcs)) == len(pcs) == sample.truth["rows"]
    assert all(int(r["samples"]) >= 0 for r in sample.rows)
    if "cycles" in sample.header:
        assert all(int(r["cycles"]) >= 1 and int(r["samples"]) >= 1 for r in sample.rows)
    assert all(r["asm"] and r["asm"] == r["asm"].lower() for r in sample.rows)
    if kind == "A" and t_windows(sample) >= 1000:  # cold rows of a big flat profile
        assert any(int(r["samples"]) == 0 for r in sample.rows)


def test_reader_derives_the_windows_and_hot_set_of_the_truth(sample):
    profile = sample.model
    t = sample.truth
    assert len(profile) == t["rows"]
    assert len(profile.windows) == t["windows"]
    assert profile.total == t["total"]
    assert profile.basis == t["basis"]
    hot = profile.hot_windows()
    if t["blocks"] == 1:
        assert len(hot.windows) == t["hot_windows"]
    else:  # the 90% coverage set of each block: near the whole profile's
        assert abs(len(hot.windows) - t["hot_windows"]) <= 0.1 * t["hot_windows"]
    hot_ids = {profile.windows[w].id for w in hot.windows}
    for entry in t["planted"] + t["lookalikes"]:
        row = profile.row_of(int(entry["pc"], 16))
        assert row is not None
        assert profile.windows[int(profile.window[row])].id == entry["window"]
        assert entry["window"] in hot_ids, entry


def test_windows_labels_only_where_the_kind_has_them(sample):
    if "window" not in sample.header:
        return
    labels = {r["window"] for r in sample.rows}
    assert "" not in labels
    # Some labelled windows sit closer than 64 bytes to the next one in the same function,
    # so deriving windows from address gaps would merge them: the labels must be used.
    by_label: dict[str, list[int]] = defaultdict(list)
    fn_of = {}
    for r in sample.rows:
        by_label[r["window"]].append(int(r["pc"], 16))
        fn_of[r["window"]] = (r["module"], r["function"])
    spans = sorted((min(p), max(p), fn_of[lab]) for lab, p in by_label.items())
    close = sum(1 for a, b in zip(spans, spans[1:], strict=False)
                if a[2] == b[2] and b[0] - a[1] <= 64)
    assert close > 0


def test_realistic_code_and_modules(sample):
    if sample.truth["windows"] < 1000:
        return  # the small generated sets do not need every idiom
    asm = [r["asm"] for r in sample.rows]
    text = "\n".join(asm)
    modules = {r["module"] for r in sample.rows}
    assert "libc.so.6" in modules and len(modules) >= 3
    functions = {r["function"] for r in sample.rows}
    assert any(re.fullmatch(r"<unknown_\d+>", f) for f in functions)
    assert any(f and not f.startswith("<unknown_") for f in functions)
    for idiom in (r"\[x\d+\], #", r"\]!", r"lsl #3\]", r"\bbl #0x", r"\bret\b", r"\bb\.\w+ #0x",
                  r"\bstp x29, x30, \[sp, #-0x"):
        assert re.search(idiom, text), idiom
    backward = 0
    for r in sample.rows:
        m = re.match(r"^(b\.\w+|cbn?z|tbn?z) .*#0x([0-9a-f]+)$", r["asm"])
        backward += bool(m and int(m.group(2), 16) < int(r["pc"], 16))
    assert backward > 50
    if sample.truth["kind"] in ("A", "B", "C"):
        pc_asm = sorted((int(r["pc"], 16), r["asm"]) for r in sample.rows)
        plt = sum(1 for k in range(len(pc_asm) - 3)
                  if pc_asm[k][1].startswith("adrp x16, #0x")
                  and pc_asm[k + 1][1].startswith("ldr x17, [x16, #0x")
                  and pc_asm[k + 2][1].startswith("add x16, x16, #0x")
                  and pc_asm[k + 3][1] == "br x17")
        assert plt >= 8


def test_heavy_tailed_window_weights(sample):
    if sample.truth["windows"] < 1000:
        return
    profile = sample.model
    weights = np.sort(profile.windows.weights())[::-1]
    assert weights[0] > 20 * np.median(weights)
    assert len(profile.windows) >= 2000


# --- ALP ------------------------------------------------------------------------------

def test_alp_records_follow_the_spec(sample):
    seen = set()
    for rec in sample.records:
        key = (rec.get("loop"), rec["pc"])
        assert key not in seen
        seen.add(key)
        assert PC_RE.match(rec["pc"]) and rec["iterations"] > 0
        st = rec["stages"]
        assert list(st) == list(STAGES)
        values = [st[s] for s in STAGES]
        assert values[0] == 0.0 and values == sorted(values)
        assert 0.9 <= st["decode"] <= 1.2 and 2.9 <= st["dispatch"] <= 3.2
        assert st["issue"] >= st["dispatch"] + 0.99
        mnemonic = rec["asm"].split()[0].lower() if "asm" in rec else None
        b, m = rec.get("branch"), rec.get("mem")
        if mnemonic is not None:
            assert (b is not None) == (branch_kind(mnemonic) is not None), rec
            assert (m is not None) == (mem_kind(mnemonic) is not None), rec
            if b:
                assert b["kind"] == branch_kind(mnemonic), rec
            if m:
                assert m["kind"] == mem_kind(mnemonic), rec
        if b:
            assert 0 <= b["mispredicted"] <= b["executed"] and 0 <= b["taken"] <= b["executed"]
        if m:
            acc = m["accesses"]
            assert m.get("llc_miss", 0) <= m.get("l2_miss", 0) <= m.get("l1d_miss", 0) <= acc
            assert m.get("tlb_miss", 0) <= acc and m.get("store_forwarded", 0) <= acc
            assert m["avg_latency"] == pytest.approx(st["complete"] - st["issue"], abs=0.02)
    multi = defaultdict(int)
    for _loop, pc in seen:
        multi[pc] += 1
    assert any(n >= 2 for n in multi.values())


def test_alp_covers_hot_windows_only(sample):
    profile = sample.model
    hot = profile.hot_windows()
    hot_pcs = set(hot.pcs(profile).tolist())
    alp_pcs = {int(r["pc"], 16) for r in sample.records}
    inside = {pc for pc in alp_pcs if pc in hot_pcs}
    outside = alp_pcs - inside
    # Blocks choose their hot windows each by itself: a few are not hot in the whole.
    one_block = sample.truth["blocks"] == 1
    assert len(outside) <= 0.1 * len(alp_pcs)
    windows = hot.windows if one_block else range(len(profile.windows))
    spans = [(profile.windows[w].first_pc, profile.windows[w].last_pc) for w in windows]
    for pc in outside:
        if one_block or profile.row_of(pc) is None:
            # only B leaves cold instructions out of the profile
            assert sample.truth["kind"] == "B" and profile.row_of(pc) is None
            assert any(lo < pc < hi for lo, hi in spans)
    assert len(inside) > 0.8 * len(hot_pcs)


def test_functions_and_modules_hold_disjoint_address_ranges(sample):
    """Each module is one range of addresses and each function one range inside it, in
    every block: no name is given twice."""
    def disjoint(key: str) -> None:
        spans: dict[str, list[int]] = {}
        for row in sample.rows:
            if row[key]:
                pc = int(row["pc"], 16)
                lo, hi = spans.setdefault(row[key], [pc, pc])
                spans[row[key]] = [min(lo, pc), max(hi, pc)]
        ranges = sorted(spans.values())
        assert all(a[1] < b[0] for a, b in zip(ranges, ranges[1:], strict=False)), key
    disjoint("module")
    disjoint("function")


def test_project_reader_aggregates_like_the_spec(sample):
    profile = sample.model
    table = read_alp(sample.alp, profile_pcs=profile.pc)
    mine = sample.sums
    assert len(table.records) == len(mine)
    unmatched = sum(1 for pc in mine if profile.row_of(pc) is None)
    assert table.stats.unmatched == unmatched
    assert (unmatched > 0) == (sample.truth["kind"] == "B")
    for entry in sample.truth["planted"] + sample.truth["lookalikes"]:
        pc = int(entry["pc"], 16)
        rec, ref = table.get(pc), mine[pc]
        assert rec.iterations == ref.iterations
        if rec.branch:
            assert rec.branch.mispredict_rate == pytest.approx(ref.mp)
        if rec.mem:
            assert rec.mem.avg_latency == pytest.approx(ref.latency)
        assert rec.issue_wait == pytest.approx(ref.wait)


# --- planted issues ---------------------------------------------------------------------

EVIDENCE = {  # category -> (planted shows it, look-alike is healthy)
    "indirect-branch": (lambda a: a.mp >= 0.15, lambda a: a.mp < 0.01),
    "branch-mispredict": (lambda a: a.mp >= 0.10, lambda a: a.mp < 0.02),
    "dependent-load": (lambda a: a.latency >= 30 and a.l1d_rate >= 0.3,
                       lambda a: a.latency <= 6 and a.l1d_rate < 0.02),
    "cache-miss": (lambda a: a.l1d_rate >= 0.2 and a.tlb_rate < 0.01,
                   lambda a: a.l1d_rate < 0.02 and a.latency <= 6),
    "atomic-llsc": (lambda a: a.per_iteration >= 2.0, lambda a: a.per_iteration <= 1.1),
    "atomic-contention": (lambda a: a.latency >= 50, lambda a: a.latency <= 12),
    "barrier": (lambda a: a.wait >= 20, lambda a: a.wait <= 8),
    "division": (lambda a: a.execute >= 18, lambda a: a.execute <= 10),
    "store-forwarding": (lambda a: a.fwd_rate <= 0.2 and a.latency >= 10,
                         lambda a: a.fwd_rate >= 0.8 and a.latency <= 6),
    "spin-wait": (lambda a: a.per_iteration >= 10 and a.taken_rate >= 0.9,
                  lambda a: a.per_iteration <= 1.2),
    "tlb-miss": (lambda a: a.tlb_rate >= 0.2, lambda a: a.tlb_rate <= 0.01),
    "fp-dependency": (lambda a: a.wait >= 15, lambda a: a.wait <= 10),
}
EVIDENCE_MNEMONIC = {
    "indirect-branch": r"blr|br", "branch-mispredict": r"b\.\w+|cbn?z|tbn?z",
    "dependent-load": r"ldr", "cache-miss": r"ldp|ldr", "atomic-llsc": r"stl?xr|ldaxr",
    "atomic-contention": r"ldadd\w*|cas\w*|swp\w*", "barrier": r"dmb|dsb",
    "division": r"[us]div", "store-forwarding": r"ldr", "spin-wait": r"b\.\w+",
    "tlb-miss": r"ldr", "fp-dependency": r"fmadd|fmla",
}


def test_truth_format(sample):
    t = sample.truth
    assert {"seed", "kind", "planted", "lookalikes"} <= set(t)
    assert t["planted"] and len(t["planted"]) == len(t["lookalikes"])
    for entry in t["planted"] + t["lookalikes"]:
        assert entry["category"] in CATEGORIES
        assert PC_RE.match(entry["pc"]) and entry["window"].startswith("win:0x")
        assert entry["what"]
    cats = [e["category"] for e in t["planted"]]
    assert len(set(cats)) == len(cats)
    if t["kind"] == "planted":
        assert set(cats) == set(EVIDENCE)


def test_planted_issues_visible_in_alp_and_lookalikes_healthy(sample):
    sums = sample.sums
    for entry in sample.truth["planted"] + sample.truth["lookalikes"]:
        cat = entry["category"]
        agg = sums[int(entry["pc"], 16)]
        planted = entry in sample.truth["planted"]
        assert EVIDENCE[cat][0 if planted else 1](agg), (cat, planted, entry["what"])
        assert not EVIDENCE[cat][1 if planted else 0](agg), (cat, planted)
        mnemonic = entry["asm"].split()[0]
        assert re.fullmatch(EVIDENCE_MNEMONIC[cat], mnemonic), entry
        if cat == "dependent-load":
            m = re.match(r"ldr (x\d+), \[(x\d+)", entry["asm"])
            assert m and m.group(1) == m.group(2)


def test_planted_and_lookalike_share_shape_and_weight(sample):
    profile = sample.model
    asm_of = {r["pc"]: r["asm"].split()[0] for r in sample.rows}
    look = {e["category"]: e for e in sample.truth["lookalikes"]}
    weight = {w.id: w.weight for w in profile.windows}
    for p in sample.truth["planted"]:
        q = look[p["category"]]
        assert p["window"] != q["window"]
        assert 0.75 <= weight[p["window"]] / weight[q["window"]] <= 1.35
        if p["category"] != "spin-wait":  # the healthy spin loop has its backoff
            assert [asm_of[pc] for pc in p["pcs"]] == [asm_of[pc] for pc in q["pcs"]]


# --- determinism, CLI, scale ------------------------------------------------------------

def test_same_seed_same_bytes_other_seed_other_sample(planted_pair):
    a, b, c = planted_pair
    for name in ("profile.csv.gz", "alp.jsonl.gz", "truth.json", "README.md"):
        assert (a / name).read_bytes() == (b / name).read_bytes(), name
    assert (a / "profile.csv.gz").read_bytes() != (c / "profile.csv.gz").read_bytes()
    ta, tc = (json.loads((d / "truth.json").read_text()) for d in (a, c))
    assert {e["pc"] for e in ta["planted"]}.isdisjoint({e["pc"] for e in tc["planted"]})
    assert [e["asm"] for e in ta["planted"]] != [e["asm"] for e in tc["planted"]]


def test_cli_sample_writes_and_reports_bad_options(tmp_path, capsys):
    out = tmp_path / "s"
    assert pcscope_main(["sample", "--kind", "A", "--seed", "5", "--windows", "80",
                         "-o", str(out)]) == 0
    assert "80 windows" in capsys.readouterr().out
    assert {p.name for p in out.iterdir()} == {"profile.csv.gz", "alp.jsonl.gz",
                                               "truth.json", "README.md"}
    assert pcscope_main(["sample", "--kind", "planted", "--windows", "20",
                         "-o", str(tmp_path / "t")]) == 2
    assert capsys.readouterr().err.startswith("pcscope: error: --windows 20 is too few")


def test_blocks_give_the_same_bytes_for_a_seed(tmp_path, monkeypatch):
    monkeypatch.setattr(layout, "BLOCK_WINDOWS", SMALL_BLOCK)
    for tag in ("a", "b"):
        generate(Options("A", 5, tmp_path / tag, windows=3 * SMALL_BLOCK))
    for name in ("profile.csv.gz", "alp.jsonl.gz", "truth.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()


def test_memory_does_not_grow_with_the_size_asked(tmp_path, monkeypatch):
    """Peak traced memory for 12 blocks' worth of windows is about that for 2 (one plan
    for all the windows, as before blocks, took 1.5x here)."""
    monkeypatch.setattr(layout, "BLOCK_WINDOWS", 80)
    generate(Options("A", 3, tmp_path / "warm", windows=640))  # fills the bounded caches
    peaks = {}
    for windows in (160, 960):
        tracemalloc.start()
        try:
            generate(Options("A", 3, tmp_path / str(windows), windows=windows))
            peaks[windows] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert peaks[960] < 1.2 * peaks[160], peaks
    assert int_keys.cache_info().maxsize and fp_keys.cache_info().maxsize  # bounded


@pytest.mark.parametrize("block", [layout.BLOCK_WINDOWS, SMALL_BLOCK])
def test_scale_names_the_rows_it_needs_and_the_least_is_enough(tmp_path, monkeypatch, block):
    monkeypatch.setattr(layout, "BLOCK_WINDOWS", block)
    with pytest.raises(UsageError, match=r"^--scale 1,000 is too few rows for 600 windows: "
                                         r"give at least [\d,]+ \(3 rows a window"):
        generate(Options("C", 3, tmp_path / "few", windows=600, scale=1000))
    with pytest.raises(UsageError) as err:
        generate(Options("C", 3, tmp_path / "few", windows=600, scale=1800))
    least = int(re.search(r"at least ([\d,]+)", str(err.value)).group(1).replace(",", ""))
    assert 3 * 600 < least < 4 * 600
    summary = generate(Options("C", 3, tmp_path / "least", windows=600, scale=least))
    assert (summary.rows, summary.windows) == (least, 600)


@pytest.mark.parametrize("block", [layout.BLOCK_WINDOWS, SMALL_BLOCK])
def test_scale_writes_exact_rows_and_the_alp_size_asked(tmp_path, monkeypatch, block):
    monkeypatch.setattr(layout, "BLOCK_WINDOWS", block)
    said: list[str] = []
    summary = generate(Options("A", 9, tmp_path, scale=12_000, alp_tokens=80_000), said.append)
    header, rows = profile_rows(tmp_path / "profile.csv.gz")
    assert len(rows) == 12_000 == summary.rows
    blocks = json.loads((tmp_path / "truth.json").read_text())["blocks"]
    assert blocks == -(-summary.windows // block) == (1 if block > 1000 else 6)
    assert len(said) == blocks  # progress after each block
    assert said[-1] == (f"{summary.windows:,} of {summary.windows:,} windows written "
                        "(12,000 rows)")
    with gzip.open(tmp_path / "alp.jsonl.gz", "rt") as f:
        chars = sum(len(line) for line in f)
    assert 0.75 * 80_000 <= chars / 4 <= 1.25 * 80_000


# --- bundled --------------------------------------------------------------------------

def test_bundled_samples_are_small_and_complete():
    for name in NAMES:
        s = bundled(name)
        folder = s.profile.parent
        assert s.alp.exists() and s.truth.exists() and (folder / "README.md").exists()
        size = sum(p.stat().st_size for p in folder.iterdir())
        assert size < 5_000_000, (name, size)
        readme = (folder / "README.md").read_text()
        assert len([p for p in readme.split("\n\n") if p.strip()]) == 2  # title + paragraph
    truth = json.loads(bundled().truth.read_text())
    assert truth["kind"] == "C" and truth["windows"] == 3000


def test_bundled_guides_and_unknown_name():
    guides = bundled().guides
    assert guides == sorted(guides)
    assert all(g.suffix == ".md" and g.name.lower() != "readme.md" for g in guides)
    with pytest.raises(UsageError):
        bundled("D")


def test_csv_fields_with_commas_are_quoted(sample):
    raw = gzip.open(sample.profile, "rt").read()
    reparsed = list(csv.reader(io.StringIO(raw)))
    assert all(len(r) == len(sample.header) for r in reparsed)


def test_allocate_is_exact_and_floored():
    from pcscope.samples.generate import allocate

    assert allocate(10, [1.0, 1.0, 2.0], 0) == [2, 3, 5]
    assert allocate(7, [0.0, 5.0, 0.0], 1) == [1, 5, 1]
    assert allocate(3, [0.2, 0.2, 0.2], 1) == [1, 1, 1]
    assert sum(allocate(10**9 + 7, [0.3, 1e-9, 2.5, 0.7], 1)) == 10**9 + 7


def test_bundled_planted_matches_the_generator(planted_sample, tmp_path):
    """The committed data is what the code makes (regenerate the bundles after changes)."""
    s = planted_sample
    truth = json.loads(s.truth.read_text())
    generate(Options("planted", truth["seed"], tmp_path))
    for name in ("profile.csv.gz", "alp.jsonl.gz"):  # content, not zlib's bytes
        assert gzip.decompress((tmp_path / name).read_bytes()) == \
            gzip.decompress((s.profile.parent / name).read_bytes()), name
    assert json.loads((tmp_path / "truth.json").read_text()) == truth
