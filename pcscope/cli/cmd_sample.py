"""`pcscope sample`: generate a synthetic workload (profile, raw ALP, ground truth)."""

from __future__ import annotations

import argparse

from pcscope.samples import generate


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
    generate.add_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    return generate.run(args)
