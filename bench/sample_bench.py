"""Samples generator benchmark: time and peak RSS of `--scale` at growing sizes.

Target (issue 3): the 1M-row / ~17M-token benchmark inputs in <= 60 s, with memory that
does not grow with the size asked (the generator plans a block of windows at a time).
Each size runs in its own process; its peak RSS is that process's own (os.wait4).

    python -m bench.sample_bench [ROWS ...]      # default: 100000 1000000 3000000
"""

from __future__ import annotations

import sys
import tempfile

from bench.measure import run_process

DEFAULT_ROWS = (100_000, 1_000_000, 3_000_000)
TARGET_SECONDS_1M = 60.0


def main(argv: list[str]) -> int:
    sizes = [int(a.replace("_", "")) for a in argv] or list(DEFAULT_ROWS)
    peaks = []
    for rows in sizes:
        with tempfile.TemporaryDirectory(prefix="pcscope-sample-bench-") as out:
            run = run_process([sys.executable, "-m", "pcscope", "sample", "--kind",
                               "C", "--scale", str(rows), "-o", out])
        if run.returncode:
            print(f"--scale {rows:,}: exit {run.returncode}")
            return 1
        peaks.append(run.peak_rss_mb)
        per_million = run.seconds / rows * 1e6
        print(f"--scale {rows:>9,} rows: {run.seconds:6.1f} s ({per_million:.1f} s per 1M "
              f"rows; target {TARGET_SECONDS_1M:.0f} s for 1M), peak RSS "
              f"{run.peak_rss_mb:.1f} MB", flush=True)
    print(f"peak RSS from the smallest to the largest size: {peaks[0]:.1f} -> "
          f"{peaks[-1]:.1f} MB (target: does not grow)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
