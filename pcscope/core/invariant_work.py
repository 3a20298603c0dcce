"""Work a loop redoes on most iterations although its inputs change on few of them: a value
(a price, an address, a table entry) rebuilt every time from registers that hold the same
values until some rarer event (an outer index advancing) changes them.

Read from exact counts on the loop's control-flow graph. The value an instruction writes
changes at most as often as the instruction runs, and at most as often as its inputs change:
an input's changes are the changes of the instructions that write it and reach the read
(the loop's entries count once, for values from before the loop). A load's value changes
with its address; a store the loop makes to the same ``[base, #offset]`` changes it too.
Other stores the loop makes might write the loaded memory as far as the compiler knows (the
same struct, a ``char`` store): they are what keeps it from hoisting the loads itself.

An instruction is *recomputed* when its inputs change on at most RARE of the loop's
iterations while it runs at least SAVES times as often as they change: moving it to where
they change (or caching its result until they do) deletes most of its runs.

An input that changes on every iteration may reach work only through a *clamp* against a
constant (``cmp w3, #5`` + ``csel w0, w3, w0, ls`` with ``w0 = 5``: min(w3, 5); or
``umin``/``smax`` with an immediate): once the clamp saturates its value is that constant,
and the work reading only it and rarely changing inputs is the same on every iteration
too. Counts cannot say how often a ``csel`` picks the constant (it runs the same either
way), so that work is named as invariant *while the clamp saturates*, with its size, not
as work that would surely go. Its changes are counted by the values it follows (its roots),
each once: a price looked up from a match's distance along two paths changes with the
distance, not twice as often.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pcscope.core import isa, natural_loops, shapes
from pcscope.core.call_effects import CallEffects
from pcscope.core.loop_dataflow import FLAGS, immediate, reads, writes
from pcscope.core.mechanisms import Mechanism, Metric
from pcscope.core.profile import Profile
from pcscope.core.recomputed_values import ClampValues, RecomputedValues
from pcscope.core.shapes import Op

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

RARE = 1 / 3  # inputs changing on at most this share of the iterations are "fixed"
SAVES = 2.0  # runs per change of its inputs that make moving an instruction worth it
MIN_SHARE = 0.005  # a mechanism's own share worth reading its loop for
ENTRY = -1  # a reaching definition: the value the register held when the loop was entered
_STACK = frozenset(("sp", "x29"))


@dataclass(frozen=True)
class Recomputed:
    """The instructions of one loop that recompute values from rarely changing inputs."""

    rows: tuple[int, ...]  # address order
    per_iteration: float  # their executions / the loop's iterations
    loop_per_iteration: float  # the loop's own instructions' executions / its iterations
    loop_executions: int  # the loop's own instructions' executions
    executions: int  # their executions
    changes: int  # the most changes of any of their inputs over the run
    iterations: int
    loads: tuple[int, ...]  # the loads among them, hottest first
    blockers: tuple[int, ...]  # the loop's other stores, hottest first (may alias the loads)
    changers: tuple[int, ...]  # the loop's rows writing their inputs, hottest first
    changer_runs: tuple[int, ...]  # the executions of each of ``changers``
    entries: int  # how often the loop is entered (its inputs may change there too)
    counted: Counted  # the rows ``loop_per_iteration`` counts
    saturated: Saturated | None = None  # more work invariant once a clamp saturates


@dataclass(frozen=True)
class Counted:
    """The rows a loop's instructions per iteration count (its own: every path of it, the
    rarer ones included) and what they leave out: the inner cycles' rows (by the first row of
    each run of them), and the callees of the calls among them."""

    rows: int
    first: int  # the lowest and highest of them
    last: int
    cycles: tuple[int, ...]  # the first row of each contiguous run of inner-cycle rows
    cycles_per_iteration: float
    calls: int  # the executed calls among them


@dataclass(frozen=True)
class Clamp:
    """``row`` clamps ``register`` to ``constant``: for every value of it at or beyond the
    constant (``above``: min, else max) the result is the constant."""

    row: int
    compare: int | None  # the ``cmp register, #imm`` the ``csel`` reads (None: umin/smax)
    register: str  # as the code writes it (``w3``)
    constant: int
    above: bool


@dataclass(frozen=True)
class Saturated:
    """The work of one loop that is the same on every iteration once its clamps saturate
    (beyond ``Recomputed.rows``), and what still changes per iteration then."""

    clamps: tuple[Clamp, ...]
    rows: tuple[int, ...]  # address order
    per_iteration: float  # their executions / the loop's iterations
    executions: int
    varying: tuple[int, ...]  # the loop's own loads still changing on most iterations, in
    # address order


@dataclass(frozen=True)
class _Tables:
    """What every question about one loop reads, built once per loop from its reaching
    definitions (``reach``: per row, per register, the rows whose write of it may reach
    the row, ENTRY for a value from before the loop)."""

    reach: dict[int, dict[str, frozenset[int]]]
    writers: dict[int, frozenset[int]]  # per row: the rows writing what it reads
    inputs: dict[int, frozenset[int]]  # ... what its value depends on (a load: its address)
    slots: dict[int, tuple[str, ...]]  # per row: its memory operand as written (_slot)
    stores: dict[tuple[str, ...], tuple[int, ...]]  # per stored slot: the stores to it

    @classmethod
    def of(cls, rows: Sequence[int], op: Callable[[int], Op],
           reach: dict[int, dict[str, frozenset[int]]]) -> _Tables:
        def writing(r: int, regs: Iterable[str]) -> frozenset[int]:
            return frozenset(w for reg in regs for w in reach[r].get(reg, ()))
        slots = {r: _slot(op(r)) for r in rows}
        stores: dict[tuple[str, ...], list[int]] = {}
        for r in rows:
            if isa.is_store(op(r).mnemonic):
                stores.setdefault(slots[r], []).append(r)
        return cls(reach, {r: writing(r, reads(op(r))) for r in rows},
                   {r: writing(r, op(r).addr if op(r).load else reads(op(r))) for r in rows},
                   slots, {slot: tuple(at) for slot, at in stores.items()})


def read(profile: Profile, op: Callable[[int], Op], head: int, rows: Sequence[int],
         inner: Sequence[int] = (), entered_at: frozenset[int] = frozenset()) -> Recomputed | None:
    """The recomputed work of the loop made of ``rows`` (address order) whose iterations
    pass ``head`` (``inner``: the rows of loops nested in it, whose writes count but which
    are not its work; ``entered_at``: the pcs control enters its rows at,
    natural_loops.entries), or None when there is none."""
    def count(r: int) -> int:
        return int(profile.samples[r]) if r < len(profile) else 0

    row_of = profile.row_of
    # the cycles inside it that avoid its head and entries: loops nested in it that
    # natural_loops keeps as its own rows (their head runs less often than NESTED times the
    # loop's)
    cycle, _ = natural_loops.inner_cycles([op(r) for r in rows], entered_at | {op(head).pc})
    cycles = {r for r, c in zip(rows, cycle, strict=True) if c >= 0}
    own = [r for r in rows if r not in cycles]
    inner_rows = {*inner, *cycles}
    rows = sorted({*rows, *inner})
    body = set(rows)
    iterations = count(head)
    if not iterations:
        return None
    preds = _predecessors(rows, op, row_of, body)
    # where values from before the loop come in: its head, and the rows entered from outside
    starts = {head} | {r for r in own if op(r).pc in entered_at}
    t = _Tables.of(rows, op, _reaching(rows, op, preds, starts, CallEffects(profile, op).changes))
    entries = natural_loops.entry_runs(profile, op, body)
    if entries is None:  # an edge's runs unknown: each start's count less what the loop
        # sends it (a conditional branch's fall-through taken as all of the next row's runs)
        entries = sum(max(0, count(s) - sum(_goes(p, s, op, count) for p in preds[s]))
                      for s in sorted(starts))
    # a value an inner loop computes changes with that loop's trips and exits, which the
    # changes of its writers do not bound: it may change on every run of its readers
    moving = inner_rows | _fed_by(own, t, inner_rows)
    change = {r: n + entries for r, n in _changes(rows, op, count, t, moving).items()}
    limit = RARE * iterations
    chain = _chain(own, op, count, t, change, limit)
    saturated = _saturated(profile, own, op, count, t, rows, moving, entries, limit,
                           chain, iterations)
    if not any(op(r).load for r in chain):  # only constants or addresses rebuilt
        if saturated is None:
            return None
        chain = set()
    ordered = tuple(sorted(chain))
    changers = tuple(sorted({w for r in chain for w in t.writers[r]
                             if w != ENTRY and w not in chain},
                            key=lambda r: (-count(r), r)))
    loads = tuple(sorted((r for r in chain if op(r).load), key=lambda r: (-count(r), r)))
    read_slots = {t.slots[q] for q in loads}
    blockers = tuple(sorted((r for r in rows if _writes_memory(op(r)) and count(r)
                             and t.slots[r] not in read_slots
                             and not set(op(r).addr) & _STACK), key=lambda r: (-count(r), r)))
    executions = sum(count(r) for r in chain)
    loop_executions = sum(count(r) for r in own)
    counted = Counted(len(own), min(own), max(own),
                      tuple(r for r in sorted(cycles) if r - 1 not in cycles),
                      round(sum(count(r) for r in cycles) / iterations, 2),
                      sum(1 for r in own if count(r) and isa.is_call(op(r).mnemonic)))
    return Recomputed(ordered, round(executions / iterations, 2),
                      round(loop_executions / iterations, 2), loop_executions, executions,
                      max((change[r] for r in chain), default=0), iterations, loads,
                      blockers if loads else (), changers,
                      tuple(count(r) for r in changers), entries, counted, saturated)


def _chain(own: Sequence[int], op: Callable[[int], Op], count: Callable[[int], int],
           t: _Tables, change: dict[int, int], limit: float) -> set[int]:
    """The rows of ``own`` whose inputs change on at most ``limit`` runs and at most 1 /
    SAVES of theirs, with the constants they read."""
    chain = {r for r in own if count(r) and change[r] <= limit and
             count(r) >= SAVES * change[r] and _movable(op(r)) and _reads_any(op(r))}
    # the constants such work reads move with it (the compiler rebuilds them in the loop)
    return chain | {w for r in chain for w in t.writers[r]
                    if w != ENTRY and not _reads_any(op(w)) and _movable(op(w))}


def _saturated(profile: Profile, own: Sequence[int], op: Callable[[int], Op],
               count: Callable[[int], int], t: _Tables,
               rows: Sequence[int], moving: set[int], entries: int, limit: float,
               chain: set[int], iterations: int) -> Saturated | None:
    """The work beyond ``chain`` that no longer changes once the loop's clamps saturate:
    the same reading of the counts with each clamp's result fixed at its constant."""
    clamps = tuple(c for r in own if (c := _clamp(profile, r, op, t.reach)) is not None)
    if not clamps:
        return None
    fixed = {c.row for c in clamps}
    # a value computed from several inputs that all follow one rarely changing value (a
    # price from a match's distance by two table lookups) changes with that one value:
    # summing its inputs' changes, as _changes does, counts that value once per input
    free = _root_changes(rows, op, count, t, moving, frozenset(), entries)
    change = _root_changes(rows, op, count, t, moving, fixed, entries)
    rest = [r for r in own if r not in fixed]  # the clamp's own constant stays with it
    more = _chain(rest, op, count, t, change, limit) - \
        _chain(rest, op, count, t, free, limit) - chain
    if not any(op(r).load for r in more):
        return None
    executions = sum(count(r) for r in more)
    used = tuple(c for c in clamps if any(c.row in w for r in more
                                           for w in t.reach[r].values()))
    # what runs beside that work and still changes: the part that stays in the loop
    least = min(count(c.row) for c in used or clamps)
    varying = tuple(sorted(r for r in own if op(r).load and count(r) >= least
                           and r not in more and r not in chain and change[r] > limit))
    return Saturated(used or clamps, tuple(sorted(more)), round(executions / iterations, 2),
                     executions, varying)


