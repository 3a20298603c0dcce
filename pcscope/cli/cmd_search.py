"""`pcscope search`: instructions by Tantivy query or regex, heaviest first."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from pcscope.cli.common import add_input_args, load_workload, positive_int, print_json
from pcscope.core.errors import UsageError

if TYPE_CHECKING:  # the query layer imports polars and tantivy: only when a search runs
    from pcscope.index.query import SearchResult

QUERY_HELP = """\
query syntax (Tantivy): terms are AND-ed (ldr x17), "a phrase", a OR b, -term,
field:value with fields asm, mnemonic (any spelling: b.cs finds b.hs), base ([x16 is
base:x16), function (or fn:<id>), window (win:0x… or a label), module, samples
(samples:>1000, samples:[10 TO 99]). With --regex: a regular expression, case-insensitive,
matched anywhere in each instruction's text (--field asm) or in its mnemonic (--field
mnemonic); anchor with ^ and $."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "search",
        help="find instructions by query or regex, heaviest first",
        description="Find instructions by a Tantivy query (or a regex with --regex), sorted "
        "by samples, descending. A QUERY of `mech:` or `mech:<kind>` lists the mechanisms "
        "(sites grouped across the workload) instead, heaviest first.",
        epilog=QUERY_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_input_args(p)
    p.add_argument("query", metavar="QUERY", help="Tantivy query, or a regex with --regex")
    p.add_argument("--regex", action="store_true", help="QUERY is a regular expression")
    p.add_argument("--field", choices=("asm", "mnemonic"),
                   help="with --regex: match the instruction text (default) or the mnemonic")
    p.add_argument("--limit", type=positive_int, default=20, metavar="N",
                   help="at most N hits (default 20)")
    p.add_argument("--json", action="store_true", help="machine-readable output (formats.md §5)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pcscope.index.query import QueryEngine

    if args.field and not args.regex:
        raise UsageError("--field applies to --regex only")
    workload = load_workload(args)
    if args.query.startswith("mech:") and not args.regex:
        return _mechanisms(workload, args)
    engine = QueryEngine.of(workload)
    if args.regex:
        result = engine.regex(args.query, args.field or "asm", args.limit)
    else:
        result = engine.search(args.query, args.limit)
    if args.json:
        print_json(result.model_dump())
    else:
        print_result(result)
    return 0


def _mechanisms(workload, args: argparse.Namespace) -> int:
    """``mech:`` or ``mech:<kind>``: the mechanisms whose ID starts so, heaviest first."""
    found = [m for m in workload.mechanisms if m.id.startswith(args.query)]
    shown = found[:args.limit]
    if args.json:
        print_json({"query": args.query, "total": len(found), "mechanisms": [
            {"id": m.id, "kind": m.kind, "category": m.category, "share": round(m.share, 6),
             "sites": len(m.sites), "functions": list(m.functions[:8]),
             "metrics": {x.name: x.value for x in m.metrics}} for m in shown]})
        return 0
    print(f"{len(found):,} mechanisms match {args.query!r}:")
    for m in shown:
        print(f"  {m.id:<36} {m.share:8.3%}  {len(m.sites):>4} site(s)  "
              f"{', '.join(m.functions[:3])}")
    if len(found) > len(shown):
        print(f"  … {len(found) - len(shown):,} more (--limit N to see more)")
    return 0


def print_result(result: SearchResult) -> None:
    shown = len(result.hits)
    what = "regex" if result.kind == "regex" else "query"
    print(f"{result.total:,} instructions match {what} {result.query!r}"
          + (f"; the {shown:,} heaviest:" if result.truncated else ":"))  # fmt: skip
    for hit in result.hits:
        print(f"  {hit.pc:>14}  {hit.samples:>14,}  {hit.share:8.3%}  {hit.asm:<32}  "
              f"{hit.function or '(no function)'}  {hit.window}")
    if result.truncated:
        print(f"  … {result.total - shown:,} more (--limit N to see more)")
