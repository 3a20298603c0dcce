"""Same code modulo register allocation: when two loops are one mechanism.

A compiler that inlines or clones a routine twice (a tree walk inlined into a find and a
skip function, a loop versioned for two callers) emits the same instructions with other
registers and, often, another schedule. An engineer fixes that code once, so its copies
are one mechanism with every site, sized by the sum.

Two bodies are the same code when the multisets of their instruction *shapes* are equal:
the mnemonic with every operand kept except register numbers (``ldr w3, [x10, #4]`` ->
``ldr w, [x, #4]``) and the targets of jumps (they differ with the address). Immediates,
offsets, shifts, extends, condition codes, register widths, addressing modes and call
targets stay, so loops over other struct fields, strides or element sizes stay apart. A
multiset, not a sequence: the scheduler may order independent instructions differently in
each copy.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from functools import lru_cache

from pcscope.core import isa

SAME_CODE_MIN = 8  # instructions a body needs before equal shapes mean one origin
_RE_NUMBERED = re.compile(r"\b([wxbhsdqvzp])([0-9]{1,2})\b")


@lru_cache(maxsize=65536)
def shape(asm: str) -> str:
    """One instruction without its register numbers and direct branch target."""
    mnemonic, operands = isa.canonical(asm)
    if isa.is_branch(mnemonic) and not isa.is_call(mnemonic) and \
            isa.branch_target(asm) is not None:
        operands = operands[:-1]  # a jump inside the copy: the copies live at other addresses
    text = ", ".join(_RE_NUMBERED.sub(r"\1", op.lower()) for op in operands)
    return f"{mnemonic} {text}".strip()


def signature(asms: Iterable[str]) -> tuple[str, ...] | None:
    """The body's shapes as a sorted tuple, or None when it is too short to tell copies of
    one routine from two small loops that happen to look alike."""
    shapes = sorted(shape(a) for a in asms)
    return tuple(shapes) if len(shapes) >= SAME_CODE_MIN else None
