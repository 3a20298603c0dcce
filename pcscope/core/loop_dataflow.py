"""What the registers of one loop body hold from one iteration to the next, read from its
instructions in row order (the hot path of a tight loop; a cold block placed in between
is read as if it ran, which only makes a value look less regular than it is):

- *steps*: registers that change by a constant every iteration (``add x14, x14, #4``, a
  writeback, or ``add w13, w3, #1`` then ``mov w3, w13``): the loop's induction variables;
- *strides*: by how many bytes each memory access's address moves per iteration (0 for a
  fixed address, None when it depends on loaded or otherwise irregular values), following
  add/sub, shifts, extends and multiplies by constants from the induction variables;
- *sources*: which loads each instruction's inputs come from, in this iteration (their
  positions) or an earlier one (``EARLIER``), the condition flags included, so a compare
  of a loaded value and the branch on it are linked.

The gather, relaxation and fixed-trip detectors read loops through these three facts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from pcscope.core import isa
from pcscope.core.shapes import FLAG_SETTERS, Op

EARLIER = -1  # a source position: a value loaded in an earlier iteration
FLAGS = "nzcv"  # the condition flags, as a register
PASSES = 4  # times the body is read to carry loaded values around the back edge
_IMM = re.compile(r"^#(-?(?:0x[0-9a-f]+|[0-9]+))$")
_SHIFT = re.compile(r"^(lsl|sxtw|uxtw|sxtx|uxtx) ?#?(\d*)$")
_ADDS = frozenset(("add", "adds"))
_SUBS = frozenset(("sub", "subs"))
_COPIES = frozenset(("mov", "sxtw", "uxtw"))
_CONSTANTS = frozenset(("movz", "movn", "adrp", "adr"))
_INSERTS = frozenset(("ubfiz", "sbfiz"))
_MULTIPLY_ADDS = frozenset(("madd", "umaddl", "smaddl"))


@dataclass(frozen=True)
class LoopValues:
    steps: dict[str, int]  # induction registers: their change per iteration
    written: frozenset[str]  # every register the body writes
    strides: tuple[int | None, ...]  # per op: its address's change per iteration (memory ops)
    sources: tuple[frozenset[int], ...]  # per op: the loads its inputs come from


def read(ops: list[Op]) -> LoopValues:
    """The loop facts of a body whose first op is the loop head."""
    steps = _steps(ops)
    written = frozenset(r for o in ops for r in writes(o))
    return LoopValues(steps, written, _strides(ops, steps, written), _sources(ops))


def immediate(token: str) -> int | None:
    """``#4`` -> 4, ``#-0x10`` -> -16; None for anything else."""
    m = _IMM.match(token.strip())
    return int(m.group(1), 0) if m else None


def memory_operand(o: Op) -> str | None:
    return next((x for x in o.operands if x.startswith("[")), None)


def writes(o: Op) -> tuple[str, ...]:
    return (*o.dest, FLAGS) if o.mnemonic in FLAG_SETTERS else o.dest


def reads(o: Op) -> tuple[str, ...]:
    conditional = o.mnemonic.startswith("b.") or o.mnemonic in _FLAG_READERS
    return (*o.src, FLAGS) if conditional else o.src


_FLAG_READERS = frozenset(("csel", "csinc", "csinv", "csneg", "cset", "csetm", "cinc", "cinv",
                           "cneg", "ccmp", "ccmn", "adc", "adcs", "sbc", "sbcs"))


def _step_of(o: Op) -> int | None:
    """The constant a writeback adds to its base register (``[x1], #4`` or ``[x1, #8]!``)."""
    mem = memory_operand(o) or ""
    if mem.endswith("!"):
        parts = [p.strip() for p in mem.strip("[]!").split(",")]
        return immediate(parts[1]) if len(parts) == 2 else None
    return immediate(o.operands[-1]) if o.operands and o.operands[-1] != mem else None


def _steps(ops: list[Op]) -> dict[str, int]:
    """Registers whose value at the end of the body is their value at the head plus a
    non-zero constant."""
    value: dict[str, tuple[str, int] | None] = {}

    def now(reg: str) -> tuple[str, int] | None:
        return value.get(reg, (reg, 0))

    for o in ops:
        new: dict[str, tuple[str, int] | None] = {r: None for r in o.dest}
        ops_ = o.operands
        if o.writeback and o.addr:
            base, step, held = o.addr[0], _step_of(o), now(o.addr[0])
            new[base] = (held[0], held[1] + step) if held and step is not None else None
        elif o.mnemonic in _ADDS | _SUBS and len(ops_) == 3 and o.dest and \
                (k := immediate(ops_[2])) is not None and \
                (held := now(isa.parse_register(ops_[1]) or "")) is not None:
            new[o.dest[0]] = (held[0], held[1] + (k if o.mnemonic in _ADDS else -k))
        elif o.mnemonic == "mov" and len(ops_) == 2 and o.dest and \
                (src := isa.parse_register(ops_[1])) is not None:
            new[o.dest[0]] = now(src)
        value.update(new)
    return {r: v[1] for r, v in value.items() if v is not None and v[0] == r and v[1]}


