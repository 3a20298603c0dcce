"""Fixed-trip lookup sums: a tight loop that runs the same small number of times on every
entry (at most MAX_TRIPS) and adds up table lookups whose addresses it can compute without
waiting for any earlier lookup, such as an entropy coder's price of a symbol summed over
its bits (`price += prices[probs[context + bit]]`, eight trips per byte).

Nothing in such a loop waits on memory from one trip to the next, so its cost is the loop
itself: the compare and branch of every trip, and index arithmetic carried from trip to
trip. A full unroll (the trip count is a constant) deletes the compare and branch and lets
the index arithmetic of all trips be computed up front and the loads issue back to back;
a caller asking for the same sums again can keep them in a table per context.

Read on tight loops (pcscope.core.natural_loops.tight_loops) with
pcscope.core.loop_dataflow. It fires when the loop:
- has no call and no store;
- runs a whole number of trips per entry between MIN_TRIPS and MAX_TRIPS by the counts
  (exact counts only show this; sampled counts are never that round);
- exits on a compare with a constant or a register it does not write, of values that come
  from no load;
- adds a loaded value into an accumulator (``add w0, w0, w1``), and no load's address
  depends on a value loaded in an earlier trip (that would be a walk, not a sum).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa, loop_dataflow
from pcscope.core.fixed_trip_values import FixedTripValues
from pcscope.core.mechanisms import Mechanism, Metric
from pcscope.core.patterns import loop_trips
from pcscope.core.shapes import FLAG_SETTERS, Op

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

MIN_TRIPS, MAX_TRIPS = 2, 16
ROUND = 0.001  # trips per entry within this fraction of a whole number
MIN_SHARE = 0.005  # a loop's own share worth a mechanism
LOOP_CONTROL = 2  # instructions per trip a full unroll deletes: the compare and the branch
# the words of the check on a loop bound a register set before the loop holds (the advice
# reads FixedTripValues.varies)
VARIES = ("exits on a compare with a register set before the loop (the bound may differ "
          "between calls: the counts show the same average, not the same bound)")


@dataclass(frozen=True)
class FixedTripSum:
    rows: tuple[int, ...]
    trips: int  # per entry
    entries: int
    per_trip: float  # instructions executed per trip
    loads_per_trip: int
    accumulator: int  # row of the add that sums the lookups
    bound: str  # what the exit compares with: ``#imm``, ``zero`` or a register name


def find(finder: _Finder, claimed: np.ndarray) -> list[Mechanism]:
    """One mechanism per function, a site per loop; loops with a row another mechanism
    counts are left to it."""
    p = finder.p
    by_fn: dict[int, list[FixedTripSum]] = {}
    for rows in finder.tight_loops:
        fn = int(p.function[rows.start])
        if fn < 0 or finder._libc_names[fn] is not None or \
                claimed[rows.start:rows.stop].any() or finder.share(rows) < MIN_SHARE:
            continue
        ops = [finder.op(r) for r in rows]
        back = [r for r, o in zip(rows, ops, strict=True) if o.target == int(p.pc[rows.start])]
        trips = loop_trips(p, rows.start, *back)
        found = fixed_trip_sum(ops, list(rows), [finder.count(r) for r in rows], trips)
        if found is not None:
            by_fn.setdefault(fn, []).append(found)
    return [_mechanism(finder, fn, loops) for fn, loops in by_fn.items()]


def fixed_trip_sum(ops: list[Op], rows: list[int], counts: list[int],
                   trips: float) -> FixedTripSum | None:
    """The fixed-trip lookup sum of one tight loop (``ops[0]`` its head, the back edge
    last) with ``trips`` iterations per entry, or None."""
    whole = round(trips)
    if not MIN_TRIPS <= whole <= MAX_TRIPS or abs(trips - whole) > ROUND * trips or \
            not counts[0]:
        return None
    if any(isa.is_call(o.mnemonic) or isa.is_store(o.mnemonic) for o in ops):
        return None
    flow = loop_dataflow.read(ops)
    loads = [i for i, o in enumerate(ops) if o.load]
    if not loads or any(loop_dataflow.EARLIER in flow.sources[i] for i in loads):
        return None
    exit_ = len(ops) - 1
    bound = _bound(ops, exit_, flow) if isa.is_conditional_branch(ops[exit_].mnemonic) else None
    if bound is None or flow.sources[exit_]:
        return None
    accumulator = next((i for i, o in enumerate(ops) if o.mnemonic == "add" and o.dest and
                        o.dest[0] in o.src and set(flow.sources[i]) - {loop_dataflow.EARLIER}),
                       None)
    if accumulator is None:
        return None
    return FixedTripSum(tuple(rows), whole, round(counts[0] / whole),
                        round(sum(counts) / counts[0], 1), len(loads), rows[accumulator], bound)


def _bound(ops: list[Op], exit_: int, flow: loop_dataflow.LoopValues) -> str | None:
    """What the exit compares with when the loop does not change it: ``#imm``, a register
    name, or ``zero`` (``cbz``/``cbnz``/``tbz``/``tbnz``); None otherwise."""
    branch = ops[exit_]
    if not branch.mnemonic.startswith("b."):
        return "zero"
    setter = next((o for o in reversed(ops[:exit_]) if o.mnemonic in FLAG_SETTERS), None)
    if setter is None or len(setter.operands) < 2:
        return None
    other = setter.operands[-1]
    if loop_dataflow.immediate(other) is not None:
        return other
    reg = isa.parse_register(other)
    return reg if reg is not None and reg not in flow.written else None


def _bound_text(finder: _Finder, loop: FixedTripSum) -> str:
    """The exit's bound as a reader checks it: an immediate, or the instruction before the
    loop that last set the bound register (a constant, or a value that may vary by call)."""
    if loop.bound == "zero" or loop.bound.startswith("#"):
        return ("exits on a compare with " + ("zero" if loop.bound == "zero" else
                                              f"the immediate {loop.bound}"))
    head = loop.rows[0]
    first = int(finder.p.function_rows(int(finder.p.function[head]))[0])
    setter = next((r for r in range(head - 1, first - 1, -1)
                   if loop.bound in finder.op(r).dest), None)
    if setter is not None and loop_dataflow.immediate(finder.op(setter).operands[-1]) is not None \
            and finder.op(setter).mnemonic in ("movz", "movn", "mov"):
        return f"exits on a compare with a constant set before the loop (`{finder.p.asm(setter)}`)"
    return VARIES


def _mechanism(finder: _Finder, fn: int, loops: list[FixedTripSum]) -> Mechanism:
    p = finder.p
    top = max(loops, key=lambda x: finder.share(x.rows))
    body = p.function_rows(fn)
    calls = finder.count(int(body[0]))
    per_call = float(p.samples[body].sum()) / calls if calls else 0.0
    bound = _bound_text(finder, top)
    read = FixedTripValues(
        ", ".join(f"{x.trips} trips × {x.per_trip:g} instructions ({x.entries:,} entries)"
                  for x in loops), f"`{p.asm(top.accumulator)}`", bound == VARIES)
    return finder.mechanism("fixed-trip-sum", [
        finder.site(x.rows, x.accumulator) for x in loops], [
        Metric("trips per entry", top.trips, "x",
               "loop head count / entries (a whole number on every loop entry)"),
        Metric("instructions per trip", top.per_trip, "instructions",
               "the loop's executions / its head count"),
        Metric("loads per trip", top.loads_per_trip, "loads", "loads in the loop body"),
        Metric("loop entries", sum(x.entries for x in loops), "executions",
               "head count / trips per entry, over the loops"),
        Metric("function calls", calls, "executions", "the function's first instruction"),
        Metric("instructions per call", round(per_call, 1), "instructions",
               "the function's executions / its calls"),
    ], [
        f"loops whose head count is a whole multiple of their entries: {read.loops}",
        "no call and no store in the loop; it " + bound,
        f"loaded values summed into one register: {read.summed}",
        "no load address depends on a value loaded in an earlier trip",
    ], values=read)
