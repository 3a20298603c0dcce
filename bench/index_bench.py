"""Ingest, reopen and exact-lookup figures for a big profile, beside the floors.

Floors on the same file: `zcat | wc -l` and a whole-process polars `read_csv` (the fastest
columnar parse we know). Targets (issue 2): index ready to browse ≤ 3 s whole process,
reopen ≤ 0.3 s whole process, PC lookup ≤ 0.1 ms p99.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from bench.measure import compile_bytecode, percentile, python, run_process, timed


def floors(profile: Path) -> dict:
    zcat = run_process(["bash", "-c", f"zcat -f {profile} | wc -l"])
    polars_read = run_process(python(
        "import polars as pl, sys; "
        f"pl.read_csv({str(profile)!r}, infer_schema=False)"
    ))
    return {"zcat_wc_s": zcat.seconds, "polars_read_csv_s": polars_read.seconds,
            "polars_read_csv_rss_mb": polars_read.peak_rss_mb}


def ingest(profile: Path, index_dir: Path) -> dict:
    """`pcscope index` from nothing (columnar store, weights, patterns, exact lookup)."""
    shutil.rmtree(index_dir, ignore_errors=True)
    build = run_process(python(
        "from pcscope.index.store import open_workload; "
        f"open_workload({str(profile)!r}, index_dir={str(index_dir)!r})"
    ))
    reopen = [run_process(python(
        "from pcscope.index.store import open_workload; "
        f"open_workload({str(profile)!r}, index_dir={str(index_dir)!r})"
    )) for _ in range(3)]
    return {
        "ingest_s": build.seconds,
        "ingest_rss_mb": build.peak_rss_mb,
        "reopen_s": min(r.seconds for r in reopen),
        "reopen_rss_mb": max(r.peak_rss_mb for r in reopen),
    }


def lookups(workload, count: int = 20000) -> dict:
    from pcscope.core.evidence import EvidenceStore

    profile = workload.profile
    rng = random.Random(5)
    pcs = [int(profile.pc[rng.randrange(len(profile))]) for _ in range(count)]
    it = iter(pcs)
    lookup = timed(lambda: profile.row_of(next(it)), count)
    store = EvidenceStore(workload)
    it2 = iter(pcs)
    around = timed(lambda: store.asm_around(next(it2), 8, 8), 2000)
    return {
        "pc_lookup_p50_ms": percentile(lookup, 50) * 1e3,
        "pc_lookup_p99_ms": percentile(lookup, 99) * 1e3,
        "asm_around_p50_ms": percentile(around, 50) * 1e3,
        "asm_around_p99_ms": percentile(around, 99) * 1e3,
        "hot_selection_ms": min(timed(lambda: profile.hot_windows(), 5)) * 1e3,
        "rows": len(profile),
        "windows": len(profile.windows),
    }



def main(argv: list[str]) -> int:
    """python -m bench.index_bench PROFILE [INDEX_DIR]"""
    import json
    import sys

    from pcscope.index.store import open_workload

    compile_bytecode()
    profile = Path(argv[0])
    index_dir = Path(argv[1]) if len(argv) > 1 else Path("bench/out/index")
    out = {"profile": str(profile), "floors": floors(profile), "index": ingest(profile, index_dir)}
    out["lookups"] = lookups(open_workload(profile, index_dir=index_dir))
    ratio = out["index"]["ingest_s"] / out["floors"]["polars_read_csv_s"]
    out["index"]["ingest_vs_polars_floor"] = round(ratio, 2)
    json.dump(out, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
