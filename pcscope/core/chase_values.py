"""What a pointer chase's advice reads of its loop, carried typed with its mechanism.

pcscope.core.mechanism_finder finds the walk's step budget, the store relinking the
structure it walks and its prefetches, and pcscope.core.chain_walk the register its index
wraps at, the mask on its link, the second random access of each step, how far it
reaches, the loads beside it and a pair of links read as two halves. The
mechanism's checks say these in words for the reader (with each instruction's PC); the
advice reads them here (a metric is one figure, and these are registers and instructions),
so no sentence is written to be parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec


@dataclass(frozen=True)
class WrapBound:
    """The chained loads' index wrapped at a register the walk does not write."""

    register: str  # as the code spells it (``w7``)
    wraps: tuple[str, ...]  # the instructions adding it and choosing (or skipping) it
    compares: tuple[str, ...]  # the walk's compares against it
    setter: str  # the instruction before the walk setting it ("" when none is found)
    argument: bool  # nothing in the function before the walk sets it


@dataclass(frozen=True)
class SecondAccess:
    """A load each step addresses with the link it just loaded (the hottest such load):
    each instruction as the checks write it, with its PC (```ldr w1, [x2]` at 0x10``)."""

    load: str
    key: str  # the chained load whose link addresses it
    through: tuple[str, ...]  # what the link passes through on the way, in order
    others: tuple[str, ...]  # the other links addressing it on other paths
    branch: str | None  # the compare of its value before a branch, without its PC
    also: tuple[str, ...]  # more loads addressed the same way


@dataclass(frozen=True)
class SecondReach:
    """How far a step's second access moves with the link: a value on its address path
    bounded by the link's width or by the walk leaving once it reaches a register."""

    load: str  # the second access
    value: str  # the instruction writing the bounded value (the link's load for a width)
    register: str  # that value's register, as spelled
    stride: int  # bytes the address moves per unit of the value (negative: below its base)
    span: int | None  # bytes, when the value's width bounds it (2^width x |stride|)
    bits: int | None  # that width
    bound: str | None  # else the register the walk leaves at once the value reaches it
    compare: str  # the compare against ``bound`` ("" with a width)
    offsets: tuple[str, ...]  # the access's other address registers the walk writes


@dataclass(frozen=True)
class Beside:
    """Another load the link addresses, placed against the second access: its address is
    the access's plus ``sign`` x ``register`` plus ``offset`` bytes."""

    load: str
    register: str  # "" when the two differ by a constant only
    sign: int  # -1, 0 or 1
    offset: int


@dataclass(frozen=True)
class PairedLinks:
    """Two link loads reading the two halves of one pair, one on each side of a branch on
    the second access's value."""

    halves: tuple[str, str]  # the branch target's load, then the fall-through's
    size: int  # bytes of the pair
    branch: str  # the conditional branch choosing between them


class ChaseValues(msgspec.Struct, frozen=True, tag="chase"):
    """A walk's limits, writes and prefetches the advice addresses (None: the loop has
    none; ``ChaseValues()``: none of them)."""

    budget: str | None = None  # the register counting the steps down to zero, as spelled
    relink: str | None = None  # the store writing a loaded link back (instruction and PC)
    wrap: WrapBound | None = None
    # the mask on the link as the checks say it without the PCs (its ``and`` and what sets
    # the register: ```and w1, w1, w12`, set outside the rows read, value not in the code``)
    mask: str | None = None
    prefetched: bool = False  # the loop already issues a prefetch
    second: SecondAccess | None = None
    reach: SecondReach | None = None  # how far the second access moves with the link
    beside: tuple[Beside, ...] = ()  # the loads the link addresses near it
    pair: PairedLinks | None = None
    # the first reject (when it rejects any step) and the next reject comparing the adjacent
    # byte, instruction and PC (```ldrb w3, [x1]` at 0x1000``)
    reject: str | None = None
    paired: str | None = None


def counts_down(budget: str) -> str:
    """What a step budget does, as the checks and the advice both say it."""
    return f"{budget} counts down by one per step and ends the walk at zero"
