"""Register spills in a long hot straight-line block: code unrolled (or inlined) past what
the registers hold, so values go to the stack and come back within the same block.

A straight-line block is a run of consecutive instructions with one exact count (every one
of them ran as often as the first: nothing branched in or out). In a block of at least
BLOCK_MIN instructions run at least MIN_RUNS times, a *spill* is an access to a stack slot
(``[sp, #off]`` or ``[x29, #off]``) that the block both stores and loads: a value parked and
fetched back. When spills are at least SPILL_FRACTION of the block, the block is register
bound: unrolling less, or keeping the accumulation in vector registers, removes them.
Stack arrays read but not written in the block, and prologue saves, are not spills.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pcscope.core.mechanisms import Metric
from pcscope.core.memory_state import field_offsets
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

BLOCK_MIN = 200  # instructions of a straight-line block worth reading
MIN_RUNS = 10_000  # executions of the block
SPILL_FRACTION = 0.15  # spills and reloads per instruction of the block
MIN_SHARE = 0.001  # share of the total a block needs to be read
_STACK = frozenset(("sp", "x29"))


@dataclass(frozen=True)
class SpillBlock:
    first: int  # row of the block's first instruction
    size: int  # instructions
    runs: int  # executions of the block
    spills: tuple[int, ...]  # rows of the stack stores and loads of slots used both ways

    @property
    def fraction(self) -> float:
        return len(self.spills) / self.size


def find(profile: Profile, op: Callable[[int], Op]) -> list[SpillBlock]:
    # Block bounds over every row, then Python only for the few long ones: per-block
    # arrays (starts, ends, counts at starts...) for a million rows cost ~50 MB at the
    # build's peak.
    counts, pcs = profile.samples, profile.pc
    breaks = np.flatnonzero((counts[1:] != counts[:-1]) | (np.diff(pcs) != 4)) + 1
    bounds = np.concatenate(([0], breaks, [len(counts)]))
    long = np.flatnonzero(np.diff(bounds) >= BLOCK_MIN)
    out = []
    for i in long.tolist():
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        if (int(counts[lo]) < MIN_RUNS
                or (hi - lo) * profile.value[lo].item() < MIN_SHARE * profile.total):
            continue
        slots: dict[tuple[str, int], list[int]] = defaultdict(list)
        stored: set[tuple[str, int]] = set()
        loaded: set[tuple[str, int]] = set()
        for r in range(lo, hi):
            o = op(r)
            fields = field_offsets(o, frame=True)
            if not fields or o.addr[0] not in _STACK:
                continue
            for key in fields:
                slots[key].append(r)
                (loaded if o.load else stored).add(key)
        spills = sorted({r for key in stored & loaded for r in slots[key]})
        if len(spills) >= SPILL_FRACTION * (hi - lo):
            out.append(SpillBlock(lo, hi - lo, int(counts[lo]), tuple(spills)))
    return out


def metrics(block: SpillBlock, total: int) -> list[Metric]:
    return [
        Metric("block instructions", block.size, "instructions",
               "consecutive instructions with one exact count"),
        Metric("block runs", block.runs, "executions", "the block's count"),
        Metric("spills and reloads", len(block.spills), "instructions",
               "stack accesses to slots the block both stores and loads"),
        Metric("spill share of the block", round(100.0 * block.fraction, 1), "%",
               "spills and reloads / block instructions"),
        Metric("block share", round(100.0 * block.size * block.runs / total, 2), "%",
               "block instructions × runs / the total"),
    ]


def checks(block: SpillBlock) -> list[str]:
    return [f"a straight-line block of {block.size} instructions, each run {block.runs:,} "
            f"times (nothing branches in or out)",
            f"{len(block.spills)} of them ({block.fraction:.0%}) store to or load from stack "
            f"slots the block both writes and reads: values spilled and reloaded"]
