"""A brief as the text a call reads: delimited data under IDs, its instructions and guide
sections in the one compact rendering every prompt shares (``evidence_text``). What goes
into a brief is decided in ``briefs``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from pcscope.core.engine import evidence_text

if TYPE_CHECKING:
    from pcscope.core.engine.briefs import Brief


def render(brief: Brief) -> str:
    blocks = ["<evidence>"]
    for part in brief.parts:
        blocks += part.header
        for heading, items in part.blocks:
            if heading is not None:
                blocks.append(heading)
            blocks += evidence_text.instruction_lines(items, brief.basis)
    if brief.guides:
        blocks.append("guide sections:")
        blocks += [evidence_text.guide_line(*g) for g in brief.guides]
    if brief.notes:
        blocks.append("engineers' notes:")
        blocks += [f"{n.id} ({n.scope}): {n.text}" for n in brief.notes]
    blocks.append("</evidence>")
    return "\n".join(blocks)
