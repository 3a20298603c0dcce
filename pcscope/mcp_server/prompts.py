"""Ready prompts: each analysis preset as a triage request, and "explain this PC".

A preset's coverage, top, depth, focus and call budget become the request's scope, so
``triage-quick`` asks an agent for the same first look ``pcscope analyze --preset quick``
plans for its own calls.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcscope.core.engine import presets
from pcscope.core.engine.presets import Settings
from pcscope.core.errors import UsageError
from pcscope.core.ids import hex_pc, parse_pc
from pcscope.mcp_server.guidance import WORKFLOW

TRIAGE = "triage-"
EXPLAIN = "explain-pc"


@dataclass(frozen=True)
class Prompt:
    name: str
    description: str
    arguments: tuple[tuple[str, str], ...] = ()  # (name, description), all required


def prompts() -> list[Prompt]:
    out = [Prompt(f"{TRIAGE}{name}", _scope(presets.load_preset(name)))
           for name in presets.available()]
    out.append(Prompt(EXPLAIN, "explain what one instruction costs and why, with evidence",
                      (("pc", "the instruction's address, 0x-hex"),)))
    return out


def render(name: str, arguments: dict[str, str], profile: str) -> str:
    """The prompt's text; UsageError for an unknown prompt or a bad argument."""
    if name == EXPLAIN:
        text = arguments.get("pc", "")
        try:
            pc = hex_pc(parse_pc(text))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
        return (f"Explain the instruction at {pc} in the profile {profile}. Start with "
                f"`asm_around` at {pc}, then `mechanisms` with pc {pc} and `alp` for its "
                f"figures; say what it costs (its share, the simulator's figures) and why "
                f"(the pattern or mechanism it belongs to), citing the IDs the tools "
                f"returned. If it points to something worth changing, submit it with "
                f"`submit_findings`.\n\nThe workflow:\n{WORKFLOW}")
    if name.startswith(TRIAGE) and name[len(TRIAGE):] in presets.available():
        settings = presets.load_preset(name[len(TRIAGE):])
        return (f"Triage the profile {profile}: {_scope(settings)}. Find what is worth "
                f"changing, back each idea with evidence and submit it with "
                f"`submit_findings`.\n\nThe workflow:\n{WORKFLOW}")
    raise UsageError(f"no prompt {name!r}")


def _scope(s: Settings) -> str:
    windows = f"at most {s.top} hot windows" if s.top else "the hot windows"
    focus = ", ".join(s.focus) if s.focus else "every category"
    follow = (f"then follow the open questions of accepted findings {s.depth - 1} "
              f"round(s) deeper" if s.depth > 1 else "one round, no follow-up")
    budget = f"; stay within about {s.max_calls} tool calls" if s.max_calls else ""
    return (f"preset {s.preset}: {windows} covering {s.coverage:.0%} of the total and the "
            f"mechanisms among them; focus on {focus}; {follow}{budget}")
