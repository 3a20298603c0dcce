"""Fitting an idea's text into the contract's length without losing what must be said.

A claim ends with what the numbers cannot tell and what to measure (sme.md asks every idea
for it); a cut that falls there removes the honest part and leaves a sentence hanging.
"""

from __future__ import annotations

from pcscope.core.contract.findings import TEXT_MAX

SHORTENED = " [… shortened]"
_BOUNDARIES = ("; ", ", ", ". ")


def fit(body: str, tail: str = "", limit: int = TEXT_MAX) -> str:
    """``body`` then ``tail`` in at most ``limit`` characters. The tail is kept whole; an
    over-long body loses its last list items or sentences, and says so."""
    text = f"{body} {tail}" if tail else body
    if len(text) <= limit:
        return text
    room = limit - len(SHORTENED) - (len(tail) + 1 if tail else 0)
    if room < limit // 4:  # the tail itself is too long to keep whole
        return fit(text, "", limit)
    head = body[:room]
    end = _last_boundary(head)
    if end > room // 2:  # a boundary near the end; else cut mid-list rather than lose half
        head = head[:end]
    head = head.rstrip(" ,;.(") + SHORTENED
    return f"{head} {tail}" if tail else head


def _last_boundary(text: str) -> int:
    """Where the last list item or sentence of ``text`` ends, outside parentheses (a comma
    inside "(2× per operation, 54 instructions per call)" is not between items); -1 if none."""
    depth, end = 0, -1
    for i, ch in enumerate(text):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth = max(0, depth - 1)
        elif depth == 0 and text.startswith(_BOUNDARIES, i):
            end = i
    return end