def _strides(ops: list[Op], steps: dict[str, int],
             written: frozenset[str]) -> tuple[int | None, ...]:
    stride: dict[str, int | None] = {}
    constant: dict[str, int] = {}

    def of(reg: str | None) -> int | None:
        if reg is None:
            return None
        if reg in stride:
            return stride[reg]
        return steps.get(reg) if reg in steps else (None if reg in written else 0)

    out: list[int | None] = []
    for o in ops:
        out.append(_address_stride(o, of) if o.addr else None)
        if o.writeback and o.addr:
            stride[o.addr[0]] = of(o.addr[0])  # still its step per iteration
        for reg in o.loaded:
            stride[reg] = None
        if not o.dest or o.load:
            continue
        reg, value = o.dest[0], _value_stride(o, of, constant)
        stride[reg] = value
        k = immediate(o.operands[1]) if o.mnemonic in ("mov", "movz") and \
            len(o.operands) == 2 else None
        if k is not None:
            constant[reg] = k
        else:
            constant.pop(reg, None)
    return tuple(out)


def _address_stride(o: Op, of) -> int | None:
    """The address's change per iteration: the base's plus the index's times its scale."""
    base = of(o.addr[0])
    if len(o.addr) == 1 or base is None:
        return base
    index = of(o.addr[1])
    mem = (memory_operand(o) or "").strip("[]!")
    shift = _shift_amount([p.strip() for p in mem.split(",")][2:])
    return None if index is None or shift is None else base + (index << shift)


def _shift_amount(rest: Sequence[str]) -> int | None:
    """``lsl #2`` -> 2, ``uxtw`` -> 0; None for a shift that does not scale (``lsr``)."""
    if not rest:
        return 0
    m = _SHIFT.match(rest[0].strip())
    if not m:
        return None
    return int(m.group(2)) if m.group(2) else 0


def _value_stride(o: Op, of, constant: dict[str, int]) -> int | None:
    """The change per iteration of the value ``o`` writes, from its inputs' changes."""
    m, ops = o.mnemonic, o.operands
    regs = [isa.parse_register(x) for x in ops]
    if m in _CONSTANTS or (m in ("mov", "movz") and immediate(ops[-1]) is not None):
        return 0
    if m in _ADDS | _SUBS and len(ops) >= 3:
        a = of(regs[1])
        shift = _shift_amount(ops[3:])
        b = 0 if immediate(ops[2]) is not None else of(regs[2])
        if a is None or b is None or shift is None:
            return None
        return a + (b << shift) if m in _ADDS else a - (b << shift)
    if m in _COPIES and len(ops) == 2:
        return of(regs[1])
    if m == "neg" and len(ops) == 2:
        a = of(regs[1])
        return None if a is None else -a
    if (m == "lsl" or m in _INSERTS) and len(ops) >= 3 and \
            (k := immediate(ops[2])) is not None:
        a = of(regs[1])
        return None if a is None else a << k
    if (m == "mul" or m in _MULTIPLY_ADDS) and len(ops) >= 3:
        acc = of(regs[3]) if len(ops) == 4 else 0
        # a register times a constant (either operand may hold the constant)
        for factor, by in ((regs[1], constant.get(regs[2] or "")),
                           (regs[2], constant.get(regs[1] or ""))):
            change = of(factor)
            if by is not None and change is not None and acc is not None:
                return change * by + acc
        return None if any(of(r) != 0 for r in o.src) else 0
    # anything else keeps a fixed value fixed
    return 0 if all(of(r) == 0 for r in o.src) else None


def _sources(ops: list[Op]) -> tuple[frozenset[int], ...]:
    """Per op, the loads its inputs come from: read until the values carried around the
    back edge stop changing."""
    carried: dict[str, frozenset[int]] = {}
    out: tuple[frozenset[int], ...] = ()
    for _ in range(PASSES):
        held = dict(carried)
        per_op = []
        for i, o in enumerate(ops):
            came = frozenset().union(*(held.get(r, frozenset()) for r in reads(o)))
            per_op.append(came)
            for reg in writes(o):
                held[reg] = came
            for reg in o.loaded:
                address = frozenset().union(*(held.get(r, frozenset()) for r in o.addr))
                held[reg] = address | {i}
        out = tuple(per_op)
        # what reaches the head came from loads of an earlier iteration
        ahead = {r: frozenset({EARLIER}) for r, v in held.items() if v}
        if ahead == carried:
            break
        carried = ahead
    return out
