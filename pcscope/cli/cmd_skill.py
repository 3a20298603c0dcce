"""`pcscope skill`: write an agent skill and the MCP configuration for Claude Code or Codex."""

from __future__ import annotations

import argparse
from pathlib import Path

DEFAULT_DIRS = {"claude": ".claude/skills/pcscope", "codex": ".agents/skills/pcscope"}
CONFIG_HOME = {"claude": "the project's .mcp.json (or run the command below)",
               "codex": "~/.codex/config.toml (or a trusted project's .codex/config.toml)"}


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "skill", help="write an agent skill (SKILL.md) and its MCP configuration",
        description="Write SKILL.md (front matter and the workflow: index, read hot "
        "mechanisms, anchor, fetch evidence, submit; how to read IDs and figures; what gets "
        "rejected and why) and the MCP server configuration for Claude Code (mcp.json, in "
        "the .mcp.json format) or Codex (config.toml, an [mcp_servers.pcscope] table). "
        "Give PROFILE (and --alp, --guide) to fill in the server's arguments.")
    p.add_argument("profile", metavar="PROFILE", nargs="?",
                   help="the profile the server serves (default: a placeholder to edit)")
    p.add_argument("--alp", metavar="FILE", help="raw ALP JSON Lines for the server")
    p.add_argument("--guide", metavar="FILE", action="append", default=[],
                   help="guide for the server; repeat for several")
    p.add_argument("--agent", choices=sorted(DEFAULT_DIRS), default="claude",
                   help="the agent the skill is for (default claude)")
    p.add_argument("-o", "--output", metavar="DIR",
                   help=f"skill folder (default {DEFAULT_DIRS['claude']} for claude, "
                   f"{DEFAULT_DIRS['codex']} for codex)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pcscope.mcp_server.skill import server_args, write_skill

    folder = Path(args.output or DEFAULT_DIRS[args.agent])
    written = write_skill(args.agent, folder,
                          server_args(args.profile, args.alp, list(args.guide)))
    print(f"wrote {written.skill}")
    print(f"wrote {written.config}: merge it into {CONFIG_HOME[args.agent]}")
    print(f"or register the server with:\n  {written.add_command}")
    return 0
