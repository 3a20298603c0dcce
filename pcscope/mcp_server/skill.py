"""`pcscope skill`: an agent skill (SKILL.md) and the MCP configuration that starts
`pcscope mcp`, in the format of Claude Code or of Codex."""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from pcscope.mcp_server.guidance import IDS, REJECTIONS, WORKFLOW

AGENTS = ("claude", "codex")
SERVER = "pcscope"
PLACEHOLDER = "/path/to/profile.csv.gz"
DESCRIPTION = (
    "Find grounded performance ideas in an AArch64 workload profile with the pcscope MCP "
    "server: read the hot mechanisms and windows, fetch evidence by stable IDs (code, "
    "simulator figures, guide sections) and submit findings that pcscope validates. Use "
    "when asked why a program is slow on Arm or to triage a pcscope profile.")


@dataclass(frozen=True)
class Written:
    skill: Path
    config: Path
    add_command: str  # the agent's own command that registers the server


def server_args(profile: str | None, alp: str | None, guides: list[str]) -> list[str]:
    """`pcscope mcp`'s arguments with absolute paths (the agent starts it from anywhere)."""
    args = ["mcp", str(Path(profile).resolve()) if profile else PLACEHOLDER]
    if alp:
        args += ["--alp", str(Path(alp).resolve())]
    for guide in guides:
        args += ["--guide", str(Path(guide).resolve())]
    return args


def write_skill(agent: str, folder: Path, args: list[str]) -> Written:
    command = shutil.which("pcscope") or "pcscope"
    folder.mkdir(parents=True, exist_ok=True)
    skill = folder / "SKILL.md"
    skill.write_text(skill_text(args), encoding="utf-8")
    if agent == "claude":
        config = folder / "mcp.json"
        config.write_text(json.dumps({"mcpServers": {SERVER: {
            "type": "stdio", "command": command, "args": args}}}, indent=2) + "\n",
            encoding="utf-8")
        add = f"claude mcp add --scope project {SERVER} -- {_shell(command, args)}"
    else:
        config = folder / "config.toml"
        config.write_text(codex_toml(command, args), encoding="utf-8")
        add = f"codex mcp add {SERVER} -- {_shell(command, args)}"
    return Written(skill, config, add)


def codex_toml(command: str, args: list[str]) -> str:
    """The ``[mcp_servers.pcscope]`` table of ``~/.codex/config.toml`` (JSON strings are
    valid TOML basic strings)."""
    return (f"[mcp_servers.{SERVER}]\n"
            f"command = {json.dumps(command)}\n"
            f"args = [{', '.join(json.dumps(a) for a in args)}]\n"
            "# the first start indexes the profile: allow for it (Codex waits 10 s by default)\n"
            "startup_timeout_sec = 120\n"
            "tool_timeout_sec = 60\n")


def skill_text(args: list[str]) -> str:
    profile = args[1]
    return f"""---
name: {SERVER}
description: {json.dumps(DESCRIPTION)}
---

# pcscope: grounded performance ideas from an AArch64 profile

The `{SERVER}` MCP server serves one indexed profile ({profile}). Its tools are the ones
pcscope's own bounded calls use, with the same bounds; `submit_findings` validates what
you propose against the evidence the tools returned to you and records it as a run of the
profile, which `pcscope calls {profile}`, `pcscope open {profile}` and reports show.

## Before you start
Index the profile once, so the server starts at once: `pcscope index {profile}` (with the
same `--alp` and `--guide` options the server is given). The ready prompts `triage-quick`,
`triage-standard`, `triage-deep` and `explain-pc` set the scope of a session.

## Workflow
{WORKFLOW}

## Reading IDs and figures
{IDS}

## What gets rejected, and why
{REJECTIONS}

## Afterwards
The verdict of each submission names the accepted findings (`finding:w1.cN.fM`, citable in
a later submission) and the reason of each rejection. Resources: `pcscope://report` (the
current report, Markdown), `pcscope://runs`, `pcscope://run/N/calls`, and each guide
section as `pcscope://guide/<doc>/<section>`.
"""


def _shell(command: str, args: list[str]) -> str:
    import shlex

    return " ".join(shlex.quote(part) for part in (command, *args))
