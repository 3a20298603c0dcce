"""What a struct-relaxation loop reads, carried typed with its mechanism.

pcscope.core.struct_relaxation finds the table entry the loop adds to a base and the one
struct field it compares the sum with. The mechanism's checks name them for the reader; the
advice quotes them from here (a metric is one figure, and these are instructions), so no
sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class RelaxationValues(msgspec.Struct, frozen=True, tag="relaxation"):
    """The heaviest loop's table load and field load, each quoted (```ldr w1, [x2]```;
    ``RelaxationValues()``: none), and whether the table entry is added to values the loop
    does not load (a fixed base)."""

    table: str = ""
    field: str = ""
    fixed_base: bool = False
