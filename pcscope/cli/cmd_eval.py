"""`pcscope eval`: two strategies on one profile, compared blind by a model judge."""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from pathlib import Path

from pcscope.cli.common import (
    add_input_args,
    add_selection_args,
    load_workload,
    output_file,
    positive_float,
    positive_int,
)
from pcscope.cli.model_args import add_model_args, close_backend, open_backend, suffixed
from pcscope.core import eval as ev
from pcscope.core.errors import UsageError
from pcscope.core.finite_json import dumps
from pcscope.core.textio import open_output

EPILOG = """\
the article's comparisons (M = anthropic:claude-sonnet-5-5, J = anthropic:claude-opus-4-7):
  bounded vs full prompt:   --a full-prompt:M --b bounded:M --judge J
  Table 2 (ALP ablation):   --a bounded:M --a-evidence no-alp --b bounded:M --judge J
  Table 3 (evidence given): --a full-prompt:M --a-evidence selected --b bounded:M --judge J
examples:
  pcscope eval profile.csv.gz --alp alp.jsonl.gz \\
      --a full-prompt:anthropic:claude-sonnet-5-5 --b bounded:anthropic:claude-sonnet-5-5 \\
      --judge anthropic:claude-opus-4-7 --trials 3 --json eval.json --record runs/
  pcscope eval profile.csv.gz --a full-prompt:replay:runs/a.jsonl \\
      --b bounded:replay:runs/b.jsonl --judge replay:runs/judge.jsonl --trials 3
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "eval", help="compare two strategies blind with a model judge",
        description="Run two analysis strategies (bounded or full-prompt, each with its own "
        "model) on PROFILE, then let a judge score both idea sets identity-masked and in "
        "both orders, on usefulness, novelty, grounding, expected upside, guide fit and "
        "follow-up clarity (0-5 each, /30), averaged over trials and orders. A preference "
        "counts only when both orders agree. Both sides get the bundled guides unless --guide "
        "is given. Prints a table (and JSON with --json), with each side's cost in calls, "
        "tokens and seconds.",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_args(p)
    add_selection_args(p)
    p.add_argument("--a", required=True, metavar="STRATEGY:MODEL",
                   help="side A, e.g. full-prompt:anthropic:claude-sonnet-4-5")
    p.add_argument("--b", required=True, metavar="STRATEGY:MODEL",
                   help="side B, e.g. bounded:anthropic:claude-sonnet-4-5")
    for label in ("a", "b"):
        p.add_argument(f"--{label}-evidence", choices=ev.EVIDENCE, default="alp",
                       help=f"side {label.upper()}'s ALP: alp (default), no-alp (Table 2), "
                            "selected (full prompt with the ALP the bounded side selected: "
                            "Table 3)")
    p.add_argument("--judge", required=True, metavar="MODEL",
                   help="anthropic:<model id> or replay:<record file>")
    p.add_argument("--top-ideas", type=positive_int, default=ev.TOP_IDEAS, metavar="N",
                   help=f"ideas per set the judge sees, each set's top N (default "
                        f"{ev.TOP_IDEAS})")
    p.add_argument("--trials", type=positive_int, default=3, metavar="N",
                   help="judgments per order (default 3)")
    p.add_argument("--preset", metavar="NAME", help="analysis preset for both sides")
    p.add_argument("--depth", type=positive_int, metavar="N", help="bounded waves")
    p.add_argument("--concurrency", type=positive_int, metavar="N")
    p.add_argument("--max-calls", type=positive_int, metavar="N", help="per side")
    p.add_argument("--max-tokens", type=positive_int, metavar="N", help="per side")
    p.add_argument("--max-seconds", type=positive_float, metavar="S", help="per side")
    p.add_argument("--json", metavar="FILE", type=output_file,
                   help="write the result as JSON ('-': stdout)")
    p.add_argument("--session", metavar="FILE", help="session store (default: per profile)")
    add_model_args(p, record_metavar="DIR",
                   record_help="store each backend's requests/responses in DIR (a.jsonl, "
                               "b.jsonl, judge.jsonl; replay each with replay:DIR/<file>)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    a, b = ev.Side.parse(args.a, args.a_evidence), ev.Side.parse(args.b, args.b_evidence)
    for side, other in ((a, b), (b, a)):
        if side.evidence == "selected" and other.strategy != "bounded":
            raise UsageError("evidence 'selected' needs the other side to be bounded (its "
                             "calls select the ALP)")
    if not args.guide:
        from pcscope.cli.cmd_analyze import bundled_guides

        args.guide = bundled_guides()
    if args.judge.partition(":")[0] not in ("anthropic", "replay"):
        raise UsageError(f"--judge {args.judge}: the judge must be a model "
                         "(anthropic:<model id> or replay:<record file>)")
    from pcscope.core.engine import presets

    settings = presets.resolve(args.preset, {
        "coverage": args.coverage, "top": args.top, "depth": args.depth,
        "concurrency": args.concurrency, "max_calls": args.max_calls,
        "max_tokens": args.max_tokens, "max_seconds": args.max_seconds})
    if args.record:
        Path(args.record).mkdir(parents=True, exist_ok=True)
    workload = load_workload(args)
    data = asyncio.run(_evaluate(args, workload, settings, a, b))
    if args.json == "-":
        print(dumps(data, indent=2))
        return 0
    print(ev.text_table(data))
    if args.json:
        with open_output(args.json) as out:
            out.write(dumps(data, indent=2) + "\n")
    return 0


async def _evaluate(args, workload, settings, a: ev.Side, b: ev.Side) -> dict:
    from pcscope.core.engine.session_store import SessionStore, default_path
    from pcscope.core.evidence import EvidenceStore
    from pcscope.core.summary import profile_summary, top_windows
    from pcscope.index.store import default_root

    session_path = Path(args.session) if args.session else default_path(
        Path(args.index_dir) if args.index_dir else default_root(), workload.profile.path)
    session_path.parent.mkdir(parents=True, exist_ok=True)
    runs: dict[str, ev.SideRun] = {}
    # a side fed the bounded side's selection runs after it
    order = [("b", b), ("a", a)] if a.evidence == "selected" else [("a", a), ("b", b)]
    with SessionStore(session_path) as session:
        for label, side in order:
            backend = open_backend(side.model, args, workload,
                                   concurrency=settings.concurrency,
                                   record=suffixed(args.record, f"{label}.jsonl"),
                                   trace=suffixed(args.trace, label))
            selected = next((r.selected for r in runs.values()), frozenset())
            try:
                runs[label] = await ev.run_side(side, workload, backend, settings, session,
                                                selected)
            finally:
                await close_backend(backend)
    judge = open_backend(args.judge, args, workload, concurrency=1,
                         record=suffixed(args.record, "judge.jsonl"),
                         trace=suffixed(args.trace, "judge"))
    selection = workload.hot(top=settings.top, coverage=settings.coverage)
    profile = json.dumps({**profile_summary(workload.profile, selection),
                          "top_windows": top_windows(workload.profile, selection)[:20]})
    started = time.monotonic()
    try:
        result = await ev.evaluate(runs["a"], runs["b"], ev.model_judge(judge), args.judge,
                                   args.trials, EvidenceStore(workload), profile,
                                   args.top_ideas, workload.guides)
    finally:
        await close_backend(judge)
    usage = judge.usage
    result.judge_cost = ev.SideCost(judge.calls, usage.input_tokens, usage.output_tokens,
                                    usage.cache_read_tokens, usage.cache_write_tokens,
                                    time.monotonic() - started, judge.cost(usage))
    return ev.to_json(result, workload.profile.path, args.top_ideas)

