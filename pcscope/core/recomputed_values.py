"""The work a loop recomputes from rarely changing inputs, carried typed with its mechanism.

pcscope.core.invariant_work finds the instructions a loop recomputes from inputs that
rarely change, the rows its instructions per iteration count, and the work a clamp makes
invariant once it saturates. The mechanism's checks list them in words for the reader; the
advice names a few from here (a metric is one figure, and these are lists of
instructions), so no sentence is written to be parsed back. Each instruction is written as
the checks write it: ```ldr w1, [x2]` at 0x1000``.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec


@dataclass(frozen=True)
class ClampValues:
    """The work invariant once a clamp saturates, and what the counts cannot tell of it."""

    clamp: str  # the first clamp's instruction
    saturates: str  # the value it fixes and when (``5 for w1 ≥ 5``)
    work: tuple[str, ...]  # the instructions invariant once it saturates, address order
    stays: tuple[str, ...]  # the loop's loads still changing every iteration then
    picks: str  # why the counts cannot tell how often it saturates
    count: tuple[str, ...]  # what to count instead, one per clamp


class RecomputedValues(msgspec.Struct, frozen=True, tag="recomputed"):
    """The recomputed instructions (address order; none when only a clamp's work is
    invariant), the span of rows the loop's instructions per iteration count
    (``0x1000–0x1068``), a clamp's work (None without), where the work's inputs change and
    the loop's stores that may write what it loads, as the checks say them ("": none)."""

    instructions: tuple[str, ...]
    span: str
    clamp: ClampValues | None
    changed: str = ""
    blocked: str = ""
