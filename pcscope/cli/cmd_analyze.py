"""`pcscope analyze`: bounded analysis of the hot windows into ranked, validated ideas."""

from __future__ import annotations

import argparse
import asyncio
import signal
import sys
from collections import Counter
from pathlib import Path

from pcscope.cli.common import (
    add_input_args,
    add_selection_args,
    default_guides,
    load_workload,
    output_file,
    positive_float,
    positive_int,
    progress_status,
)
from pcscope.cli.model_args import MODEL_HELP, add_model_args, close_backend, open_backend
from pcscope.core.backends.registry import BackendOptions, check
from pcscope.core.contract.findings import CATEGORIES
from pcscope.core.engine.events import BudgetReached, CallFinished, EventBus, WaveStarted
from pcscope.core.engine.hints import HintText, read_hint_file
from pcscope.core.engine.orchestrator import Orchestrator, Reviewer, RunResult
from pcscope.core.engine.presets import Settings, available, resolve
from pcscope.core.engine.report import analyst_label, build_report, markdown_report
from pcscope.core.engine.session_store import SessionStore, default_path
from pcscope.core.errors import ModelCallsFailed, UsageError
from pcscope.core.finite_json import dumps
from pcscope.core.textio import open_output

DESCRIPTION = """\
Rank the candidates (the mechanisms found in the profile, and hot windows that hold none)
by own share (plus what measured ALP figures past their thresholds add) x a modelled
penalty per kind, and run one bounded call per candidate (or a few related ones)
concurrently, in waves: each call sees only its brief's evidence under stable IDs, may
read more through tools, and proposes findings that are validated against
what it was given. The preset bounds the whole run whatever the profile's size (quick <= 12
calls, standard <= 60, deep <= 200, deeper waves included); the report says which share of
the selected cycles the calls examined and what they left out. Valid findings merge into
ideas, one per mechanism; open questions go one wave deeper (--depth). Budgets stop the run
cleanly and keep everything. Every call is recorded (see `pcscope calls`).

Ideas rank by expected upside = own share x modelled penalty x confidence. In the JSON
report an idea's "weight" is its own share (its PCs and its mechanisms' sites, each
instruction counted once); "window_weight" is the share of the windows holding its PCs
and its mechanisms' sites, "pc_weight" the share of its cited PCs alone, "upside" and
"upside_how" the expected upside and how it was computed, "mechanisms" its mech: IDs.

The default model is the offline analyst: deterministic, rule-based, no network. Without
--guide the bundled uArch and software optimization guides ground the recommendations.
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("analyze", help="bounded analysis into grounded, ranked ideas",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_args(p)
    add_selection_args(p)
    p.set_defaults(coverage=None)  # let the preset decide unless given
    g = p.add_argument_group("analysis")
    g.add_argument("--model", metavar="NAME", default="offline",
                   help=f"{MODEL_HELP}, scripted:MODES (tests)")
    g.add_argument("--strategy", choices=("bounded", "full-prompt"), default="bounded",
                   help="bounded calls on ranked candidates (default) or the legacy single "
                        "full prompt")
    g.add_argument("--review", choices=("rules", "model"), default="rules",
                   help="gatekeeper review after each wave: rules (default) or one model call")
    g.add_argument("--preset", metavar="NAME",
                   help=f"analysis preset (bundled: {', '.join(available())}; default standard)")
    g.add_argument("--depth", type=positive_int, metavar="N", help="waves (default 2)")
    g.add_argument("--concurrency", type=positive_int, metavar="N",
                   help="calls at once (default 8)")
    g.add_argument("--max-calls", type=positive_int, metavar="N",
                   help="calls in the whole run, every wave included (the plan fits it)")
    g.add_argument("--max-tokens", type=positive_int, metavar="N", help="token budget")
    g.add_argument("--max-seconds", type=positive_float, metavar="S", help="wall-clock budget")
    g.add_argument("--focus", metavar="CATS", type=_categories,
                   help=f"comma-separated categories to concentrate on ({', '.join(CATEGORIES)})")
    g.add_argument("--hint", metavar="TEXT", action="append", default=[],
                   help="engineer's note: '[0xPC|win:0x…] text'; repeatable")
    g.add_argument("--hint-file", metavar="FILE", action="append", default=[],
                   help="file of hints, one per line")
    o = p.add_argument_group("output and record")
    o.add_argument("--json", metavar="FILE", type=output_file,
                   help="JSON report (docs/formats.md §4); '-' = stdout")
    o.add_argument("--markdown", metavar="FILE", type=output_file,
                   help="Markdown report; '-' = stdout")
    o.add_argument("--session", metavar="FILE",
                   help="session store (default: <index dir>/sessions/<profile hash>.sqlite)")
    o.add_argument("--fresh", action="store_true",
                   help="when the session store is damaged, move it aside and start a new one")
    o.add_argument("--resume", action="store_true",
                   help="continue the last unfinished run with the same settings")
    o.add_argument("--quiet", action="store_true", help="no progress or summary on stderr")
    add_model_args(o)
    p.set_defaults(func=run)


def _categories(text: str) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()]


def settings_of(args: argparse.Namespace) -> Settings:
    return resolve(args.preset, {
        "coverage": args.coverage, "top": args.top, "depth": args.depth,
        "concurrency": args.concurrency, "max_calls": args.max_calls,
        "max_tokens": args.max_tokens, "max_seconds": args.max_seconds, "focus": args.focus,
    })


def session_path(args: argparse.Namespace, profile: str) -> Path:
    if args.session:
        return Path(args.session)
    from pcscope.index.store import default_root

    return default_path(Path(args.index_dir) if args.index_dir else default_root(), profile)


def run(args: argparse.Namespace) -> int:
    settings = settings_of(args)
    check(args.model, BackendOptions(offline_only=args.offline))
    hints = [HintText(text, "--hint") for text in args.hint]
    for path in args.hint_file:
        hints += read_hint_file(path)
    workload = load_workload(args, default_guides(settings))
    with progress_status("grouping mechanisms"):  # the candidates: built by the first use
        workload.mechanisms  # noqa: B018
    backend = open_backend(args.model, args, workload, concurrency=settings.concurrency,
                           record=args.record, trace=args.trace)
    bus = EventBus()
    if not args.quiet:
        bus.listen(_progress(sys.stderr))
    with SessionStore(session_path(args, args.profile), fresh=args.fresh) as session:
        kind = _strategy(args.strategy)
        orchestrator = kind(workload, backend, settings, session, bus=bus, hints=hints,
                            resume=args.resume, reviewer=_reviewer(args.review, backend))
        result = asyncio.run(_run(orchestrator))
        report = build_report(result, workload)
    if args.json:
        with open_output(args.json) as f:
            f.write(dumps(report, indent=2) + "\n")
    if args.markdown:
        with open_output(args.markdown) as f:
            f.write(markdown_report(report, workload))
    if not args.quiet:
        _summary(result, report, sys.stderr)
    if result.stop_reason == "cancelled":
        return 130
    _check_calls(result, backend)
    return 0


def _check_calls(result: RunResult, backend) -> None:
    """A run whose every call failed is an error, named with its reason and endpoint; one
    where some failed says so even when quiet: their ideas are missing from the report."""
    failed = [c for c in result.calls if c.status == "failed"]
    if not failed:
        return
    reason, times = Counter(c.error or "unknown" for c in failed).most_common(1)[0]
    if len(failed) == len(result.calls):
        raise ModelCallsFailed(len(failed), reason, times,
                               getattr(backend, "endpoint", backend.name))
    print(f"pcscope: warning: {len(failed)} of {len(result.calls)} calls failed, so their "
          f"ideas are missing; most often ({times}×): {reason}", file=sys.stderr)


def _strategy(name: str) -> type[Orchestrator]:
    if name == "full-prompt":
        from pcscope.core.engine.full_prompt import FullPromptOrchestrator

        return FullPromptOrchestrator
    return Orchestrator


def _reviewer(name: str, backend) -> Reviewer | None:
    if name == "rules":
        return None
    if not hasattr(backend, "ask"):
        raise UsageError(f"--review model needs a model backend, not {backend.name}")
    from pcscope.core.engine.model_review import review_wave

    return lambda accepted, store, wave, limit: review_wave(backend, accepted, store, wave,
                                                            limit)


async def _run(orchestrator: Orchestrator) -> RunResult:
    loop = asyncio.get_running_loop()
    try:
        loop.add_signal_handler(signal.SIGINT, orchestrator.cancel)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        pass
    try:
        return await orchestrator.run()
    finally:
        await close_backend(orchestrator.backend)
        try:
            loop.remove_signal_handler(signal.SIGINT)
        except (NotImplementedError, RuntimeError):
            pass


def _progress(stream):
    state = {"done": 0, "queued": 0}

    def on_event(event) -> None:
        if isinstance(event, WaveStarted):
            state["queued"] += event.calls
            print(f"wave {event.wave}: {event.calls} calls", file=stream)
        elif isinstance(event, CallFinished):
            state["done"] += 1
            if stream.isatty():
                print(f"\r{state['done']}/{state['queued']} calls", end="", file=stream)
        elif isinstance(event, BudgetReached):
            print(f"\nbudget {event.budget} reached ({event.used:g} of {event.limit:g}); "
                  f"stopping", file=stream)

    return on_event


def _summary(result: RunResult, report: dict, stream) -> None:
    cost = report["cost"]
    if stream.isatty():
        print(file=stream)
    print(f"{analyst_label(result.model)}: {len(result.ideas)} ideas from {cost['calls']} calls "
          f"({len(result.rejected)} findings rejected), stopped: {result.stop_reason}, "
          f"{cost['seconds']:.1f} s, run {result.run}", file=stream)
    plan = result.plan
    if plan is not None:
        print(f"examined {plan.examined_share:.1%} of the selected cycles in {len(plan.calls)} "
              f"first-wave calls; left out {len(plan.left_out):,} of {plan.candidates:,} "
              f"candidates ({sum(c.share for c in plan.left_out):.2%} of the total)",
              file=stream)
    for rank, idea in enumerate(result.ideas[:20], 1):
        pcs = ", ".join(f"0x{pc:x}" for pc in idea.pcs[:3])
        print(f"{rank:>3}. {idea.score:7.3%} upside ({idea.weight:.2%} own)  {idea.category:<18} "
              f"{idea.basis:<12} {idea.title}  [{pcs}]", file=stream)
