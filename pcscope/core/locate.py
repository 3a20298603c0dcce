"""Where an engineer's "go to" text points: the way perf annotate and gdb name code.

``0x4a91e0``, ``pc:0x4a91e0`` and bare hex ``4a91e0`` are addresses (bare digits are hex
here, as every address on screen is); ``_PyEval_EvalFrameDefault`` is a function's first
profiled instruction; ``memcpy+0x1c`` (or ``+28`` in decimal) is an offset from it.
"""

from __future__ import annotations

import re

from pcscope.core.profile import Profile

_BARE_HEX = re.compile(r"^[0-9a-fA-F]+$")
_OFFSET = re.compile(r"^(?P<name>.+?)\+(?P<off>0[xX][0-9a-fA-F]+|[0-9]+)$")


def locate(profile: Profile, text: str) -> int:
    """The PC ``text`` names. Raises ValueError with what was not understood or found."""
    t = text.strip().removeprefix("pc:").removeprefix("fn:")
    if not t:
        raise ValueError("give an address (0x…, bare hex) or a symbol (name, name+0xoff)")
    if t.lower().startswith("0x"):
        return _hex(t[2:], text)
    name, offset = t, 0
    match = _OFFSET.match(t)
    if match:
        name = match["name"]
        off = match["off"]
        offset = int(off, 16) if off.lower().startswith("0x") else int(off)
    f = profile.functions.index_of(name)
    if f is not None:
        return profile.functions[f].first_pc + offset
    if not match and _BARE_HEX.match(t):
        return _hex(t, text)
    raise ValueError(f"no function named {name!r} in the profile")


def _hex(digits: str, text: str) -> int:
    if not digits or not _BARE_HEX.match(digits):
        raise ValueError(f"bad address {text!r} (want 0x-hex, bare hex or a symbol)")
    return int(digits, 16)
