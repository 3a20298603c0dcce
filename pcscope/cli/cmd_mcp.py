"""`pcscope mcp PROFILE`: serve the engine's validated tools to any agent over MCP."""

from __future__ import annotations

import argparse

from pcscope.cli.cmd_analyze import session_path
from pcscope.cli.common import add_input_args, default_guides, load_workload

DESCRIPTION = """\
A Model Context Protocol server over one indexed profile, for an agent such as Claude Code
or Codex to drive the analysis itself. It serves the tools pcscope's own bounded calls use
(hot_windows, mechanisms, asm_around, window, search, regex, group, alp, guide, finding,
remember) with the same bounds, and submit_findings, which validates every finding against
the IDs the tools returned to that client and merges the accepted ones into ideas. Each
client's work is recorded as a run of the profile: `pcscope calls`, reports and an open
explorer show it. Resources: guide sections, the current report, a run's calls. Prompts:
each analysis preset (triage-quick, triage-standard, triage-deep) and explain-pc.

Speaks stdio by default (what an agent's MCP configuration starts); --http serves
streamable HTTP at http://HOST:PORT/mcp instead. Without --guide the bundled guides are
served. `pcscope skill` writes the agent's skill file and configuration.
"""

DEFAULT_HOST = "127.0.0.1"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("mcp", help="serve the validated tools to an agent (MCP, stdio or HTTP)",
                       description=DESCRIPTION,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_input_args(p)
    p.add_argument("--http", metavar="[HOST:]PORT", type=host_port,
                   help=f"serve streamable HTTP instead of stdio (host default {DEFAULT_HOST})")
    p.add_argument("--session", metavar="FILE",
                   help="session store (default: <index dir>/sessions/<profile hash>.sqlite)")
    p.set_defaults(func=run)


def host_port(text: str) -> tuple[str, int]:
    host, sep, port = text.rpartition(":")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise argparse.ArgumentTypeError(f"{text!r}: want [HOST:]PORT, e.g. 127.0.0.1:8765")
    return (host.strip("[]") if sep and host else DEFAULT_HOST), int(port)


def run(args: argparse.Namespace) -> int:
    from pcscope.core.engine.presets import Settings

    workload = load_workload(args, default_guides(Settings()))
    path = session_path(args, args.profile)
    from pcscope.mcp_server import server  # the mcp SDK loads only for this command

    if args.http is None:
        server.serve_stdio(workload, path)
    else:
        server.serve_http(workload, path, *args.http)
    return 0