def _root_changes(rows: Sequence[int], op: Callable[[int], Op], count: Callable[[int], int],
                  t: _Tables, moving: set[int], fixed: frozenset[int] | set[int],
                  entries: int) -> dict[int, int]:
    """Per row: at most how often its value changes (its entries included), bounded by the
    changes of the rows its value is a function of (its *roots*), each counted once: an
    induction variable (or a value an inner loop moves, or a call's result) is its own root,
    and so is a row reading one that runs less often than it, or one on a cycle of copies.
    Like _changes, a value picked by the path taken is bounded by the values the paths bring
    (the branches choosing the path are not read)."""
    writers = t.inputs
    varies = {r for r in rows if r in writers[r] or r in moving or isa.is_call(op(r).mnemonic)}
    roots: dict[int, frozenset[int]] = {}

    def root(r: int) -> frozenset[int]:
        if r not in roots:
            roots[r] = frozenset((r,))  # while it is being read: a cycle ends at it
            if r in fixed:
                roots[r] = frozenset()
            elif r not in varies:
                found = frozenset().union(*(root(w) for w in writers[r] if w != ENTRY),
                                          t.stores.get(t.slots[r], ()) if op(r).load else ())
                # reading a value that changes on each of its own runs: the rarer of the two
                if not writers[r] & varies or sum(count(w) for w in found) < count(r):
                    roots[r] = found
        return roots[r]
    return {r: min(count(r), sum(count(w) for w in root(r))) + entries for r in rows}


