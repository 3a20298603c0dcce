"""What a fixed-trip lookup loop is, carried typed with its mechanism.

pcscope.core.fixed_trip_sums finds the loops whose head count is a whole multiple of their
entries and the register their lookups are summed into. The mechanism's checks say them
for the reader; the advice quotes them from here (a metric is one figure, and these are
lists of loops and an instruction), so no sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class FixedTripValues(msgspec.Struct, frozen=True, tag="fixed-trip"):
    """Each loop's trips, instructions per trip and entries, as the check lists them, and
    the heaviest loop's summing instruction, quoted (``FixedTripValues()``: none); and
    whether that loop's bound is a register set before it, which may differ between calls."""

    loops: str = ""
    summed: str = ""
    varies: bool = False
