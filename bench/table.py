"""The speed table (issue 17): every figure beside a floor measured in the same run.

Floors, each a whole process on the same input: `zcat | wc -l`, a polars `read_csv` of the
profile, a polars `read_ndjson` of the ALP, `python -c 'import numpy'`. Figures: ingest
(1M and 5M rows: time and peak RSS), ALP aggregation (all PCs, hot PCs, 50M tokens),
Tantivy build, reopen + one lookup (`pcscope show`), term and regex search, explorer first
frame. Each runs several times; the table gives min / median, the ratio of the min to its
floor's min, and the load average when the figure started (two shared cores: every wall
time is noisy, a ratio less so).

    python -m bench.table [--runs N] [--scale-runs N] [--no-scale]

The scale inputs are made once from the 1M-row ones (bench/out/scale): the profile five
times over at PCs 2^40 apart, the ALP three times over at PCs 2^40 apart.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from bench.measure import Run, python, run_process

OUT = Path("bench/out")
BIG = OUT / "big"
SCALE = OUT / "scale"
COPY_OFFSET = 1 << 40  # PCs of copy k are shifted by k * 2^40 (no collisions)


@dataclass
class Row:
    name: str
    runs: list[Run] = field(default_factory=list)
    load: float = 0.0
    floor: str | None = None
    target: str = ""
    unit: str = "s"

    def times(self) -> list[float]:
        return [r.seconds for r in self.runs]

    def rss(self) -> float:
        return max((r.peak_rss_mb for r in self.runs), default=float("nan"))


def measure(name: str, argv: list[str], runs: int, *, floor: str | None = None,
            target: str = "", before=None) -> Row:
    row = Row(name, load=os.getloadavg()[0], floor=floor, target=target)
    for _ in range(runs):
        if before is not None:
            before()
        run = run_process(argv, stderr=subprocess.DEVNULL)
        if run.returncode:
            raise RuntimeError(f"{name}: {argv} exited {run.returncode}")
        row.runs.append(run)
    return row


def in_process(name: str, values_ms: list[float], load: float, target: str) -> Row:
    """A figure measured inside one process (search latencies): runs are its samples."""
    return Row(name, [Run(v / 1e3, float("nan"), 0) for v in values_ms], load, None, target,
               "ms")


# -- scale inputs ------------------------------------------------------------------------
def scale_profile(source: Path, copies: int, out: Path) -> Path:
    """``copies`` copies of a profile, copy k at PCs + k * 2^40 (same rows otherwise)."""
    if out.exists():
        return out
    import polars as pl

    frame = pl.read_csv(source, infer_schema=False)
    digits = pl.col("pc").str.strip_prefix("0x")
    if frame.select(digits.str.len_chars().max()).item() > 10:
        raise RuntimeError(f"{source}: PCs of 2^40 and above cannot be shifted by 2^40")
    tmp = out.with_suffix(".tmp")
    with gzip.open(tmp, "wb", compresslevel=1) as f:
        for k in range(copies):
            shifted = pl.format(f"0x{k:x}{{}}", digits.str.zfill(10)) if k else pl.col("pc")
            frame.with_columns(shifted.alias("pc")).write_csv(f, include_header=k == 0)
    tmp.rename(out)
    return out


_PC = re.compile(rb'"pc":\s*"0x([0-9a-fA-F]+)"')


def scale_alp(source: Path, copies: int, out: Path) -> Path:
    """``copies`` copies of an ALP, copy k at PCs + k * 2^40 (a copy's (loop, PC) keys
    are new, so the copies are one valid ALP)."""
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp")
    with gzip.open(source, "rb") as src, gzip.open(tmp, "wb", compresslevel=1) as dst:
        data = src.read()
        for k in range(copies):
            shift = k * COPY_OFFSET
            dst.write(_PC.sub(lambda m, shift=shift: b'"pc":"0x%x"' % (int(m[1], 16) + shift),
                              data))
    tmp.rename(out)
    return out


def make_scale_inputs(profile: Path, alp_path: Path) -> tuple[Path, Path]:
    """The 5M-row profile and 50M-token ALP, made once in a process of their own: a child
    starts at its parent's peak RSS (fork keeps the high-water mark), so this process must
    stay small."""
    big_profile, big_alp = SCALE / "profile-5m.csv.gz", SCALE / "alp-50m.jsonl.gz"
    if not (big_profile.exists() and big_alp.exists()):
        print("== scale inputs (made once)", flush=True)
        SCALE.mkdir(parents=True, exist_ok=True)
        subprocess.run(python(
            "from pathlib import Path; from bench.table import scale_alp, scale_profile; "
            f"scale_profile(Path({str(profile)!r}), 5, Path({str(big_profile)!r})); "
            f"scale_alp(Path({str(alp_path)!r}), 3, Path({str(big_alp)!r}))"), check=True)
    return big_profile, big_alp


# -- the figures -------------------------------------------------------------------------
def floors(profile: Path, alp: Path, runs: int, tag: str) -> list[Row]:
    return [
        measure(f"floor: zcat | wc -l {tag}", ["bash", "-c", f"zcat -f {profile} | wc -l"], runs),
        measure(f"floor: polars read_csv {tag}", python(
            f"import polars as pl; pl.read_csv({str(profile)!r}, infer_schema=False)"), runs),
        measure(f"floor: polars read_ndjson {tag}", python(
            f"import polars as pl; pl.read_ndjson({str(alp)!r})"), runs),
    ]


def ingest(profile: Path, index_dir: Path, runs: int, tag: str, floor: str) -> Row:
    code = ("from pcscope.index.store import open_workload; "
            f"open_workload({str(profile)!r}, index_dir={str(index_dir)!r})")
    return measure(f"ingest {tag} (open_workload, nothing cached)", python(code), runs,
                   floor=floor, target="≤ 3× floor, ≤ 300 MB (1M)",
                   before=lambda: shutil.rmtree(index_dir, ignore_errors=True))


def hot_pcs(profile: Path, out: Path) -> Path:
    """The profile's PCs and its hot windows' PCs (the explorer's trimmed ALP), saved once."""
    if not out.exists():
        subprocess.run(python(
            "import numpy as np; from pcscope.core.readers.profile_csv import read_profile; "
            f"p = read_profile({str(profile)!r}); "
            f"np.savez({str(out)!r}, profile=p.pc, keep=p.hot_windows().pcs(p))"), check=True)
    return out


def alp(path: Path, pcs: Path, runs: int, tag: str, floor: str, hot: bool) -> Row:
    """read_alp whole process, matched against the profile's PCs (as `pcscope index` does),
    keeping every PC or (``hot``) only the hot windows' PCs (the explorer's trimmed ALP)."""
    keep = "d['keep']" if hot else "None"
    code = ("import numpy as np; from pcscope.core.readers.alp import read_alp; "
            f"d = np.load({str(pcs)!r}); "
            f"read_alp({str(path)!r}, profile_pcs=d['profile'], keep_pcs={keep})")
    name = f"ALP {tag} {'hot PCs' if hot else 'all PCs'} (read_alp)"
    return measure(name, python(code), runs, floor=floor,
                   target="no slower than all PCs" if hot else "≤ 2× floor, memory flat")


def reopen(profile: Path, index_dir: Path, pc: str, runs: int) -> Row:
    argv = [sys.executable, "-m", "pcscope", "show", str(profile), pc, "--index-dir",
            str(index_dir)]
    return measure("reopen + one lookup (pcscope show)", argv, runs,
                   floor="floor: python -c 'import numpy'", target="≤ 0.2 s")


_SEARCH_CHILD = r"""
import json, sys, time
from bench.measure import percentile, timed
from bench.search_bench import ASM_REGEXES, TERM_QUERIES
from pcscope.index.query import QueryEngine
from pcscope.index.store import open_workload
w = open_workload(sys.argv[1], index_dir=sys.argv[2])
t = time.perf_counter(); w.text; build = time.perf_counter() - t
engine = QueryEngine.of(w)
engine.regex("ldr", "asm", 10)
term = [s for q in TERM_QUERIES for s in timed(lambda q=q: engine.search(q, 20), 20)]
regex = [s for r in ASM_REGEXES for s in timed(lambda r=r: engine.regex(r, "asm", 20), 10)]
print(json.dumps({"build_s": build, "term_ms": [s * 1e3 for s in term],
                  "regex_ms": [s * 1e3 for s in regex]}))
"""


def search(profile: Path, index_dir: Path, runs: int) -> list[Row]:
    """The Tantivy build (text index removed first) and term / regex latencies."""
    load = os.getloadavg()[0]
    builds, term, regex = [], [], []
    for _ in range(runs):
        for text in index_dir.glob("*/current/text"):
            shutil.rmtree(text)
        done = subprocess.run([sys.executable, "-c", _SEARCH_CHILD, str(profile),
                               str(index_dir)], capture_output=True, text=True, check=True)
        out = json.loads(done.stdout)
        builds.append(Run(out["build_s"], float("nan"), 0))
        term += out["term_ms"]
        regex += out["regex_ms"]
    return [Row("Tantivy build 1M (in process)", builds, load, None, "≤ 3 s"),
            in_process("term search (9 queries × 20)", term, load, "p95 ≤ 2 ms"),
            in_process("regex over all asm (5 × 10)", regex, load, "≤ 50 ms")]


def first_frame(profile: Path, index_dir: Path, runs: int) -> Row:
    from bench.tui_bench import first_frame_runs, prepare_index_apart

    marker = prepare_index_apart(profile, None, index_dir)
    load = os.getloadavg()[0]
    frames = first_frame_runs(profile, None, index_dir, marker, index_dir, runs)
    return Row("explorer first frame (pcscope open)", frames, load,
               "floor: python -c 'import numpy'", "≤ 0.5 s")


# -- printing ----------------------------------------------------------------------------
def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1)))]


