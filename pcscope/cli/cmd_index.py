"""`pcscope index`: build (or reopen) the index and summarise the hot windows."""

from __future__ import annotations

import argparse

from pcscope.cli.common import (
    add_input_args,
    add_selection_args,
    load_workload,
    positive_int,
    print_json,
    progress_status,
)
from pcscope.core.summary import index_summary


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "index",
        help="index a profile (and ALP, guides) and list its hot windows",
        description="Index a profile once (reused while the inputs are unchanged) and print "
        "its hot windows: descending weight until --top N windows or --coverage C of the "
        "total, whichever comes first.",
    )
    add_input_args(p)
    add_selection_args(p)
    p.add_argument("--json", action="store_true", help="machine-readable output (docs/formats.md §5)")
    p.add_argument("--rows", type=positive_int, default=20, metavar="N",
                   help="hot windows to print in the table (default 20; --json lists all)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    workload = load_workload(args)
    # Search and analysis are ready with the index: both parts built on first use are
    # built here.
    with progress_status("indexing text"):
        workload.text  # noqa: B018
    with progress_status("grouping mechanisms"):
        workload.mechanisms  # noqa: B018
    selection = workload.hot(top=args.top, coverage=args.coverage)
    summary = index_summary(workload, selection)
    if args.json:
        print_json(summary)
        return 0
    print_summary(summary, args.rows)
    return 0


def print_summary(summary: dict, rows: int) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console()
    console.print(
        f"[bold]{summary['path']}[/]: {summary['instructions']:,} instructions, "
        f"{summary['windows']:,} windows, {summary['functions']:,} functions, "
        f"total {summary['total']:,} {summary['basis']}"
    )
    console.print(
        f"hot selection: {summary['selected_windows']:,} windows cover "
        f"{summary['coverage']:.1%} of the total"
    )
    table = Table(box=None, pad_edge=False)
    for col, justify in (("#", "right"), ("weight", "right"), ("window", "left"),
                         ("function", "left"), ("instr", "right"), ("module", "left")):
        table.add_column(col, justify=justify)
    for i, w in enumerate(summary["top_windows"][:rows], 1):
        table.add_row(str(i), f"{w['weight']:.2%}", w["id"], w["function"] or "-",
                      str(w["instructions"]), w["module"] or "-")
    console.print(table)
    if summary["patterns"]:
        hits = ", ".join(f"{k} {v}" for k, v in sorted(summary["patterns"].items()))
        console.print(f"patterns: {hits}")
    if "alp" in summary:
        a = summary["alp"]
        console.print(
            f"ALP: {a['records']:,} records over {a['pcs']:,} PCs ({a['unmatched']:,} "
            f"unmatched); {a['raw_tokens']:,} tokens raw, {a['trimmed_tokens']:,} trimmed"
            + (f"; {a['skipped_lines']:,} bad lines skipped (--skip-bad-lines)"
               if a["skipped_lines"] else "")
        )
