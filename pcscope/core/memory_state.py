"""Loop state kept in memory: a hot loop that reloads fields of a structure every iteration
and stores some of them back, instead of keeping them in registers.

A compiler keeps a field in a register across a loop only when it can prove that no store in
the loop writes it. A store through a ``char *`` (or any pointer it cannot tell apart from the
structure) may alias every field, so each iteration reloads them, and a field the loop
updates goes through memory: stored, then reloaded next iteration (store-to-load forwarding
on the loop's critical path). The fix is in the source: copy the fields to locals for the
loop and write them back after it (or ``restrict``). The detector reads one loop:

- a *field* access is ``[base, #imm]`` (``ldr``/``str``/``ldp``/``stp``/``ldur``/``stur``, no
  index, no writeback) whose base the loop never changes, or changes only by reloading it
  from such a field (a pointer to a structure kept in a structure) or by ``adrp``/``adr``
  (a global); stack slots (``sp``, ``x29``) are spills, not fields;
- it fires when the loop loads and stores back at least one field (a loop without stores
  would have its invariant loads hoisted: reloads alone mean ``volatile`` or atomics), no call runs on most
  iterations (a callee may change the fields, so reloading after it is required), and
  field loads and stores are at least FIELDS_PER_ITERATION per iteration and FIELD_FRACTION
  of the loop's instructions.

A field is said to be used "every iteration" only when its accesses run on at least EVERY of
the iterations (exact counts: the rows' counts over the head's). The part of the iterations
touching a field is the sum of its access rows' counts, less rows another of them dominates
or post-dominates in the loop (they run on the same iterations), capped at one: exact for one
row left, an upper bound for several (they may share an iteration).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property

from pcscope.core import isa
from pcscope.core.mechanisms import Metric
from pcscope.core.memory_values import EVERY, FieldUse, MemoryValues
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

FIELDS_PER_ITERATION = 3.0  # field loads and stores per iteration that make state in memory
FIELD_FRACTION = 0.2  # ...and their part of the loop's executed instructions
CALLS_PER_ITERATION = 0.5  # calls per iteration from which reloading is required
STABLE_DEPTH = 3  # pointer loads followed back from a base to where it comes from
SLICE = 16  # instructions looked back from a store for the loaded value it depends on
LISTED = 6  # fields a check lists (the hottest loop's first in address order)
RELOADS_LISTED = 3  # reloads a check each names
_FRAME = frozenset(("sp", "x29"))
_CONSTANT = frozenset(("adrp", "adr"))
_MOVES = frozenset(("mov", "orr"))  # ``mov x0, x19`` (``orr x0, xzr, x19``) copies an address
_SIZES = {"w": 4, "x": 8, "s": 4, "d": 8, "q": 16, "b": 1, "h": 2}
# Only a byte store may alias a field of any type (C's character-type rule); a halfword
# store aliases only 16-bit fields, so it is not named as the cause of the reloads.
_BYTE_STORES = frozenset(("strb", "sturb"))
# the check naming a reload nothing could have changed (the advice reads it)
RELOADED = "reloaded with no store between (a missed CSE): "
# the checks listing stored-back fields by how often they run (the advice names them from
# ``values``), and the aliasing byte store (the advice quotes it)
STORED_EVERY = "fields loaded and stored back every iteration: "
STORED_FEWER = "fields loaded and stored back on fewer iterations: "
BYTE_STORE = "the hottest byte store through another address: "


@dataclass(frozen=True)
class Reload:
    """A field loaded again after a first load of it, on paths with no store of any kind, no
    call and no write of its base between: nothing can have changed it, so the reloads are a
    missed common subexpression, not an alias the compiler had to respect. Summed over every
    path from the first load (a switch reloading the field on each of its arms)."""

    field: str  # as ``[x0, #0x10]``
    first: int  # the PC of the first load
    again: tuple[int, ...]  # the PCs of the reloads, hottest first
    runs: int  # the reloads' executions
    redundant: int  # of them, at least this many came from an earlier load, nothing between


@dataclass(frozen=True)
class ByteStore:
    """The hottest byte store through an address that is not a field (the usual alias)."""

    pc: int
    asm: str
    runs: int


@dataclass(frozen=True)
class LoopState:
    """What one loop keeps in memory, from its instructions and counts."""

    rows: tuple[int, ...]  # the field loads and stores (what keeping them in registers removes)
    stored_back: tuple[FieldUse, ...]  # fields loaded and stored in the loop
    reloaded: int  # fields only loaded (invariant) on EVERY of the iterations
    reloaded_fewer: int  # fields only loaded, on fewer iterations
    write_only: int  # fields only stored (could be stored once after the loop)
    recurrences: tuple[str, ...]  # stored-back fields whose stored value comes from their load
    byte_stores: int  # byte stores through other addresses (the usual alias)
    byte_store_runs: int  # their executions
    byte_store: ByteStore | None  # the hottest of them
    reloads: tuple[Reload, ...]  # a field loaded twice with no store between (missed CSE)
    iterations: int
    per_iteration: float  # field loads and stores per iteration
    fraction: float  # their part of the loop's instruction executions


def find(profile: Profile, loops: list[list[int]],
         op: Callable[[int], Op]) -> list[tuple[int, LoopState]]:
    """Every hot loop keeping state in memory: (function code, its state), from ``loops``
    (each loop's own rows, pcscope.core.natural_loops)."""
    out = []
    for rows in loops:
        state = loop_state([op(r) for r in rows], rows,
                           [int(profile.samples[r]) for r in rows])
        if state is not None:
            out.append((int(profile.function[rows[0]]), state))
    return out


def loop_state(ops: list[Op], rows: list[int], counts: list[int]) -> LoopState | None:
    """The loop's state in memory, or None when it keeps its state in registers (or must
    reload it: a call on most iterations, no store at all). ``ops[0]`` is the loop head."""
    iterations = counts[0]
    if not iterations:
        return None
    calls = sum(c for o, c in zip(ops, counts, strict=True) if isa.is_call(o.mnemonic))
    if calls >= CALLS_PER_ITERATION * iterations:
        return None
    loads: dict[tuple[str, int], list[int]] = defaultdict(list)
    stores: dict[tuple[str, int], list[int]] = defaultdict(list)
    bytes_at = []
    for i, o in enumerate(ops):
        fields = field_offsets(o)
        if fields is None:
            if o.mnemonic in _BYTE_STORES and counts[i] > 0:
                bytes_at.append(i)
            continue
        if not _stable_base(ops, i, o.addr[0]):
            continue
        for key in fields:
            (loads if o.load else stores)[key].append(i)
    if not stores:
        return None
    picked = sorted({i for group in (*loads.values(), *stores.values()) for i in group})
    done = sum(counts[i] for i in picked)
    total = sum(counts)
    per_iteration = done / iterations
    if per_iteration < FIELDS_PER_ITERATION or done < FIELD_FRACTION * total:
        return None
    back = sorted(k for k in stores if k in loads)
    if not back:
        return None  # stores only, never read back: not state carried from one iteration
    paths = _Paths(ops, counts)
    only_read = [paths.use(loads[k]) for k in loads if k not in stores]
    hottest = max(bytes_at, key=lambda i: (counts[i], -i), default=None)
    return LoopState(
        rows=tuple(rows[i] for i in picked),
        stored_back=tuple(_stored_back(_text(k), paths.use(loads[k]), paths.use(stores[k]))
                          for k in back),
        reloaded=sum(1 for part, _ in only_read if part >= EVERY),
        reloaded_fewer=sum(1 for part, _ in only_read if part < EVERY),
        write_only=sum(1 for k in stores if k not in loads),
        recurrences=tuple(_text(k) for k in back if _recurs(ops, loads[k], stores[k])),
        byte_stores=len(bytes_at),
        byte_store_runs=sum(counts[i] for i in bytes_at),
        byte_store=None if hottest is None else ByteStore(
            ops[hottest].pc, f"{ops[hottest].mnemonic} {', '.join(ops[hottest].operands)}",
            counts[hottest]),
        reloads=_reloads(ops, counts, loads, paths),
        iterations=iterations,
        per_iteration=round(per_iteration, 1),
        fraction=round(done / total, 3),
    )


def _stored_back(field: str, loaded: tuple[float, bool],
                 stored: tuple[float, bool]) -> FieldUse:
    """A field is loaded and stored back on no more iterations than the rarer of the two."""
    part, bound = min(loaded, stored)
    return FieldUse(field, part, bound)


class _Paths:
    """The loop's executed control flow, row by row (``ops[0]`` is the head; a branch back
    to it, or out of the loop's rows, ends the iteration), and how many of its iterations
    run a set of rows."""

    def __init__(self, ops: list[Op], counts: list[int]) -> None:
        self.counts = counts
        at = {o.pc: i for i, o in enumerate(ops)}
        self.end = len(ops)
        self.next: list[list[int]] = []
        for o in ops:
            if o.mnemonic in isa.RETURNS or (o.mnemonic in isa.INDIRECT and
                                             not isa.is_call(o.mnemonic)):
                self.next.append([self.end])  # where it goes is unknown: the iteration ends
                continue
            ways = [] if isa.ends_flow(o.mnemonic) else [o.pc + 4]
            if o.target is not None and not isa.is_call(o.mnemonic):
                ways.append(o.target)
            self.next.append([self.end if at.get(pc, 0) == 0 else at[pc] for pc in ways
                              if at.get(pc, 0) == 0 or counts[at[pc]] > 0])
        self.reached = self._reach(0, None)

    def use(self, at: list[int]) -> tuple[float, bool]:
        """The part of the iterations that run one of rows ``at`` (at most 1), and whether it
        is an upper bound: rows another kept one dominates or post-dominates run on the same
        iterations as it and are not added."""
        kept: list[int] = []
        for i in sorted(at, key=lambda i: (-self.counts[i], i)):
            if not any(self._dominates(k, i) or self._dominates(i, k, after=True)
                       for k in kept):
                kept.append(i)
        runs = sum(self.counts[i] for i in kept)
        return min(1.0, runs / self.counts[0]), len(kept) > 1

    def clean_from(self, start: int, blocked: set[int]) -> set[int]:
        """The rows reached from ``start`` (itself included) within one iteration without
        running a ``blocked`` row."""
        todo, seen = [start], set()
        while todo:
            i = todo.pop()
            if i in seen or i == self.end or (i != start and i in blocked):
                continue
            seen.add(i)
            todo.extend(self.next[i])
        return seen

    @cached_property
    def before(self) -> dict[int, list[int]]:
        """Per row (or the iteration's end): the rows going on to it, built on first use."""
        out: dict[int, list[int]] = defaultdict(list)
        for i, ways in enumerate(self.next):
            for j in ways:
                out[j].append(i)
        return out

    def feeding(self, targets: list[int], within: set[int]) -> set[int]:
        """The rows of ``within`` from which one of ``targets`` is reached inside it."""
        todo, seen = list(targets), set()
        while todo:
            i = todo.pop()
            if i not in seen:
                seen.add(i)
                todo.extend(k for k in self.before.get(i, ()) if k in within)
        return seen

    def _dominates(self, a: int, b: int, after: bool = False) -> bool:
        """``a`` is on every path from the head to ``b`` (``after``: every path from ``a`` to
        the iteration's end passes ``b``, i.e. ``b`` post-dominates ``a``)."""
        if after:
            return self.end not in self._reach(a, b, start_after=True)
        return b in self.reached and b not in self._reach(0, a)

    def _reach(self, start: int, avoid: int | None, start_after: bool = False) -> set[int]:
        todo = list(self.next[start]) if start_after else [start]
        seen: set[int] = set()
        while todo:
            i = todo.pop()
            if i in seen or i == avoid:
                continue
            seen.add(i)
            if i != self.end:
                todo.extend(self.next[i])
        return seen


def field_offsets(o: Op, frame: bool = False) -> tuple[tuple[str, int], ...] | None:
    """The (base, offset) fields a plain load or store at ``[base, #imm]`` touches, or None
    for anything else (indexed, writeback, exclusive or ordered accesses, and stack slots
    unless ``frame``)."""
    m = o.mnemonic
    if not m.startswith(("ldr", "ldur", "ldp", "str", "stur", "stp")) or m.startswith(
            ("ldnp", "stnp")) or o.writeback or len(o.addr) != 1 or \
            (o.addr[0] in _FRAME and not frame):
        return None
    mem = next((x for x in o.operands if x.startswith("[")), None)
    if mem is None:
        return None
    parts = [p.strip() for p in mem.strip("[]!").split(",")]
    try:
        offset = int(parts[1].lstrip("#"), 0) if len(parts) > 1 else 0
    except ValueError:
        return None
    if m in ("ldp", "stp", "ldpsw"):
        size = _SIZES.get(o.operands[0][:1], 8)
        return ((o.addr[0], offset), (o.addr[0], offset + size))
    return ((o.addr[0], offset),)


def _stable_base(ops: list[Op], at: int, reg: str, depth: int = 0) -> bool:
    """``reg`` holds the same address at ``ops[at]`` on every iteration: the loop does not
    write it before (nor, loop-carried, after), or its value there comes from ``adrp``/
    ``adr``, a copy of such a register, or a load of a field of one that the loop does not
    store (a pointer kept in a structure). Registers reused as temporaries elsewhere in the loop do not matter."""
    if reg in _FRAME or depth > STABLE_DEPTH:
        return False
    j = next((k for k in range(at - 1, -1, -1) if reg in ops[k].dest), None)
    if j is None:  # loop-carried: the last write of the previous iteration, if any
        j = next((k for k in range(len(ops) - 1, at - 1, -1) if reg in ops[k].dest), None)
    if j is None:
        return True
    w = ops[j]
    if w.mnemonic in _CONSTANT:
        return True
    if w.mnemonic in _MOVES and len(w.src) == 1:
        return _stable_base(ops, j, w.src[0], depth + 1)
    pointer = field_offsets(w)
    return w.load and pointer is not None and not _stored(ops, pointer) and \
        _stable_base(ops, j, w.addr[0], depth + 1)


def _stored(ops: list[Op], fields: tuple[tuple[str, int], ...]) -> bool:
    """The loop stores to one of ``fields`` (by base register and offset): a pointer the
    loop advances (``next_in++``) is data, not a structure's address."""
    return any(not o.load and (f := field_offsets(o)) is not None and set(f) & set(fields)
               for o in ops)


def _recurs(ops: list[Op], load_at: list[int], store_at: list[int]) -> bool:
    """The value stored to a field comes (within SLICE instructions) from its own load."""
    loaded = {i for i in load_at}
    for s in store_at:
        need = {r for r in ops[s].src if r not in ops[s].addr}
        for i in range(s - 1, max(-1, s - 1 - SLICE), -1):
            written = need.intersection(ops[i].dest)
            if not written:
                continue
            if i in loaded:
                return True
            need = (need - written) | set(ops[i].src)
    return False


def _reloads(ops: list[Op], counts: list[int], loads: dict[tuple[str, int], list[int]],
             paths: _Paths) -> tuple[Reload, ...]:
    """Each field's reloads reached from its first load (in loop order) with no store, call,
    atomic or write of the base between, on every such path. An execution of a reload that
    did not come from an earlier load entered those clean paths along an edge from outside
    them after its last load, and each such entry feeds at most one first reload: the
    entering edges' counts bound those executions, so the rest are certainly redundant."""
    out = []
    for key, at in loads.items():
        if len(at) < 2:
            continue
        blocked = {k for k, o in enumerate(ops) if _blocks(o, key[0])}
        for first in at:
            if key[0] in ops[first].dest:
                continue  # ``ldr x0, [x0, #8]`` moves its base: the next load reads elsewhere
            clean = paths.clean_from(first, blocked)
            again = [j for j in at if j != first and j in clean]
            if not again:
                continue
            feeding = paths.feeding(again, clean)
            entering = sum(min(counts[u], counts[v]) for u, ways in enumerate(paths.next)
                           if u not in clean for v in ways if v in feeding and v != first)
            runs = sum(counts[j] for j in again)
            if runs > entering:
                again.sort(key=lambda j: (-counts[j], j))
                out.append(Reload(_text(key), ops[first].pc, tuple(ops[j].pc for j in again),
                                  runs, runs - entering))
                break
    return tuple(sorted(out, key=lambda r: (-r.redundant, r.first)))


def _blocks(o: Op, base: str) -> bool:
    """``o`` may change a field at ``[base, ...]`` or its base: a store of any kind, a call,
    an atomic, or a write of the base register."""
    return isa.is_store(o.mnemonic) or isa.is_call(o.mnemonic) or \
        isa.is_atomic(o.mnemonic) or base in o.dest


def _text(field: tuple[str, int]) -> str:
    base, offset = field
    return f"[{base}, #{offset:#x}]" if offset else f"[{base}]"


def metrics(state: LoopState) -> list[Metric]:
    return [
        Metric("iterations", state.iterations, "executions", "the loop head's count"),
        Metric("field accesses per iteration", state.per_iteration, "instructions",
               "field loads and stores of the loop / its iterations"),
        Metric("field access share of the loop", round(100.0 * state.fraction, 1), "%",
               "field loads and stores / the loop's instruction executions"),
        Metric("fields stored back", len(state.stored_back), "fields",
               "fields both loaded and stored in the loop"),
        Metric("fields only reloaded", state.reloaded, "fields",
               f"loop-invariant fields loaded on at least {EVERY:.0%} of iterations"),
        Metric("fields only reloaded on fewer iterations", state.reloaded_fewer, "fields",
               f"loop-invariant fields loaded on fewer than {EVERY:.0%} of iterations"),
        Metric("recurrences through memory", len(state.recurrences), "fields",
               "stored-back fields whose new value is computed from the loaded one"),
        Metric("byte stores per iteration",
               round(state.byte_store_runs / state.iterations, 2), "x",
               "executions of byte stores through other addresses / iterations"),
    ]


def values(state: LoopState) -> MemoryValues:
    """The fields the checks list, as the advice names them (pcscope.core.memory_values)."""
    b = state.byte_store
    return MemoryValues(tuple(f.field for f in state.stored_back if f.every)[:LISTED],
                        tuple(f for f in state.stored_back if not f.every)[:LISTED],
                        state.recurrences[:LISTED],
                        tuple(r.field for r in state.reloads[:RELOADS_LISTED]),
                        tuple(f"{r.field} at {r.first:#x}, again at "
                              f"{', '.join(f'{pc:#x}' for pc in r.again[:6])} (at least "
                              f"{r.redundant:,} of {r.runs:,} runs, "
                              f"{r.redundant / state.iterations:.0%} of iterations)"
                              for r in state.reloads[:RELOADS_LISTED]),
                        "" if b is None else
                        f"`{b.asm}` at {b.pc:#x}, {b.runs / state.iterations:.2g}× per "
                        f"iteration ({b.runs:,} of {state.iterations:,})")


def checks(state: LoopState) -> list[str]:
    out = ["loads and stores of [base, #offset] fields whose base the loop does not change "
           "(or reloads from such a field), not stack slots",
           f"{state.per_iteration:g} field loads and stores per iteration "
           f"({state.fraction:.0%} of the loop's instructions); no call on most iterations"]
    listed = values(state)
    if listed.every:
        out.append(STORED_EVERY + ", ".join(listed.every))
    if listed.fewer:
        out.append(STORED_FEWER + ", ".join(f.text() for f in listed.fewer))
    if listed.recurrences:
        out.append("stored value computed from the field's own load (a recurrence through "
                   "memory, store-to-load forwarding each iteration): "
                   + ", ".join(listed.recurrences))
    if listed.byte_store:
        out.append(f"{state.byte_stores} byte store(s) through other addresses "
                   f"in the loop (a char store may alias any field, which forces the reloads)")
        out.append(BYTE_STORE + listed.byte_store)
    out += [RELOADED + r for r in listed.reloads]
    return out