def print_table(rows: list[Row]) -> None:
    """min / median (p95 for latencies), peak RSS, and the ratios of min time and peak RSS
    to the floor's (min time, peak RSS) in the same run."""
    by_name = {r.name: r for r in rows}
    print(f"{'figure':52} {'min':>9} {'median':>9} {'p95':>8} {'peak MB':>8} "
          f"{'t÷floor':>8} {'MB÷floor':>8} {'load':>5}  target")
    for r in rows:
        t = r.times()
        ms = r.unit == "ms"
        scale = 1e3 if ms else 1.0
        floor = by_name.get(r.floor or "")
        ratio = f"{min(t) / min(floor.times()):.2f}" if floor else ""
        rss = r.rss()
        has_rss = rss == rss  # NaN for in-process figures
        rss_ratio = f"{rss / floor.rss():.2f}" if floor and has_rss else ""
        p95 = f"{_pct(t, 95) * scale:8.2f}" if ms else ""
        print(f"{r.name:52} {min(t) * scale:8.3f}{'' if ms else 's'} "
              f"{statistics.median(t) * scale:9.3f} {p95:>8} "
              f"{f'{rss:.0f}' if has_rss else '':>8} {ratio:>8} {rss_ratio:>8} "
              f"{r.load:5.1f}  {r.target}")


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.table")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--scale-runs", type=int, default=2)
    ap.add_argument("--no-scale", action="store_true")
    args = ap.parse_args(argv)
    profile, alp_path = BIG / "profile.csv.gz", BIG / "alp.jsonl.gz"
    index_dir = OUT / "table-index"
    print(f"load average at start {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    rows = floors(profile, alp_path, args.runs, "1M")
    rows.append(measure("floor: python -c 'import numpy'", python("import numpy"),
                        args.runs * 2))
    rows.append(ingest(profile, index_dir, args.runs, "1M", "floor: polars read_csv 1M"))
    ndjson = "floor: polars read_ndjson 1M"
    pcs = hot_pcs(profile, OUT / "hot-pcs.npz")
    rows.append(alp(alp_path, pcs, args.runs, "17M tokens", ndjson, hot=False))
    rows.append(alp(alp_path, pcs, args.runs, "17M tokens", ndjson, hot=True))
    first_pc = _first_pc(profile)
    rows.append(reopen(profile, index_dir, first_pc, args.runs * 2))
    rows += search(profile, index_dir, max(1, args.runs - 1))
    rows.append(first_frame(profile, OUT / "table-tui", args.runs))
    if not args.no_scale:
        big_profile, big_alp = make_scale_inputs(profile, alp_path)
        rows += floors(big_profile, big_alp, args.scale_runs, "5M / 50M")
        rows.append(ingest(big_profile, OUT / "table-index-5m", args.scale_runs, "5M",
                           "floor: polars read_csv 5M / 50M"))
        big_pcs = hot_pcs(big_profile, SCALE / "hot-pcs-5m.npz")
        rows.append(alp(big_alp, big_pcs, args.scale_runs, "50M tokens",
                        "floor: polars read_ndjson 5M / 50M", hot=False))
    print()
    print_table(rows)
    return 0


def _first_pc(profile: Path) -> str:
    with gzip.open(profile, "rt") as f:
        header = f.readline().strip().split(",")
        return f.readline().split(",")[header.index("pc")]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