_ORDERED = {"hi": (True, True), "gt": (True, True), "hs": (True, False), "cs": (True, False),
            "ge": (True, False), "lo": (False, True), "cc": (False, True), "lt": (False, True),
            "ls": (False, False), "le": (False, False)}  # condition: (above, strict)
_INVERSE = {"hi": "ls", "ls": "hi", "gt": "le", "le": "gt", "hs": "lo", "lo": "hs", "cs": "cc",
            "cc": "cs", "ge": "lt", "lt": "ge"}
_SIGNED = frozenset(("gt", "ge", "lt", "le"))  # conditions comparing signed numbers
_MIN_MAX = {"umin": True, "smin": True, "umax": False, "smax": False}  # True: clamps above


def _clamp(profile: Profile, r: int, op: Callable[[int], Op],
           reach: dict[int, dict[str, frozenset[int]]]) -> Clamp | None:
    """The clamp ``r`` makes, if it is one: ``umin``/``smax``… with an immediate, or a
    ``csel`` between a register and a constant whose flags come from comparing that
    register with an immediate, the constant being taken on the far side of it."""
    o = op(r)
    if o.mnemonic in _MIN_MAX and len(o.operands) == 3 and len(o.src) == 1:
        k = immediate(o.operands[2])
        return None if k is None else Clamp(r, None, o.operands[1], k, _MIN_MAX[o.mnemonic])
    if o.mnemonic != "csel" or len(o.operands) != 4 or len(o.src) != 2:
        return None
    flags = reach[r].get(FLAGS, frozenset())
    if len(flags) != 1 or ENTRY in flags:
        return None
    (cmp,) = flags
    c = op(cmp)
    k = immediate(c.operands[1]) if c.mnemonic == "cmp" and len(c.operands) == 2 else None
    cond = o.operands[3]
    if k is None or cond not in _ORDERED or len(c.src) != 1:
        return None
    (x,) = c.src
    first, second = (isa.parse_register(t) for t in o.operands[1:3])
    if reach[r].get(x) != reach[cmp].get(x):  # the compared value is the one selected
        return None
    for var, const, const_when in ((first, second, _INVERSE[cond]), (second, first, cond)):
        value = _constant(profile, reach[r].get(const or "", frozenset()), cond in _SIGNED)
        if var != x or value is None:
            continue
        above, strict = _ORDERED[const_when]
        # the constant is the limit itself (or the next value past a strict compare)
        edge = value in ((k, k + 1) if above else (k, k - 1)) if strict else value == k
        if edge:
            return Clamp(r, cmp, c.operands[0], value, above)
    return None


