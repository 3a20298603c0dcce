"""`pcscope open`: the terminal explorer (and what `pcscope` with no command runs)."""

from __future__ import annotations

import argparse
import gc
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pcscope.cli.common import add_input_args, chosen_inputs, default_guides, inputs_of
from pcscope.core.errors import UsageError

if TYPE_CHECKING:
    from pcscope.tui.app import PcscopeApp


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
    from pcscope.core.engine.presets import load_preset
    from pcscope.tui.launch import OpenRequest

    settings = load_preset(args.preset)  # an unknown preset fails before the UI starts
    if args.profile is None:
        if args.alp or args.guide or args.mca:
            raise UsageError("--alp, --guide and --mca need a PROFILE")
        from pcscope.samples import bundled

        sample = bundled()
        inputs = replace(inputs_of(args, sample.profile), alp=sample.alp,
                         guides=tuple(sample.guides))
    else:
        inputs = chosen_inputs(args, inputs_of(args), default_guides(settings))
    return OpenRequest(
        inputs=inputs,
        index_dir=Path(args.index_dir) if args.index_dir else None,
        model=args.model,
        preset=args.preset,
        session=Path(args.session) if args.session else None,
        rebuild=args.rebuild,
        verify=args.verify,
        fresh=args.fresh,
    )


def run(args: argparse.Namespace) -> int:
    # Start-up makes objects that live as long as the explorer (modules, the index's
    # tables) and next to no garbage: the collector's passes meanwhile only walk them, and
    # they delay the first frame. It resumes before the UI starts, and leaves what start-up
    # made out of its walks for good (a full pass over it takes tens of milliseconds).
    gc.disable()
    try:
        app = _app(args)
    finally:
        gc.freeze()
        gc.enable()
    app.run()
    if app.error is not None:
        raise app.error
    return app.return_code or 0


def _app(args: argparse.Namespace) -> PcscopeApp:
    from pcscope.tui.launch import reopen

    request = request_of(args)
    request.inputs.check()  # a missing file fails as one line, before the terminal is taken
    prepared = reopen(request)  # a current index opens before the UI: no indexing screen

    from pcscope.tui.app import PcscopeApp
    from pcscope.tui.config import load_config

    return PcscopeApp(request, load_config(), prepared)
