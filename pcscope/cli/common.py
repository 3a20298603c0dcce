"""Options and helpers shared by every subcommand that reads a profile."""

from __future__ import annotations

import argparse
import sys
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from pcscope.core.errors import UsageError
from pcscope.core.inputs import Inputs, PathLike

if TYPE_CHECKING:  # numpy and the profile model load only with a profile to read
    from pcscope.core.engine.presets import Settings
    from pcscope.core.workload import Workload


def add_input_args(parser: argparse.ArgumentParser, profile: bool = True) -> None:
    """PROFILE plus the reader options every profile-reading command takes."""
    if profile:
        parser.add_argument("profile", metavar="PROFILE",
                            help="profile CSV/TSV, plain or .gz (docs/formats.md §1)")
    parser.add_argument("--alp", metavar="FILE", help="raw ALP JSON Lines, plain or .gz")
    parser.add_argument("--guide", metavar="FILE", action="append", default=[],
                        help="guide (Markdown, text or PDF); repeat for several")
    parser.add_argument("--mca", metavar="FILE",
                        help="llvm-mca predictions from `pcscope import mca` (basis: predicted)")
    parser.add_argument("--index-dir", metavar="DIR",
                        help="where indexes live (default: $XDG_CACHE_HOME/pcscope/index)")
    parser.add_argument("--merge-duplicates", action="store_true",
                        help="sum rows that repeat a PC instead of failing")
    parser.add_argument("--skip-bad-lines", action="store_true",
                        help="skip and count malformed ALP lines instead of failing")
    parser.add_argument("--counts", choices=("samples", "executions", "exact"), default="samples",
                        help="what the profile's counts are: sampled (default) or exact "
                        "executions from emulation/instrumentation (`exact` = `executions`); "
                        "a `cycles` column is used as cycles either way")
    parser.add_argument("--rebuild", action="store_true",
                        help="rebuild the index even when the inputs are unchanged")
    parser.add_argument("--verify", action="store_true",
                        help="compare the content of every input and index file before "
                        "use, not only sizes and mtimes (rebuilds a changed or damaged index)")


def add_selection_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--top", type=positive_int, metavar="N",
                        help="at most N hot windows")
    parser.add_argument("--coverage", type=fraction, default=0.90, metavar="C",
                        help="hot windows until this share of the total (default 0.90)")


def positive_int(text: str) -> int:
    return _positive(text, int, "a whole number")


def positive_float(text: str) -> float:
    return _positive(text, float, "a number")


def _positive(text: str, kind: type, what: str):
    try:
        value = kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
    if not 0 < value < MAX_NUMBER:  # also refuses nan and inf
        raise argparse.ArgumentTypeError(f"{text} must be positive and below {MAX_NUMBER:.0e}")
    return value


MAX_NUMBER = 1e15  # larger option values are typing mistakes (and would overflow int64 maths)


def output_file(text: str) -> str:
    """An output path ('-' = stdout) checked before any work starts."""
    from pcscope.core.errors import InputError
    from pcscope.core.textio import check_output

    try:
        check_output(text)
    except InputError as exc:
        raise argparse.ArgumentTypeError(exc.one_line()) from None
    return text


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0.0 < value <= 1.0:
        raise argparse.ArgumentTypeError(f"{text} must be in (0, 1]")
    return value


@contextmanager
def progress_status(first: str = "indexing"):
    """A one-line rich status on stderr for long work; silent when stderr is not a TTY."""
    if not sys.stderr.isatty():
        yield lambda _msg: None
        return
    from rich.console import Console

    console = Console(stderr=True)
    with console.status(f"{first}…") as status:
        yield lambda msg: status.update(f"{msg}…")


def inputs_of(args: argparse.Namespace, profile: PathLike | None = None) -> Inputs:
    """The one input value of a command: PROFILE (or ``profile``) and the input options."""
    path = profile or args.profile
    if path is None:
        raise UsageError("no profile given")
    return Inputs.of(path, alp=args.alp, guides=args.guide, mca=args.mca,
                     merge_duplicates=args.merge_duplicates, skip_bad_lines=args.skip_bad_lines,
                     counts="executions" if args.counts == "exact" else args.counts)


def default_guides(settings: Settings) -> tuple[Path, ...]:
    """No --guide: the preset's guides, else the bundled ones."""
    from pcscope.samples import guides

    return tuple(Path(g) for g in settings.guides) or tuple(guides())


def chosen_inputs(args: argparse.Namespace, given: Inputs,
                  guides: tuple[Path, ...] = ()) -> Inputs:
    """Given only the profile, the newest current index built for it (with its ALP and
    guides; stderr says which) serves; else the given inputs, with ``guides`` when they
    name none."""
    from pcscope.index.store import IndexStore

    if given.only_profile() and not args.rebuild:
        earlier = IndexStore.at(args.index_dir).latest_for(given)
        if earlier is not None:
            if not earlier.only_profile():
                print(f"pcscope: using the index of {earlier.describe()}", file=sys.stderr)
            return earlier
    if guides and not given.guides:
        return replace(given, guides=guides)
    return given


def load_workload(args: argparse.Namespace, guides: tuple[Path, ...] = ()) -> Workload:
    """Open (or build) the index of the command's inputs (see ``chosen_inputs``)."""
    from pcscope.index.store import IndexStore

    inputs = chosen_inputs(args, inputs_of(args), guides)
    with progress_status() as say:
        return IndexStore.at(args.index_dir).open(inputs, rebuild=args.rebuild,
                                                  verify=args.verify, progress=say)


def print_json(data: object) -> None:
    from pcscope.core.finite_json import dumps

    sys.stdout.write(dumps(data, indent=2) + "\n")