def _constant(profile: Profile, writers: frozenset[int], signed: bool) -> int | None:
    """The value a single move of an immediate reaching a read wrote (shapes.constant;
    ``signed``: read as a signed number, for a signed compare), None otherwise."""
    if len(writers) != 1 or ENTRY in writers:
        return None
    (w,) = writers
    return shapes.constant(profile.asm(w), signed) if w < len(profile) else None


def _fed_by(rows: Sequence[int], t: _Tables, sources: set[int]) -> set[int]:
    """The rows of ``rows`` reading a value one of ``sources`` writes."""
    return {r for r in rows if t.writers[r] & sources}


def _movable(o: Op) -> bool:
    """Work that can move: not a store, a call or an instruction control does not fall
    through (a jump, a return, a trap), and not a reload from the stack (a spill: moving it
    needs a free register, not a new place)."""
    m = o.mnemonic
    return not (isa.is_store(m) or isa.is_call(m) or isa.ends_flow(m)
                or m.startswith("prfm") or (o.load and set(o.addr) & _STACK))


def _writes_memory(o: Op) -> bool:
    return isa.is_store(o.mnemonic) or isa.is_call(o.mnemonic)


def _reads_any(o: Op) -> bool:
    return any(r != "xzr" for r in reads(o))


def _slot(o: Op) -> tuple[str, ...]:
    """A memory operand as written (``[x0, #0xedc]``): equal slots are one location."""
    return tuple(o.addr) + tuple(x for x in o.operands if x.startswith("["))


