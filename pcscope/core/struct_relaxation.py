"""Cost relaxation over an array of structures: a tight loop that adds an entry of a
contiguous price or cost table to a base and compares the sum with one field of an array
of structs, updating the struct only when the new cost is lower (a shortest-path or
optimal-parse relaxation, such as an LZ encoder's price loop).

Per iteration the loop touches one 4-byte field of a struct of 16 bytes or more, so most
of each cache line it reads is other fields, and the compare-and-branch runs one element
at a time. With the compared field in its own array (structure of arrays), four
iterations become `ldr q` of four table entries, `add v.4s` of the base, `ldr q` of four
fields, `cmhi` and one `umaxv` to see whether any lane improved; the rare updates stay
scalar.

Read on tight loops (pcscope.core.natural_loops.tight_loops) with
pcscope.core.loop_dataflow. It fires when the loop has:
- a *table* load whose address moves by its own size each iteration (contiguous entries);
- a *field* load whose address moves by STRIDE_MIN bytes or more each iteration, more than
  its size (one field of an array of structs);
- a compare of a value computed from the table load with one from the field load, and a
  conditional branch on it;
- stores to that same field (``[base, #offset]`` of the field load) on at most RARE of the
  iterations.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa, loop_dataflow
from pcscope.core.mechanisms import Mechanism, Metric
from pcscope.core.memory_state import field_offsets
from pcscope.core.relaxation_values import RelaxationValues
from pcscope.core.shapes import FLAG_SETTERS, Op

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

STRIDE_MIN = 16  # bytes between consecutive elements that make it an array of structs
RARE = 0.25  # at most this share of iterations updates the struct
MIN_SHARE = 0.005  # a loop's own share worth a mechanism
_SIZES = {"b": 1, "h": 2, "w": 4, "x": 8, "s": 4, "d": 8, "q": 16}
_COMPARES = frozenset(("cmp", "cmn", "subs"))
# the check of a table entry added to a base the loop does not load (the advice reads it)
FIXED_BASE = "the table entry is added to values the loop does not load (a fixed base)"


@dataclass(frozen=True)
class Relaxation:
    rows: tuple[int, ...]  # the loop's rows
    table: int  # row of the table load
    field: int  # row of the field load
    compare: int  # row of the compare
    stride: int  # bytes between structs
    updates: int  # executions of the field's store
    iterations: int  # the loop head's count
    base_fixed: bool  # the table entry is added to values the loop does not load


def find(finder: _Finder, claimed: np.ndarray) -> list[Mechanism]:
    """One mechanism per function, a site per relaxation loop; loops with a row another
    mechanism counts are left to it."""
    p = finder.p
    by_fn: dict[int, list[Relaxation]] = {}
    for rows in finder.tight_loops:
        fn = int(p.function[rows.start])
        if fn < 0 or finder._libc_names[fn] is not None or claimed[rows.start:rows.stop].any() \
                or finder.share(rows) < MIN_SHARE:
            continue
        found = relaxation([finder.op(r) for r in rows], list(rows),
                           [finder.count(r) for r in rows])
        if found is not None:
            by_fn.setdefault(fn, []).append(found)
    return [_mechanism(finder, loops) for loops in by_fn.values()]


def relaxation(ops: list[Op], rows: list[int], counts: list[int]) -> Relaxation | None:
    """The relaxation of one tight loop (``ops[0]`` its head), or None."""
    iterations = counts[0]
    if not iterations or any(isa.is_call(o.mnemonic) for o in ops):
        return None
    flow = loop_dataflow.read(ops)
    moves = {i: abs(s) for i, (o, s) in enumerate(zip(ops, flow.strides, strict=True))
             if o.load and s}  # bytes each load's address moves per iteration
    tables = {i for i, n in moves.items() if n == _size(ops[i])}
    fields = {i for i, n in moves.items() if n >= STRIDE_MIN and n > _size(ops[i]) and
              field_offsets(ops[i]) is not None}
    for c, o in enumerate(ops):
        if o.mnemonic not in _COMPARES or len(o.src) != 2 or not _branched(ops, c):
            continue
        sides = [_from(ops, c, reg, flow) for reg in o.src]
        for a, b in (sides, sides[::-1]):
            table = next((t for t in sorted(tables) if t in a and t not in b), None)
            field = next((f for f in sorted(fields) if f in b and f not in a), None)
            if table is None or field is None:
                continue
            stores = [i for i, s in enumerate(ops) if isa.is_store(s.mnemonic)
                      and field_offsets(s) == field_offsets(ops[field])]
            updates = sum(counts[i] for i in stores)
            if stores and updates <= RARE * iterations:
                return Relaxation(tuple(rows), rows[table], rows[field], rows[c],
                                  moves[field], updates, iterations, a == {table})
    return None


def _size(o: Op) -> int:
    m = o.mnemonic
    if m.endswith("b") and not m.endswith("sb"):
        return 1
    if m.endswith(("h", "sh")):
        return 2
    return 4 if m.endswith("sw") else _SIZES.get(o.operands[0][:1], 8)


def _branched(ops: list[Op], c: int) -> bool:
    """A conditional branch reads the flags the compare at ``c`` sets."""
    for o in ops[c + 1:]:
        if o.mnemonic.startswith("b."):
            return True
        if o.mnemonic in FLAG_SETTERS:
            return False
    return False


def _from(ops: list[Op], at: int, reg: str, flow: loop_dataflow.LoopValues) -> frozenset[int]:
    """The loads the value of ``reg`` read at ``at`` comes from: those of its last writer
    (its loaded value included when it is a load)."""
    for i in range(at - 1, -1, -1):
        if reg in ops[i].loaded:
            return flow.sources[i] | {i}
        if reg in ops[i].dest:
            return flow.sources[i]
    return frozenset({loop_dataflow.EARLIER}) if reg in flow.written else frozenset()


def _mechanism(finder: _Finder, loops: list[Relaxation]) -> Mechanism:
    top = max(loops, key=lambda x: finder.share(x.rows))
    p = finder.p
    read = RelaxationValues(f"`{p.asm(top.table)}`", f"`{p.asm(top.field)}`", top.base_fixed)
    checks = [
        f"a table entry at a stride of its own size: {read.table}",
        f"one field of a {top.stride}-byte struct per iteration: {read.field}",
        f"compared (`{p.asm(top.compare)}`) and branched on; the field is stored on "
        f"{top.updates / top.iterations:.1%} of the iterations ({top.updates:,} of "
        f"{top.iterations:,})",
    ]
    checks.append(FIXED_BASE if read.fixed_base else
                  "the table entry is added to other values loaded in the loop (a base that "
                  "changes with the index)")
    if len(loops) > 1:
        checks.append(f"{len(loops)} such loops in the function, updating on " + ", ".join(
            f"{x.updates / x.iterations:.1%} of {x.iterations:,} iterations "
            f"(`{p.asm(x.field)}` at {int(p.pc[x.field]):#x})" for x in loops))
    return finder.mechanism("struct-relaxation", [
        finder.site(x.rows, x.field) for x in loops], [
        Metric("iterations", sum(x.iterations for x in loops), "executions",
               "the loops' head counts"),
        Metric("struct stride", top.stride, "bytes",
               "how far the compared field's address moves per iteration"),
        Metric("update share", round(100.0 * top.updates / top.iterations, 1), "%",
               "executions of the field's store / iterations (the heaviest loop)"),
    ], checks, values=read)
