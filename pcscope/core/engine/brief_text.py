"""A brief as the text a call reads: delimited data under IDs, each instruction on its line
with its ALP record right under it. What goes into a brief is decided in ``briefs``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcscope.core.engine.briefs import Brief


def render(brief: Brief) -> str:
    blocks = ["<evidence>"]
    for part in brief.parts:
        blocks += part.header
        for line, alp in part.lines:
            blocks.append(line)
            if alp is not None:
                blocks.append(f"  {alp}")
    if brief.guides:
        blocks.append("guide sections:")
        blocks += [f"{gid} \"{heading}\": {text}" for gid, heading, text in brief.guides]
    if brief.notes:
        blocks.append("engineers' notes:")
        blocks += [f"{n.id} ({n.scope}): {n.text}" for n in brief.notes]
    blocks.append("</evidence>")
    return "\n".join(blocks)