def _predecessors(rows: Sequence[int], op: Callable[[int], Op],
                  row_of: Callable[[int], int | None], body: set[int]) -> dict[int, list[int]]:
    preds: dict[int, list[int]] = {r: [] for r in rows}
    for r in rows:
        o = op(r)
        m = o.mnemonic
        to = row_of(o.target) if o.target is not None and not isa.is_call(m) else None
        if to in body:
            preds[to].append(r)
        if not isa.ends_flow(m) and r + 1 in body and op(r + 1).pc == o.pc + 4:
            preds[r + 1].append(r)
    return preds


def _reaching(rows: Sequence[int], op: Callable[[int], Op], preds: dict[int, list[int]],
              starts: set[int], changes: Callable[[int], tuple[str, ...]]
              ) -> dict[int, dict[str, frozenset[int]]]:
    """Per row, per register: the rows whose write of it may reach the row (ENTRY: from
    before the loop, at the ``starts``), over the loop's graph: a row is read again only
    when what one of its predecessors passes on has changed, until none has. A row writes
    the registers it may change (``changes``, a call's callee included: a value read after a
    call from a register the callee may change is what the call left there, which may
    differ on every call) and the flags it sets."""
    read_any = {x for q in rows for x in reads(op(q))}
    succ: dict[int, list[int]] = {r: [] for r in rows}
    for r in rows:
        for p in preds[r]:
            succ[p].append(r)
    out: dict[int, dict[str, frozenset[int]]] = {r: {} for r in rows}
    after: dict[int, dict[str, frozenset[int]]] = {r: {} for r in rows}
    work = deque(rows)  # every row once, then the rows whose input changed
    waiting = set(rows)
    while work:
        r = work.popleft()
        waiting.discard(r)
        held: dict[str, set[int]] = {}
        for p in preds[r]:
            for reg, ws in after[p].items():
                held.setdefault(reg, set()).update(ws)
        into = {reg: frozenset(ws) for reg, ws in held.items()}
        if r in starts:  # values from before the loop, for every register read
            into = {reg: into.get(reg, frozenset()) | {ENTRY} for reg in {*into, *read_any}}
        out[r] = into
        new = dict(into)
        for reg in (*writes(op(r)), *changes(r)):
            new[reg] = frozenset((r,))
        if new != after[r]:
            after[r] = new
            for s in succ[r]:
                if s not in waiting:
                    waiting.add(s)
                    work.append(s)
    return out


