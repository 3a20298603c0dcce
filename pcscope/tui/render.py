"""Small text renderings shared by the panes: bars, shares, badges, counts.

Everything here is characters first (bars are block glyphs, badges are words), so the
panes stay readable with ``NO_COLOR`` or on a 16-colour terminal; colour only adds.
"""

from __future__ import annotations

_EIGHTHS = " ▏▎▍▌▋▊▉"

BADGES = {
    "atomic-llsc": "LLSC",
    "atomic-lse": "LSE",
    "barrier": "BAR",
    "acquire-release": "ACQ",
    "indirect-branch": "IND",
    "dependent-load": "DEP",
    "division": "DIV",
    "spin-wait": "SPIN",
    "call-overhead": "CALL",
}


def bar(fraction: float, width: int) -> str:
    """A left-aligned bar of ``width`` cells filled to ``fraction`` (eighth-cell steps)."""
    if width <= 0:
        return ""
    fraction = min(max(fraction, 0.0), 1.0)
    eighths = round(fraction * width * 8)
    full, part = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[part] if part else "")
    return text.ljust(width)


def share(fraction: float) -> str:
    """``12.34%`` — 6 cells for anything up to 100%."""
    return f"{fraction * 100:5.2f}%"


def badge(category: str) -> str:
    return BADGES.get(category, category[:4].upper())


def plural(n: int, word: str, words: str | None = None) -> str:
    """``1 idea``, ``2 ideas``, ``1,234 windows``."""
    return f"{n:,} {word if n == 1 else (words or word + 's')}"


def count(n: int | float | None) -> str:
    """Compact counts: 950, 12.3k, 4.57M, 1.20G; '-' when absent."""
    if n is None:
        return "-"
    n = float(n)
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(n) >= limit:
            return f"{n / limit:.3g}{suffix}"
    return f"{n:.0f}" if n == int(n) else f"{n:.3g}"


def rate(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.1f}%"


def cycles(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"
