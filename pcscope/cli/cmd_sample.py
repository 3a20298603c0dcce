"""`pcscope sample`: generate a synthetic workload (profile, raw ALP, ground truth)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcscope.cli.common import positive_int, progress_status
from pcscope.samples.generate import TOKENS_PER_ROW, Options, generate
from pcscope.samples.kinds import KINDS
from pcscope.samples.layout import BLOCK_WINDOWS


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sample",
        help="generate a synthetic workload with planted issues",
        description="Write DIR/profile.csv.gz, DIR/alp.jsonl.gz (raw ALP for the hot\n"
        "windows), DIR/truth.json (planted issues and benign look-alikes) and DIR/README.md.\n"
        "The same options give byte-identical files; --scale streams benchmark-size inputs\n"
        "window by window (the file is never held in memory).",
        epilog="examples:\n  pcscope sample --kind planted --seed 7 -o /tmp/planted\n"
        "  pcscope sample --kind C --scale 1000000 -o /tmp/big   # ~17M ALP tokens",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--kind", choices=sorted(KINDS), default="C",
                   help="A: flat infrastructure, B: lookup-heavy service, C: runtime "
                   "with indirect dispatch (default), planted: every issue category")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--windows", type=positive_int, metavar="N",
                   help="number of windows (default: per kind)")
    p.add_argument("--scale", type=positive_int, metavar="ROWS",
                   help="exactly ROWS profile rows (benchmark size, e.g. 1000000); "
                   f"planned {BLOCK_WINDOWS:,} windows at a time, so memory does not "
                   "grow with ROWS")
    p.add_argument("--alp-tokens", type=positive_int, metavar="N",
                   help="target ALP size in tokens (characters / 4); default with "
                   f"--scale: {TOKENS_PER_ROW} per row, else every hot window")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output directory")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    opts = Options(args.kind, args.seed, Path(args.out), args.windows, args.scale,
                   args.alp_tokens)
    with progress_status("generating") as say:
        summary = generate(opts, say)
    print(summary.line(opts.kind, opts.seed))
    return 0