def _changes(rows: Sequence[int], op: Callable[[int], Op], count: Callable[[int], int],
             t: _Tables, moving: set[int]) -> dict[int, int]:
    """Per row: at most how often the value it computes changes inside the loop, its
    entries aside (from the top: every row first changes on each run, then its inputs bound
    it until that settles; the ``moving`` rows change on each run)."""
    change = {r: count(r) for r in rows}
    same = {slot: sum(count(q) for q in at) for slot, at in t.stores.items()}  # stores' runs
    for _ in range(len(rows)):
        moved = False
        for r in rows:
            o = op(r)
            writers = t.inputs[r]
            if r in writers or r in moving:  # an induction variable: it changes on every run
                continue
            bound = sum(change[w] for w in writers if w != ENTRY)
            if o.load:
                bound += same.get(t.slots[r], 0)
            if isa.is_call(o.mnemonic):
                bound = count(r)
            new = min(count(r), bound)
            if new < change[r]:
                change[r], moved = new, True
        if not moved:
            break
    return change


def _goes(r: int, to: int, op: Callable[[int], Op], count: Callable[[int], int]) -> int:
    """How often the row ``r`` goes on to the row ``to`` (the fall-through row of a
    conditional branch reached only that way): a conditional branch's jump on its runs less
    those of the instruction after it, its fall-through on that instruction's runs, anything
    else on all its runs."""
    o = op(r)
    if not isa.is_conditional_branch(o.mnemonic) or not count(r + 1) or op(r + 1).pc != o.pc + 4:
        return count(r)
    return count(r + 1) if to == r + 1 else max(0, count(r) - count(r + 1))


CHECK = "recomputed on each run from inputs that change on few of its runs: "  # advice reads
CLAMPED = "a clamp makes more work invariant once it saturates: "
CLAMPED_WORK = "the work reading only the clamped value and inputs that change on few runs: "
STAYS = "what still changes on every iteration once it saturates: "
NOT_COUNTED = "how often the clamp saturates is not known from the counts: "
TOGETHER = "the recomputed and the clamp's work share no instruction, so together they are: "
CHANGED = "the recomputed work's inputs change at: "
COUNTED = "the loop's instructions per iteration count its rows at: "
BLOCKED = "stores in the loop the compiler cannot tell apart from that memory: "
PER_ITERATION = "recomputed per iteration"  # metric names the advice reads
INPUT_CHANGES = "recomputed inputs change"
LOOP_PER_ITERATION = "loop instructions per iteration"
SHARE = "recomputed share"
CLAMPED_PER_ITERATION = "invariant once clamped per iteration"
CLAMPED_SHARE = "invariant once clamped share"
HOISTED_PER_ITERATION = "recomputed or invariant once clamped per iteration"
HOISTED_LOOP_SHARE = "recomputed or invariant once clamped loop share"
HOISTED_SHARE = "recomputed or invariant once clamped share"
# Loops whose own advice already is "keep it in registers" or that are not one loop's work.
NOT_LOOPS = frozenset(("memory-state", "spin-wait", "per-operation", "return-zeroing", "plt",
                       "libc-routine", "jit", "indirect-call", "dispatch", "outline-atomic",
                       "libc-lock", "llsc", "spill-block"))


