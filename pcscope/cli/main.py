"""`pcscope`: argument parsing and the one place errors become one line and exit code 2."""

from __future__ import annotations

import argparse
import importlib
import os
import pkgutil
import sys
import time
from pathlib import Path

from pcscope import __version__
from pcscope.core.collector import collector_paused
from pcscope.core.errors import InputError, PcscopeError, UsageError

DESCRIPTION = """\
pcscope turns huge AArch64 workload profiles into grounded performance ideas.

With no command it opens the explorer on the bundled sample. Every command that reads a
profile indexes it once (reused while the inputs are unchanged) and takes the same input
options: --alp, --guide, --mca, --index-dir, --merge-duplicates, --skip-bad-lines. Given
only the profile, a command uses the newest current index built for it (with its ALP and
guides) and says so on stderr.
Evidence is named by stable IDs: pc:0x…, win:0x…, fn:…, alp:0x…, pat:<category>:0x…,
mech:<kind>:0x…, mca:0x…, guide:<doc>/<section>. File formats: docs/formats.md.
"""

EPILOG = """\
examples:
  pcscope index profile.csv.gz --alp alp.jsonl.gz --coverage 0.8
  pcscope show profile.csv.gz 0x2004 --before 8 --after 8
  pcscope search profile.csv.gz 'mnemonic:ldaxr' --json
  pcscope group profile.csv.gz --by mnemonic --where 'function:memcpy'
  pcscope analyze profile.csv.gz --alp alp.jsonl.gz --markdown report.md
"""


def command_modules() -> list[str]:
    """Every ``pcscope.cli.cmd_*`` module: a subcommand registers itself by existing."""
    import pcscope.cli as pkg

    return sorted(m.name for m in pkgutil.iter_modules(pkg.__path__) if m.name.startswith("cmd_"))


class _Parser(argparse.ArgumentParser):
    """argparse that raises a UsageError (one line, pointing at --help) instead of printing
    its usage block and exiting; subparsers are of the same class."""

    def error(self, message: str) -> None:  # type: ignore[override]
        command = self.prog.removeprefix("pcscope").strip()
        see = f"pcscope {command} --help" if command else "pcscope --help"
        raise UsageError(f"{message} (see {see})")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only`` (a known ``cmd_*`` module), just that subcommand, so a
    command does not pay for importing every other one."""
    parser = _Parser(
        prog="pcscope",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pcscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name in [only] if only else command_modules():
        importlib.import_module(f"pcscope.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run one command; whatever escapes it becomes one line on stderr and exit code 2."""
    argv = sys.argv[1:] if argv is None else argv
    try:
        argv = argv or default_command()
        module = f"cmd_{argv[0]}"
        with collector_paused():  # the command's imports: long-lived objects only
            parser = build_parser(module if module in command_modules() else None)
            args = parser.parse_args(argv)
        return args.func(args)
    except KeyboardInterrupt:
        print("pcscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # noqa: BLE001 - the one place every error becomes a line
        print(f"pcscope: error: {one_line(exc)}", file=sys.stderr)
        return 2


def one_line(exc: Exception) -> str:
    """What the user reads about an error that ended a command."""
    if isinstance(exc, PcscopeError):
        return exc.one_line()
    # sqlite3 is loaded by the commands that keep sessions; the others need not import it
    # (start-up time) to know that the error is not one of its.
    sqlite3 = sys.modules.get("sqlite3")
    if sqlite3 is not None and isinstance(exc, sqlite3.Error):
        return f"session store: {exc}"
    if isinstance(exc, OSError):
        where = exc.filename if exc.filename is not None else "-"
        return str(InputError(str(where), None, exc.strerror or str(exc)))
    return f"internal error ({type(exc).__name__}); full trace in {write_trace(exc)}"


def state_dir() -> Path:
    """Where pcscope keeps what outlives a run and is not a cache (traces of internal errors)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pcscope"


def write_trace(exc: Exception) -> str:
    """The full traceback of an internal error, in a file of its own under the state dir."""
    import traceback

    text = "".join(traceback.format_exception(exc))
    try:
        folder = state_dir() / "traces"
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"trace-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.txt"
        path.write_text(f"pcscope {__version__} {' '.join(sys.argv)}\n{text}", encoding="utf-8")
    except OSError:
        return "(nowhere: the state dir is not writable)"
    return str(path)


def default_command() -> list[str]:
    """No command: the explorer on the bundled sample (or its index summary, headless)."""
    if "cmd_open" in command_modules():
        return ["open"]
    from pcscope.samples import bundled

    sample = bundled()
    args = ["index", str(sample.profile), "--alp", str(sample.alp)]
    for guide in sample.guides:
        args += ["--guide", str(guide)]
    return args
