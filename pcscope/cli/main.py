"""`pcscope`: argument parsing and the one place errors become one line and exit code 2."""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys

from pcscope import __version__
from pcscope.core.errors import InputError, PcscopeError

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


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only`` (a known ``cmd_*`` module), just that subcommand, so a
    command does not pay for importing every other one."""
    parser = argparse.ArgumentParser(
        prog="pcscope",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"pcscope {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in [only] if only else command_modules():
        importlib.import_module(f"pcscope.cli.{name}").register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    try:
        argv = argv or default_command()
        module = f"cmd_{argv[0]}"
        parser = build_parser(module if module in command_modules() else None)
        args = parser.parse_args(argv)
        return args.func(args)
    except PcscopeError as exc:
        print(f"pcscope: error: {exc.one_line()}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("pcscope: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as exc:
        where = getattr(exc, "filename", None)
        print(f"pcscope: error: {InputError(where or '-', None, exc.strerror or str(exc))}",
              file=sys.stderr)
        return 2


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