def annotate(finder: _Finder, found: list[Mechanism]) -> list[Mechanism]:
    """``found`` with each loop mechanism of at least MIN_SHARE whose heaviest site's loop
    recomputes work from rarely changing inputs carrying that work's checks and metrics."""
    p = finder.p
    loops = finder.function_loops
    at = natural_loops.loop_at(loops)
    out = []
    for m in found:
        key = p.row_of(m.sites[0].pc) if m.sites else None
        if m.kind in NOT_LOOPS or m.share < MIN_SHARE or key not in at:
            out.append(m)
            continue
        loop = loops[at[key]]
        inner = [r for nested in natural_loops.nested_in(loops, loop) for r in nested.rows]
        found_work = read(p, finder.op, loop.head, loop.rows, inner, finder.loop_entries(at[key]))
        out.append(m if found_work is None else replace(
            m, metrics=(*m.metrics, *metrics(found_work, p.total)),
            checks=(*m.checks, *checks(found_work, p.asm, lambda r: int(p.pc[r]), p.total)),
            values=(*m.values, values(found_work, p.asm, lambda r: int(p.pc[r])))))
    return out


def metrics(work: Recomputed, total: float) -> list[Metric]:
    out = [Metric(PER_ITERATION, work.per_iteration, "instructions",
                  "executions of the recomputing instructions / the loop head's count"),
           Metric(LOOP_PER_ITERATION, work.loop_per_iteration, "instructions",
                  "executions of the loop's own instructions / the loop head's count"),
           Metric(SHARE, round(100.0 * work.executions / total, 3) if total else 0.0, "%",
                  "executions of the recomputing instructions / the total"),
           Metric(INPUT_CHANGES, round(100.0 * work.changes / work.iterations, 1), "%",
                  "the most executions of the instructions writing their inputs (the "
                  "loop's entries included) / the loop head's count")]
    sat = work.saturated
    if sat is None:
        return out
    out += [Metric(CLAMPED_PER_ITERATION, sat.per_iteration, "instructions",
                   "executions of the instructions invariant once the clamp saturates "
                   "/ the loop head's count (an upper bound: all iterations saturated)"),
            Metric(CLAMPED_SHARE, round(100.0 * sat.executions / total, 3) if total else 0.0,
                   "%", "executions of those instructions / the total")]
    together = _together(work, total)
    if together is None:
        return out
    per, loop, share = together
    return [*out,
            Metric(HOISTED_PER_ITERATION, per, "instructions",
                   "executions of the recomputing instructions and of those invariant once "
                   "the clamp saturates (no instruction is both) / the loop head's count (an "
                   "upper bound)"),
            Metric(HOISTED_LOOP_SHARE, loop, "%",
                   "those executions / the executions of the loop's own instructions"),
            Metric(HOISTED_SHARE, share, "%", "those executions / the total")]


def _together(work: Recomputed, total: float) -> tuple[float, float, float] | None:
    """The recomputed work and the clamp's at once, when there are both: per iteration, % of
    the loop's own executions, % of the total. _saturated takes the clamp's work from what
    the recomputed work leaves, so no instruction is in both and their executions add."""
    sat = work.saturated
    if sat is None or not work.rows:
        return None
    both = work.executions + sat.executions
    return (round(both / work.iterations, 2), round(100.0 * both / work.loop_executions, 1),
            round(100.0 * both / total, 3) if total else 0.0)


def values(work: Recomputed, asm: Callable[[int], str],
           pc: Callable[[int], int]) -> RecomputedValues:
    """The work as the advice names it (pcscope.core.recomputed_values)."""
    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    sat = work.saturated
    clamp = None if sat is None else ClampValues(
        at(sat.clamps[0].row), _saturates(sat.clamps[0]), tuple(at(r) for r in sat.rows),
        tuple(at(r) for r in sat.varying), _picks(sat), _how(sat, at))
    return RecomputedValues(tuple(at(r) for r in work.rows), _span(work.counted, pc), clamp,
                            _changed(work, at), _blocked(work, at))


