"""`pcscope open`: the terminal explorer (and what `pcscope` with no command runs)."""

from __future__ import annotations

import argparse
from pathlib import Path

from pcscope.cli.common import add_input_args
from pcscope.core.errors import InputError, UsageError


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "open",
        help="explore a profile in the terminal (default: the bundled sample)",
        description="Open the keyboard-driven explorer: hot windows, assembly, ALP, search, "
        "guides, and live analysis with bounded model calls. With no PROFILE it opens the "
        "bundled sample with its ALP and guides. Press F1 or ? inside for the keys.",
    )
    add_input_args(p, profile=False)
    p.add_argument("profile", metavar="PROFILE", nargs="?",
                   help="profile CSV/TSV, plain or .gz (default: the bundled sample)")
    p.add_argument("--model", default="offline", metavar="NAME",
                   help="analyst for a / A: offline (default), anthropic:<model>, "
                   "replay:<file>")
    p.add_argument("--preset", default="standard", metavar="NAME",
                   help="analysis preset: quick, standard (default), deep, or your own")
    p.add_argument("--session", metavar="FILE",
                   help="session store (default: <index dir>/sessions/<profile hash>.sqlite)")
    p.add_argument("--fresh", action="store_true",
                   help="when the session store is damaged, move it aside and start a new one")
    p.set_defaults(func=run)


def request_of(args: argparse.Namespace):
    from pcscope.tui.launch import OpenRequest

    alp, guides = args.alp, list(args.guide)
    profile = args.profile
    if profile is None:
        if alp or guides:
            raise UsageError("--alp and --guide need a PROFILE")
        from pcscope.samples import bundled

        sample = bundled()
        profile, alp, guides = sample.profile, sample.alp, list(sample.guides)
    return OpenRequest(
        profile=Path(profile),
        alp=Path(alp) if alp else None,
        guides=tuple(Path(g) for g in guides),
        index_dir=Path(args.index_dir) if args.index_dir else None,
        model=args.model,
        preset=args.preset,
        session=Path(args.session) if args.session else None,
        merge_duplicates=args.merge_duplicates,
        skip_bad_lines=args.skip_bad_lines,
        rebuild=args.rebuild,
        verify=args.verify,
        fresh=args.fresh,
    )


def check_inputs(request) -> None:
    """Missing files fail here, as one line, before the terminal is taken over."""
    for path in (request.profile, request.alp, *request.guides):
        if path is not None and not path.is_file():
            raise InputError(str(path), None, "no such file" if not path.exists()
                             else "not a file")


def run(args: argparse.Namespace) -> int:
    from pcscope.tui.launch import reopen

    request = request_of(args)
    check_inputs(request)
    prepared = reopen(request)  # a current index opens before the UI: no indexing screen

    from pcscope.tui.app import PcscopeApp
    from pcscope.tui.config import load_config

    app = PcscopeApp(request, load_config(), prepared)
    app.run()
    if app.error is not None:
        raise app.error
    return app.return_code or 0
