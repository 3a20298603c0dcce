"""Options every command that calls a model takes: --offline, --redact, --record, --trace.

``backend_options`` turns them into the registry's ``BackendOptions``; ``open_backend``
builds a backend by name with them. The API key is never an option: it comes only from
the ``ANTHROPIC_API_KEY`` environment variable.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from pcscope.core.backends.llm.anthropic_config import CACHE_TTLS, EFFORTS, THINKING
from pcscope.core.backends.registry import BackendOptions, backend_for
from pcscope.core.workload import Workload

MODEL_HELP = ("offline (rule-based, default), anthropic:<model id> (key from "
              "ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL for any Messages-API endpoint), "
              "openai:<model> (OpenAI-compatible server at OPENAI_BASE_URL), "
              "replay:<record file>")


def add_model_args(parser: argparse.ArgumentParser, *, record_help: str | None = None,
                   record_metavar: str = "FILE") -> None:
    parser.add_argument("--offline", action="store_true",
                        help="refuse any backend that would use the network")
    parser.add_argument("--redact", action="store_true",
                        help="send function, module and file names only as stable aliases "
                             "(mapped back locally)")
    parser.add_argument("--record", metavar=record_metavar,
                        help=record_help or "store every model request/response in FILE "
                                            "(JSON Lines; replay with --model replay:FILE)")
    parser.add_argument("--thinking", choices=THINKING,
                        help="Claude's reasoning: adaptive (the model decides; default) or off")
    parser.add_argument("--effort", choices=EFFORTS,
                        help="Claude's effort level (default: the model's own)")
    parser.add_argument("--cache-ttl", choices=CACHE_TTLS,
                        help="prompt-cache lifetime of the stable prefix (1h suits multi-wave "
                             "runs; default 5m)")
    parser.add_argument("--trace", metavar="DIR",
                        help="write OpenTelemetry-style spans (JSON Lines) and the prompts "
                             "and responses they reference (by content hash) to DIR")


def backend_options(args: argparse.Namespace, workload: Workload, *, concurrency: int,
                    record: str | None = None, trace: str | None = None) -> BackendOptions:
    extra: dict = {"concurrency": concurrency, "thinking": args.thinking,
                   "effort": args.effort, "cache_ttl": args.cache_ttl}
    if args.redact:
        from pcscope.core.backends.llm.redact import Redactor

        extra["redactor"] = Redactor.for_workload(workload)
    if trace:
        extra["trace_dir"] = trace
    return BackendOptions(offline_only=args.offline, record=record, extra=extra)


def open_backend(name: str, args: argparse.Namespace, workload: Workload, *, concurrency: int,
                 record: str | None = None, trace: str | None = None):
    return backend_for(name, backend_options(args, workload, concurrency=concurrency,
                                             record=record, trace=trace))


def suffixed(path: str | None, name: str) -> str | None:
    """``DIR/<name>`` for commands that run several backends under one --record/--trace."""
    return None if path is None else str(Path(path) / name)


async def close_backend(backend) -> None:
    """Close a model backend's connections and finish its record (no-op for others)."""
    close = getattr(backend, "aclose", None)
    if close is not None:
        await close()
