"""Mechanisms that are the inner and outer loops of one loop nest: one algorithm, whose
ideas should name each other (the inner loop's work is what the outer loop's iterations
wait on; a change to one changes the other's figures).

A mechanism's loop is the warm loop of its function holding its heaviest site's key
instruction (pcscope.core.natural_loops). Two mechanisms are one nest when one's loop is
nested in the other's: its body lies in the outer loop's body.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import replace
from typing import TYPE_CHECKING

from pcscope.core import natural_loops
from pcscope.core.mechanisms import Mechanism
from pcscope.core.nest_values import NestValues

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

MIN_SHARE = 0.005  # a mechanism this small becomes no idea: naming it would lead nowhere
INNER = "the inner loop of this nest is "  # check prefixes the advice leaves out (said in full)
OUTER = "the outer loop of this nest is "


def link(finder: _Finder, found: list[Mechanism]) -> list[Mechanism]:
    """``found`` with the mechanisms (of at least MIN_SHARE) whose loops nest naming each
    other."""
    p = finder.p
    loops = finder.function_loops
    at = natural_loops.loop_at(loops)
    loop_of: dict[int, list[str]] = defaultdict(list)  # loop position -> mechanism IDs
    for m in found:
        key = p.row_of(m.sites[0].pc) if m.sites else None
        if key in at and m.share >= MIN_SHARE:
            loop_of[at[key]].append(m.id)
    # each mechanism's checks in the order the nests are found, and its nest as values
    added: dict[str, list[str]] = defaultdict(list)
    inner_of: dict[str, list[str]] = defaultdict(list)
    outer_of: dict[str, list[str]] = defaultdict(list)
    for outer, outer_ids in loop_of.items():
        for inner in natural_loops.nested_in(loops, loops[outer]):
            for inner_id in loop_of.get(at[inner.head], ()):
                for outer_id in outer_ids:
                    added[outer_id].append(f"{INNER}`{inner_id}`")
                    added[inner_id].append(f"{OUTER}`{outer_id}`")
                    inner_of[outer_id].append(inner_id)
                    outer_of[inner_id].append(outer_id)
    return [replace(m, checks=(*m.checks, *added[m.id]), values=(
        *m.values, NestValues(tuple(inner_of[m.id]), tuple(outer_of[m.id]))))
            if m.id in added else m for m in found]