def _changed(work: Recomputed, at: Callable[[int], str]) -> str:
    """Where the recomputed work's inputs change, as CHANGED says it ("": nowhere named)."""
    where = [f"{at(r)} ({runs:,} times)"
             for r, runs in zip(work.changers[:2], work.changer_runs, strict=False)]
    if work.entries:
        where.append(f"the loop's {work.entries:,} entries")
    return ", ".join(where)


def _blocked(work: Recomputed, at: Callable[[int], str]) -> str:
    """The loop's stores that may write what the work loads, as BLOCKED says them."""
    return ", ".join(at(r) for r in work.blockers[:2])


def checks(work: Recomputed, asm: Callable[[int], str], pc: Callable[[int], int],
           total: float) -> list[str]:
    def at(row: int) -> str:
        return f"`{asm(row)}` at {pc(row):#x}"
    # every instruction, in address order: the checks are the whole record (advice names a few)
    out = [] if not work.rows else [CHECK + ", ".join(at(r) for r in work.rows)]
    if changed := _changed(work, at):
        out.append(CHANGED + changed)
    out.append(COUNTED + _counted(work.counted, pc))
    if blocked := _blocked(work, at):
        out.append(BLOCKED + blocked)
    if work.saturated is not None:
        out += _clamp_checks(work.saturated, asm, at)
    together = _together(work, total)
    if together is not None:
        per, loop, share = together
        out.append(f"{TOGETHER}{per:g} of the {work.loop_per_iteration:g} instructions per "
                   f"iteration ({loop:g}% of the loop's, {share:g}% of the total) at most")
    return out


def _counted(c: Counted, pc: Callable[[int], int]) -> str:
    """Which rows the loop's instructions per iteration are: "0x1000–0x1068 (27 rows, the
    rarer paths included; not the inner cycle at 0x1100 (0.4 per iteration))", the span
    first (advice names it alone)."""
    left = ([f"the inner cycle{'s' if len(c.cycles) > 1 else ''} at "
             f"{', '.join(f'{pc(r):#x}' for r in c.cycles)} ({c.cycles_per_iteration:g} per "
             f"iteration)"] if c.cycles else []) + \
        ([f"the callees of its {c.calls} call{'s' if c.calls > 1 else ''}"] if c.calls else [])
    return (f"{_span(c, pc)} ({c.rows} rows, the rarer paths included"
            + (f"; not {' nor '.join(left)}" if left else "") + ")")


def _span(c: Counted, pc: Callable[[int], int]) -> str:
    return f"{pc(c.first):#x}–{pc(c.last):#x}"


def _saturates(c: Clamp) -> str:
    """The value a clamp fixes and when: ``5 for w1 ≥ 5``."""
    return f"{c.constant} for {c.register} {'≥' if c.above else '≤'} {c.constant}"


def _picks(sat: Saturated) -> str:
    """Why the counts cannot tell how often the clamps saturate."""
    return "a `csel` runs the same either way" \
        if any(c.compare is not None for c in sat.clamps) else \
        "a minimum or maximum runs the same either way"


def _how(sat: Saturated, at: Callable[[int], str]) -> tuple[str, ...]:
    """What to count instead, one per clamp."""
    return tuple(f"count how often {at(c.compare) if c.compare is not None else at(c.row)} "
                 f"finds {c.register} {'≥' if c.above else '≤'} {c.constant}"
                 for c in sat.clamps)


def _clamp_checks(sat: Saturated, asm: Callable[[int], str],
                  at: Callable[[int], str]) -> list[str]:
    def said(c: Clamp) -> str:
        return (f"{at(c.row)} is {_saturates(c)}"
                + (f" (`{asm(c.compare)}`)" if c.compare is not None else ""))
    out = [CLAMPED + "; ".join(said(c) for c in sat.clamps),
           CLAMPED_WORK + ", ".join(at(r) for r in sat.rows)]
    if sat.varying:
        out.append(STAYS + ", ".join(at(r) for r in sat.varying))
    return [*out, f"{NOT_COUNTED}{_picks(sat)}; {'; '.join(_how(sat, at))}"]
