"""`make bench`: every benchmark, each in its own process, on inputs made once with a fixed
seed (bench/out/big: 1,000,000 rows and a ~17M-token ALP from the samples generator).

    python -m bench [table index search alp engine calls real briefs tui gem5 sample]
                    [--gem5-size 2G]

``table`` is the issue-17 table: each figure beside its floor measured in the same run.

Targets and floors are printed by each section; the machine's load is printed first,
since two shared cores make every wall time noisy.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

OUT = Path("bench/out")
BIG = OUT / "big"


def ensure_inputs() -> None:
    if (BIG / "profile.csv.gz").exists() and (BIG / "alp.jsonl.gz").exists():
        return
    print("== generating the 1M-row benchmark inputs (samples generator, seed 1)", flush=True)
    subprocess.run([sys.executable, "-m", "pcscope", "sample", "--kind", "C",
                    "--scale", "1000000", "-o", str(BIG)], check=True)


def bundled_c() -> Path:
    from pcscope.samples import bundled

    return bundled("C").profile.parent


def sections(gem5_size: str) -> dict[str, list[str]]:
    profile, alp = str(BIG / "profile.csv.gz"), str(BIG / "alp.jsonl.gz")
    return {
        "table": ["bench.table"],
        "index": ["bench.index_bench", profile, str(OUT / "index")],
        "search": ["bench.search_bench", profile, str(OUT / "text")],
        "alp": ["bench.alp_bench", alp],
        "engine": ["bench.engine_bench"],
        "calls": ["bench.calls_bench"],
        "real": ["bench.real_bench"],
        "briefs": ["bench.brief_bench", str(bundled_c()), str(BIG)],
        "tui": ["bench.tui_bench", str(BIG)],
        "gem5": ["bench.gem5_bench", gem5_size],
        "sample": ["bench.sample_bench"],
    }


def main(argv: list[str]) -> int:
    gem5_size = "2G"
    if "--gem5-size" in argv:
        i = argv.index("--gem5-size")
        gem5_size = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    OUT.mkdir(parents=True, exist_ok=True)
    ensure_inputs()
    table = sections(gem5_size)
    chosen = argv or list(table)
    print(f"load average {os.getloadavg()}, {os.cpu_count()} cores", flush=True)
    failed = []
    for name in chosen:
        print(f"\n== {name}", flush=True)
        start = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", *table[name]])
        print(f"({name}: {time.perf_counter() - start:.1f} s, exit {done.returncode})", flush=True)
        if done.returncode:
            failed.append(name)
    if failed:
        print(f"\nfailed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
