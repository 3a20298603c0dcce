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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core import isa
from pcscope.core.mechanisms import Metric
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

FIELDS_PER_ITERATION = 3.0  # field loads and stores per iteration that make state in memory
FIELD_FRACTION = 0.2  # ...and their part of the loop's executed instructions
CALLS_PER_ITERATION = 0.5  # calls per iteration from which reloading is required
STABLE_DEPTH = 3  # pointer loads followed back from a base to where it comes from
SLICE = 16  # instructions looked back from a store for the loaded value it depends on
_FRAME = frozenset(("sp", "x29"))
_CONSTANT = frozenset(("adrp", "adr"))
_MOVES = frozenset(("mov", "orr"))  # ``mov x0, x19`` (``orr x0, xzr, x19``) copies an address
_SIZES = {"w": 4, "x": 8, "s": 4, "d": 8, "q": 16, "b": 1, "h": 2}
# Only a byte store may alias a field of any type (C's character-type rule); a halfword
# store aliases only 16-bit fields, so it is not named as the cause of the reloads.
_BYTE_STORES = frozenset(("strb", "sturb"))
# the check naming a reload nothing could have changed (the advice reads it)
RELOADED = "reloaded with no store between (a missed CSE): "


@dataclass(frozen=True)
class Reload:
    """A field loaded again on a straight path from an earlier load of it, with no store of
    any kind and no write of its base between: nothing can have changed it, so the second
    load is a missed common subexpression, not an alias the compiler had to respect."""

    field: str  # as ``[x0, #0x10]``
    first: int  # the PCs of the two loads
    again: int
    runs: int  # the second load's executions
    redundant: int  # of them, at least this many came down the straight path


@dataclass(frozen=True)
class LoopState:
    """What one loop keeps in memory, from its instructions and counts."""

    rows: tuple[int, ...]  # the field loads and stores (what keeping them in registers removes)
    stored_back: tuple[str, ...]  # fields loaded and stored in the loop, as ``[x19, #0x80]``
    reloaded: int  # fields only loaded (invariant, reloaded every iteration)
    write_only: int  # fields only stored (could be stored once after the loop)
    recurrences: tuple[str, ...]  # stored-back fields whose stored value comes from their load
    byte_stores: int  # byte stores through other addresses (the usual alias)
    byte_store_runs: int  # their executions
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
    byte_stores = byte_store_runs = 0
    for i, o in enumerate(ops):
        fields = field_offsets(o)
        if fields is None:
            if o.mnemonic in _BYTE_STORES and counts[i] > 0:
                byte_stores += 1
                byte_store_runs += counts[i]
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
    return LoopState(
        rows=tuple(rows[i] for i in picked),
        stored_back=tuple(_text(k) for k in back),
        reloaded=sum(1 for k in loads if k not in stores),
        write_only=sum(1 for k in stores if k not in loads),
        recurrences=tuple(_text(k) for k in back if _recurs(ops, loads[k], stores[k])),
        byte_stores=byte_stores,
        byte_store_runs=byte_store_runs,
        reloads=_reloads(ops, counts, loads),
        iterations=iterations,
        per_iteration=round(per_iteration, 1),
        fraction=round(done / total, 3),
    )


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


def _reloads(ops: list[Op], counts: list[int],
             loads: dict[tuple[str, int], list[int]]) -> tuple[Reload, ...]:
    """Each field's second load on a straight run of instructions (consecutive addresses,
    no unconditional branch) from its first with no store, call or write of the base
    between. Branches from elsewhere in the loop into the run bring executions that did not
    pass the first load: at most their counts, so the rest are certainly redundant."""
    out = []
    for key, at in loads.items():
        for i, j in zip(at, at[1:], strict=False):
            between = ops[i + 1:j]
            if not _straight(ops[i:j + 1]) or any(
                    isa.is_store(o.mnemonic) or isa.is_call(o.mnemonic) or
                    isa.is_atomic(o.mnemonic) or key[0] in o.dest for o in between):
                continue
            inside = {o.pc for o in ops[i + 1:j + 1]}
            entering = sum(c for k, (o, c) in enumerate(zip(ops, counts, strict=True))
                           if o.target in inside and not i <= k < j)
            redundant = counts[j] - entering
            if redundant > 0:
                out.append(Reload(_text(key), ops[i].pc, ops[j].pc, counts[j], redundant))
                break
    return tuple(sorted(out, key=lambda r: (-r.redundant, r.again)))


def _straight(ops: list[Op]) -> bool:
    """Consecutive instructions, each falling through to the next."""
    return all(b.pc == a.pc + 4 and a.mnemonic != "b" and a.mnemonic not in isa.RETURNS
               and a.mnemonic not in isa.INDIRECT for a, b in zip(ops, ops[1:], strict=False))


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
               "loop-invariant fields loaded every iteration"),
        Metric("recurrences through memory", len(state.recurrences), "fields",
               "stored-back fields whose new value is computed from the loaded one"),
        Metric("byte stores per iteration",
               round(state.byte_store_runs / state.iterations, 2), "x",
               "executions of byte stores through other addresses / iterations"),
    ]


def checks(state: LoopState) -> list[str]:
    out = ["loads and stores of [base, #offset] fields whose base the loop does not change "
           "(or reloads from such a field), not stack slots",
           f"{state.per_iteration:g} field loads and stores per iteration "
           f"({state.fraction:.0%} of the loop's instructions); no call on most iterations"]
    if state.stored_back:
        out.append("fields loaded and stored back every iteration: "
                   + ", ".join(state.stored_back[:6]))
    if state.recurrences:
        out.append("stored value computed from the field's own load (a recurrence through "
                   "memory, store-to-load forwarding each iteration): "
                   + ", ".join(state.recurrences[:6]))
    if state.byte_stores:
        out.append(f"{state.byte_stores} byte store(s) through other addresses "
                   f"in the loop (a char store may alias any field, which forces the reloads)")
    for r in state.reloads[:3]:
        out.append(f"{RELOADED}{r.field} at {r.first:#x}, again at {r.again:#x} (at least "
                   f"{r.redundant:,} of {r.runs:,} runs)")
    return out
