"""What a loop keeping its state in memory keeps there, carried typed with its mechanism.

pcscope.core.memory_state finds the fields a loop loads and stores back, those whose stored
value comes from their own load, and those it reloads with nothing between. The
mechanism's checks list them in words for the reader; the advice names them from here (a
metric is one figure, and these are lists of fields), so no sentence is written to be
parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

EVERY = 0.9  # part of the iterations from which an access runs "every iteration"


@dataclass(frozen=True)
class FieldUse:
    """A field and the part of the loop's iterations that touch it."""

    field: str  # as ``[x0, #0x10]``
    part: float  # of the iterations, at most 1
    bound: bool  # an upper bound (several rows that may run on one iteration), not exact

    @property
    def every(self) -> bool:
        return self.part >= EVERY

    def text(self) -> str:
        return f"{self.field} on {'at most ' if self.bound else ''}{self.part:.1%} of iterations"


class MemoryValues(msgspec.Struct, frozen=True, tag="memory"):
    """The fields the checks list (each list as long as its check's): stored back on every
    iteration, on fewer, computed from their own load, and reloaded with nothing between
    (``MemoryValues()``: none); each reload with its PCs and runs, and the hottest byte
    store through another address ("": none), as the checks say them."""

    every: tuple[str, ...] = ()
    fewer: tuple[FieldUse, ...] = ()
    recurrences: tuple[str, ...] = ()
    reloaded: tuple[str, ...] = ()
    reloads: tuple[str, ...] = ()  # ``[x0, #0x10] at 0x1004, again at 0x1010 (…)``
    byte_store: str = ""
