"""The speed table (issue 17): every figure beside a floor measured in the same run.

Floors, each a whole process on the same input: `zcat | wc -l`, a polars `read_csv` of the
profile, a polars `read_ndjson` of the ALP, `python -c 'import numpy'`. Figures: ingest
(1M and 5M rows: time and peak RSS), the whole `pcscope index` command (ingest plus the two
parts built on first use: the text index and the mechanisms), ALP aggregation (all PCs, hot
PCs, 50M tokens), text index build, mechanism grouping, reopen + one lookup (`pcscope
show`), term and regex search, explorer first frame. Each figure runs several times in turn with its floor (round by round, so both see
the same load); the table gives min / median, the ratios of min time and peak RSS to the
floor's, and the load average when the pair started (two shared cores: every wall time is
noisy, a ratio less so).

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
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from bench.measure import Run, compile_bytecode, python, run_process

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


@dataclass
class Plan:
    """One row to measure: its command and what must happen before each run."""

    row: Row
    argv: list[str]
    before: Callable[[], object] | None = None


def one_run(plan: Plan) -> Run:
    if plan.before is not None:
        plan.before()
    run = run_process(plan.argv, stderr=subprocess.DEVNULL)
    if run.returncode:
        raise RuntimeError(f"{plan.row.name}: {plan.argv} exited {run.returncode}")
    return run


def interleaved(plans: list[Plan], runs: int) -> list[Row]:
    """Run the plans in turn, ``runs`` rounds: a figure and its floor see the same load
    (measured one after the other, minutes apart, their ratio moved by 2× here)."""
    for plan in plans:
        plan.row.load = os.getloadavg()[0]
    for _ in range(runs):
        for plan in plans:
            plan.row.runs.append(one_run(plan))
    return [plan.row for plan in plans]


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
def zcat(profile: Path, tag: str) -> Plan:
    return Plan(Row(f"floor: zcat | wc -l {tag}"),
                ["bash", "-c", f"zcat -f {profile} | wc -l"])


def read_csv(profile: Path, tag: str) -> Plan:
    return Plan(Row(f"floor: polars read_csv {tag}"), python(
        f"import polars as pl; pl.read_csv({str(profile)!r}, infer_schema=False)"))


def read_ndjson(alp_path: Path, tag: str) -> Plan:
    return Plan(Row(f"floor: polars read_ndjson {tag}"), python(
        f"import polars as pl; pl.read_ndjson({str(alp_path)!r})"))


def import_numpy(tag: str) -> Plan:
    return Plan(Row(f"floor: python -c 'import numpy' ({tag})"), python("import numpy"))


def ingest(profile: Path, index_dir: Path, tag: str, floor: Plan) -> Plan:
    """The index build from nothing (arrays, windows, instruction facts, patterns), whole
    process: what every command waits for before its first answer."""
    code = ("from pcscope.index.store import open_workload; "
            f"open_workload({str(profile)!r}, index_dir={str(index_dir)!r})")
    return Plan(Row(f"ingest {tag} (open_workload, nothing cached)", floor=floor.row.name,
                    target="≤ 3× floor, ≤ 300 MB (1M)"), python(code),
                lambda: shutil.rmtree(index_dir, ignore_errors=True))


def index_command(profile: Path, index_dir: Path, tag: str, floor: Plan) -> Plan:
    """`pcscope index` from nothing, whole process: the build, then the text index and the
    mechanisms (the parts other commands build on first use)."""
    argv = [sys.executable, "-m", "pcscope", "index", str(profile), "--index-dir",
            str(index_dir), "--rows", "1"]
    return Plan(Row(f"pcscope index {tag} (+ text index, mechanisms)", floor=floor.row.name),
                argv, lambda: shutil.rmtree(index_dir, ignore_errors=True))


def hot_pcs(profile: Path, out: Path) -> Path:
    """The profile's PCs and its hot windows' PCs (the explorer's trimmed ALP), saved once."""
    if not out.exists():
        subprocess.run(python(
            "import numpy as np; from pcscope.core.readers.profile_csv import read_profile; "
            f"p = read_profile({str(profile)!r}); "
            f"np.savez({str(out)!r}, profile=p.pc, keep=p.hot_windows().pcs(p))"), check=True)
    return out


def alp(path: Path, pcs: Path, tag: str, floor: Plan, hot: bool) -> Plan:
    """read_alp whole process, matched against the profile's PCs (as `pcscope index` does),
    keeping every PC or (``hot``) only the hot windows' PCs (the explorer's trimmed ALP);
    ``floor`` is the JSON read (all PCs) or the all-PCs run (hot)."""
    keep = "d['keep']" if hot else "None"
    code = ("import numpy as np; from pcscope.core.readers.alp import read_alp; "
            f"d = np.load({str(pcs)!r}); "
            f"read_alp({str(path)!r}, profile_pcs=d['profile'], keep_pcs={keep})")
    name = f"ALP {tag} {'hot PCs' if hot else 'all PCs'} (read_alp)"
    target = "≤ 1× all PCs" if hot else "≤ 2× floor, memory flat"
    return Plan(Row(name, floor=floor.row.name, target=target), python(code))


def reopen(profile: Path, index_dir: Path, pc: str, floor: Plan) -> Plan:
    argv = [sys.executable, "-m", "pcscope", "show", str(profile), pc, "--index-dir",
            str(index_dir)]
    return Plan(Row("reopen + one lookup (pcscope show)", floor=floor.row.name,
                    target="≤ 0.2 s"), argv)


_SEARCH_CHILD = r"""
import json, sys, time
from bench.measure import percentile, timed
from bench.search_bench import ASM_REGEXES, TERM_QUERIES
from pcscope.index.query import QueryEngine
from pcscope.index.store import open_workload
w = open_workload(sys.argv[1], index_dir=sys.argv[2])
t, cpu = time.perf_counter(), time.process_time()
w.text
build, build_cpu = time.perf_counter() - t, time.process_time() - cpu
t, cpu = time.perf_counter(), time.process_time()
w.mechanisms
grouping, grouping_cpu = time.perf_counter() - t, time.process_time() - cpu
engine = QueryEngine.of(w)
engine.regex("ldr", "asm", 10)
term = [s for q in TERM_QUERIES for s in timed(lambda q=q: engine.search(q, 20), 20)]
term_cpu = [s for q in TERM_QUERIES
            for s in timed(lambda q=q: engine.search(q, 20), 20, time.process_time)]
regex = [s for r in ASM_REGEXES for s in timed(lambda r=r: engine.regex(r, "asm", 20), 10)]
print(json.dumps({"build_s": build, "build_cpu_s": build_cpu,
                  "grouping_s": grouping, "grouping_cpu_s": grouping_cpu,
                  "term_ms": [s * 1e3 for s in term], "term_cpu_ms": [s * 1e3 for s in term_cpu],
                  "regex_ms": [s * 1e3 for s in regex]}))
"""


def search(profile: Path, index_dir: Path, runs: int) -> list[Row]:
    """The text index build and the mechanism grouping (each removed first), and term /
    regex latencies; the builds and the term search also in CPU time of the process (less
    inflated by a shared machine)."""
    load = os.getloadavg()[0]
    builds, build_cpus, term, term_cpu, regex = [], [], [], [], []
    groupings, grouping_cpus = [], []
    for _ in range(runs):
        for part in [*index_dir.glob("*/current/text"), *index_dir.glob("*/current/mechanisms")]:
            shutil.rmtree(part)
        done = subprocess.run([sys.executable, "-c", _SEARCH_CHILD, str(profile),
                               str(index_dir)], capture_output=True, text=True, check=True)
        out = json.loads(done.stdout)
        builds.append(Run(out["build_s"], float("nan"), 0))
        build_cpus.append(Run(out["build_cpu_s"], float("nan"), 0))
        groupings.append(Run(out["grouping_s"], float("nan"), 0))
        grouping_cpus.append(Run(out["grouping_cpu_s"], float("nan"), 0))
        term += out["term_ms"]
        term_cpu += out["term_cpu_ms"]
        regex += out["regex_ms"]
    return [Row("text index build 1M (in process)", builds, load, None, "≤ 3 s"),
            Row("text index build 1M, CPU time", build_cpus, load, None, ""),
            Row("mechanism grouping 1M (first use, in process)", groupings, load, None, ""),
            Row("mechanism grouping 1M, CPU time", grouping_cpus, load, None, ""),
            in_process("term search (9 queries × 20)", term, load, "p95 ≤ 2 ms"),
            in_process("term search, CPU time (9 queries × 20)", term_cpu, load, ""),
            in_process("regex over all asm (5 × 10)", regex, load, "≤ 50 ms")]


def first_frame(profile: Path, index_dir: Path, runs: int) -> list[Row]:
    """`pcscope open` to the hottest window's row on a pseudo-terminal, in turn with the
    numpy-import floor."""
    from bench.tui_bench import first_frame_runs, prepare_index_apart

    marker = prepare_index_apart(profile, None, index_dir)
    floor = import_numpy("first frame")
    row = Row("explorer first frame (pcscope open)", load=os.getloadavg()[0],
              floor=floor.row.name, target="≤ 0.5 s")
    floor.row.load = row.load
    for _ in range(runs):
        floor.row.runs.append(one_run(floor))
        row.runs += first_frame_runs(profile, None, index_dir, marker, index_dir, 1)
    return [floor.row, row]


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
    compile_bytecode()
    print(f"load average at start {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    rows = interleaved([zcat(profile, "1M")], args.runs)
    csv = read_csv(profile, "1M")
    # The whole command runs last in each round: it leaves the index as `pcscope index`
    # does (text index and mechanisms built) for the lookups below.
    rows += interleaved([csv, ingest(profile, index_dir, "1M", csv),
                         index_command(profile, index_dir, "1M", csv)], args.runs)
    pcs = hot_pcs(profile, OUT / "hot-pcs.npz")
    ndjson = read_ndjson(alp_path, "17M tokens")
    every = alp(alp_path, pcs, "17M tokens", ndjson, hot=False)
    rows += interleaved([ndjson, every, alp(alp_path, pcs, "17M tokens", every, hot=True)],
                        args.runs)
    numpy = import_numpy("reopen")
    rows += interleaved([numpy, reopen(profile, index_dir, _first_pc(profile), numpy)],
                        args.runs * 2)
    rows += search(profile, index_dir, max(1, args.runs - 1))
    rows += first_frame(profile, OUT / "table-tui", args.runs)
    if not args.no_scale:
        big_profile, big_alp = make_scale_inputs(profile, alp_path)
        rows += interleaved([zcat(big_profile, "5M")], args.scale_runs)
        csv = read_csv(big_profile, "5M")
        rows += interleaved([csv, ingest(big_profile, OUT / "table-index-5m", "5M", csv)],
                            args.scale_runs)
        big_pcs = hot_pcs(big_profile, SCALE / "hot-pcs-5m.npz")
        ndjson = read_ndjson(big_alp, "50M tokens")
        rows += interleaved([ndjson, alp(big_alp, big_pcs, "50M tokens", ndjson, hot=False)],
                            args.scale_runs)
    print()
    print_table(rows)
    return 0


def _first_pc(profile: Path) -> str:
    with gzip.open(profile, "rt") as f:
        header = f.readline().strip().split(",")
        return f.readline().split(",")[header.index("pc")]


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
