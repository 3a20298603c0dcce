"""Which fixed state a threaded dispatch tests, carried typed with its mechanism.

pcscope.core.dispatch_state finds the rows of the dispatch sites that test a value at a
fixed address or a frame field stored once per entry. The mechanism's checks say them for
the reader; the advice quotes them from here (a metric is one figure: the per-dispatch
counts and shares are metrics), so no sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class DispatchStateValues(msgspec.Struct, frozen=True, tag="dispatch-state"):
    """The most executed test of each kind as its check says it (the address or slot, the
    sites and rows, what makes it fixed; "": none), and whether that fixed-address value
    is a 16-bit value compared with zero and turned into a mask."""

    fixed: str = ""
    frame: str = ""
    masked: bool = False
