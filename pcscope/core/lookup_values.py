"""Who makes a lookup routine's constant-key calls, carried typed with its mechanism.

pcscope.core.keyed_lookups finds the callers passing a different address constant as the
key at each call site. The mechanism's checks name them in words for the reader; the
advice addresses them from here (a metric is one figure, and these are names), so no
sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class LookupValues(msgspec.Struct, frozen=True, tag="lookup"):
    """The constant-key callers of the lookup, the one with the most such calls first, and
    those after the first with their figures as the checks list them (``LookupValues()``:
    none)."""

    callers: tuple[str, ...] = ()
    more: str = ""
    # per per-operation tree whose members make its lookups, what its check says of them
    trees: tuple[str, ...] = ()
