"""What exact counts show about a function no rule speaks for: how often it is entered,
how many instructions one entry runs, and how often its heaviest loop iterates per entry
(its head count over the function's entries: exact, where trips per loop entry would need
the loop's own entries, which a jump into a join hides). A reader sizes the code from these (a small function called per byte, a loop of a
fixed trip count) where the instruction mix alone says only "scalar integer code"."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core import isa
from pcscope.core.ids import hex_pc
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op


@dataclass(frozen=True)
class FunctionCounts:
    entries: int  # the first instruction's count
    per_entry: float  # executed instructions per entry
    loop_pc: int | None  # the head of its heaviest loop
    loop_part: float  # that loop's part of the function's executions
    iterations: float  # that loop's head count per entry of the function

    def text(self) -> str:
        out = f"entered {self.entries:,} times, {self.per_entry:,.1f} instructions per entry"
        if self.loop_pc is not None:
            out += (f"; its heaviest loop ({hex_pc(self.loop_pc)}, {self.loop_part:.0%} of "
                    f"the function) iterates {self.iterations:,.1f} times per entry")
        return out


def of(profile: Profile, rows: np.ndarray) -> FunctionCounts | None:
    """The counts of a function's ``rows`` (ascending), None when it never ran."""
    counts = profile.samples
    entries = int(counts[rows[0]])
    total = int(counts[rows].sum())
    if not entries or not total:
        return None
    back: dict[int, list[int]] = {}
    first, last = int(profile.pc[rows[0]]), int(profile.pc[rows[-1]])
    for r in rows.tolist():
        o = Op.of(int(profile.pc[r]), profile.asm(r))
        jumps = o.mnemonic == "b" or isa.is_conditional_branch(o.mnemonic)
        if jumps and o.target is not None and first <= o.target <= o.pc <= last:
            head = int(np.searchsorted(profile.pc, o.target))
            if head < len(profile) and int(profile.pc[head]) == o.target:
                back.setdefault(head, []).append(r)
    if not back:
        return FunctionCounts(entries, total / entries, None, 0.0, 0.0)

    def weight(head: int) -> int:
        return int(counts[head:max(back[head]) + 1].sum())

    head = max(back, key=lambda h: (weight(h), -h))
    return FunctionCounts(entries, total / entries, int(profile.pc[head]),
                          weight(head) / total, int(counts[head]) / entries)
