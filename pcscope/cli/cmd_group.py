"""`pcscope group`: instructions grouped by mnemonic, function, window, category or module."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcscope.cli.common import add_input_args, load_workload, positive_int, print_json

if TYPE_CHECKING:  # the query layer imports polars and tantivy: only when grouping runs
    from pcscope.core.queries import GroupResult

# pcscope.index.query.GROUP_KEYS, spelled out to keep `pcscope --help` fast (a test checks).
GROUP_BY = ("mnemonic", "function", "window", "category", "module")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "group",
        help="count, samples and share per mnemonic, function, window, category or module",
        description="Group the profile's instructions (or those --where matches) and print "
        "each group's instruction count, samples and share of the total, heaviest first. "
        "--by category groups the pattern hits (an instruction can be in several).",
    )
    add_input_args(p)
    p.add_argument("--by", required=True, choices=GROUP_BY, help="what to group by")
    p.add_argument("--where", metavar="QUERY",
                   help="only instructions this query matches (syntax of `pcscope search`)")
    p.add_argument("--limit", type=positive_int, default=20, metavar="N",
                   help="at most N groups (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    result = load_workload(args).queries.group(args.by, args.where, args.limit)
    if args.json:
        print_json(result.model_dump())
    else:
        print_result(result)
    return 0


def print_result(result: GroupResult) -> None:
    where = f" matching {result.where!r}" if result.where else ""
    print(f"{result.instructions:,} instructions{where} in {result.total:,} groups by "
          f"{result.by}:")  # fmt: skip
    width = max([len(g.key) for g in result.groups] + [len(result.by)])
    print(f"  {result.by:<{width}}  {'count':>10}  {'samples':>16}  {'share':>8}")
    for g in result.groups:
        print(f"  {g.key:<{width}}  {g.count:>10,}  {g.samples:>16,}  {g.share:8.3%}")
    if result.truncated:
        print(f"  … {result.total - len(result.groups):,} more groups (--limit N to see more)")
