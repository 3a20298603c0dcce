"""Evidence IDs (formats.md §4): built from content, never from row order.

Hex is lower case without leading zeros: ``pc:0x2004``.
"""

from __future__ import annotations

import re

KINDS = ("fn", "win", "pc", "alp", "pat", "guide", "finding", "note", "set", "mca", "idea",
         "mech")

_HEX = re.compile(r"^0[xX][0-9a-fA-F]+$")
_DEC = re.compile(r"^[0-9]+$")


def parse_pc(text: str) -> int:
    """``0x2004``, ``0X2004`` and ``8196`` are the same PC. Raises ValueError otherwise."""
    t = text.strip()
    if _HEX.match(t):
        return int(t, 16)
    if _DEC.match(t):
        return int(t)
    raise ValueError(f"bad pc {text!r} (want 0x-hex or decimal)")


def hex_pc(pc: int) -> str:
    return f"0x{pc:x}"


def pc_id(pc: int) -> str:
    return f"pc:{hex_pc(pc)}"


def alp_id(pc: int) -> str:
    return f"alp:{hex_pc(pc)}"


def mca_id(pc: int) -> str:
    return f"mca:{hex_pc(pc)}"


def win_id(first_pc: int) -> str:
    return f"win:{hex_pc(first_pc)}"


def pat_id(category: str, pc: int) -> str:
    return f"pat:{category}:{hex_pc(pc)}"


def fn_id(name: str | None, first_pc: int) -> str:
    """Named functions by name; hidden (``<unknown_N>``) or unnamed by their lowest PC."""
    if name and not is_hidden_name(name):
        return f"fn:{name}"
    return f"fn:{hex_pc(first_pc)}"


_HIDDEN = re.compile(r"^<unknown_[0-9]+>$")


def is_hidden_name(name: str | None) -> bool:
    return bool(name) and bool(_HIDDEN.match(name or ""))


def kind_of(evidence_id: str) -> str:
    """The kind prefix of an ID (``pc``, ``win`` …); ValueError when it has none we know."""
    kind, sep, rest = evidence_id.partition(":")
    if not sep or not rest or kind not in KINDS:
        raise ValueError(f"not an evidence id: {evidence_id!r}")
    return kind


def pc_of(evidence_id: str) -> int | None:
    """The PC an ID names (``pc:``, ``alp:``, ``mca:``, ``win:``, ``pat:``), else None."""
    kind, _, rest = evidence_id.partition(":")
    if kind in ("pc", "alp", "mca", "win"):
        return parse_pc(rest)
    if kind == "pat":
        _, _, pc = rest.rpartition(":")
        return parse_pc(pc)
    return None
