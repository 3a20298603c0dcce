"""Code-shape checks: does a pattern's surrounding code really have the shape of the claim?

The pattern pass (pcscope.core.patterns) finds candidates with vectorised scans; these
checks confirm each one on a short sequence of instructions (a loop body, a stub, a helper)
before it becomes a hit, so a look-alike never reaches the analyst:

- a *loop-carried load* (pointer chase) feeds its own address in the next iteration through
  its loaded value, never only through a counter, a writeback or a GOT/stack base;
- a *poll* loop exits on a value loaded from an address the loop never changes;
- a *byte loop* steps a pointer or index by a constant and compares narrow loaded values;
- an *indirect branch* is classified by where its target comes from;
- an *outline-atomic helper* tests the LSE capability flag, then runs one atomic.

They read instruction text through pcscope.core.isa only, so the tests can write the
assembly by hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from functools import lru_cache

from pcscope.core import isa

NARROW_LOADS = frozenset(("ldrb", "ldrh", "ldrsb", "ldrsh", "ldurb", "ldurh", "ldursb",
                          "ldursh"))  # fmt: skip
FLAG_SETTERS = frozenset(("cmp", "cmn", "tst", "ccmp", "ccmn", "subs", "adds", "ands", "bics",
                          "negs", "sbcs", "adcs"))  # fmt: skip
_STEP = frozenset(("add", "sub"))
_FRAME = frozenset(("sp", "x29"))
_RE_IMM = re.compile(r"^#?-?(0x[0-9a-f]+|[0-9]+)$")
_LSL = re.compile(r"^lsl #(\d+)$")

# Indirect-branch classes (the pattern table's ``aux`` of an indirect-branch hit).
DISPATCH, SWITCH, CALL, TAIL, STUB, UNCLASSIFIED = 0, 1, 2, 3, 4, 5
INDIRECT_CLASSES = {DISPATCH: "interpreter dispatch", SWITCH: "switch table",
                    CALL: "function-pointer call", TAIL: "tail call / computed jump",
                    STUB: "PLT or veneer stub", UNCLASSIFIED: "indirect (cold: not classified)"}  # fmt: skip
DISPATCH_SITES = 4  # table-fed br sites in one function that make it threaded dispatch


@dataclass(frozen=True)
class Op:
    """One instruction as the shape checks read it (canonical register names)."""

    pc: int
    mnemonic: str
    operands: tuple[str, ...]
    dest: tuple[str, ...]  # every register written (writeback base included)
    loaded: tuple[str, ...]  # registers written with a value read from memory
    src: tuple[str, ...]  # every register read
    addr: tuple[str, ...]  # base and index of the memory operand
    writeback: bool
    target: int | None  # direct branch target

    @classmethod
    def of(cls, pc: int, asm: str) -> Op:
        return _op(pc, asm)

    @property
    def load(self) -> bool:
        return isa.is_load(self.mnemonic)

    def steps(self, reg: str) -> bool:
        """Adds or subtracts a constant to ``reg`` (``add x0, x0, #1``; a writeback)."""
        if self.writeback and self.addr[:1] == (reg,):
            return True
        ops = self.operands
        return (self.mnemonic in _STEP and len(ops) == 3 and self.dest == (reg,)
                and isa.parse_register(ops[1]) == reg and bool(_RE_IMM.match(ops[2])))


def _op(pc: int, asm: str) -> Op:  # once per row: patterns.Code keeps the ops it read
    m, ops, dest, loaded, src, addr, writeback, operand = _read(asm)
    return Op(pc, m, ops, dest, loaded, src, addr, writeback, isa.resolve_target(operand, pc))


@lru_cache(maxsize=65536)
def _read(asm: str) -> tuple:
    """The PC-independent reading of one instruction's text (texts repeat a lot)."""
    r = isa.read(asm)
    m, mem, dest = r.mnemonic, r.mem, r.dest
    writeback = bool(mem and mem.writeback)
    loaded = tuple(d for d in dest
                   if isa.is_load(m) and not (writeback and mem is not None and d == mem.base))
    addr = tuple(a for a in (mem.base, mem.index) if a) if mem else ()
    return m, tuple(r.operands), dest, loaded, r.src, addr, writeback, r.target


def ops_of(lines: list[tuple[int, str]]) -> list[Op]:
    return [Op.of(pc, asm) for pc, asm in lines]


def is_loop_body(body: list[Op]) -> bool:
    """Control can run from the first instruction to the last one's branch back: every
    instruction before the end that control does not fall through (isa.ends_flow) is a ``b``
    that stays inside (a return, register jump or trap there ends the body)."""
    first, last = body[0].pc, body[-1].pc
    return not any(isa.ends_flow(op.mnemonic) and not (
        op.mnemonic == "b" and op.target is not None and first <= op.target <= last)
        for op in body[:-1])


def _writer(body: list[Op], i: int, reg: str) -> int | None:
    """The instruction whose value of ``reg`` instruction ``i`` reads: the last writer before
    it in the body, else (loop-carried) the last writer in the body at or after it."""
    for j in range(i - 1, -1, -1):
        if reg in body[j].dest:
            return j
    for j in range(len(body) - 1, i - 1, -1):
        if reg in body[j].dest:
            return j
    return None


def _inputs(op: Op, reg: str) -> tuple[str, ...]:
    """What the value ``op`` wrote to ``reg`` depends on in registers: a loaded value on its
    address, a writeback base on itself, a call's results on nothing we can see, anything
    else on its sources."""
    if isa.is_call(op.mnemonic):
        return ()
    if reg in op.loaded:
        return op.addr
    if op.writeback and op.addr[:1] == (reg,):
        return (reg,)  # the base stepped by its writeback
    return op.src


def loop_carried_load(body: list[Op], k: int) -> bool:
    """Load ``k`` of a loop body is part of a chase: its address comes, through registers,
    from a loaded value that feeds its own next address (the previous iteration's load;
    ``k`` itself, or the chain it reads from, such as a node's key off the chased pointer).

    A counter (``add x1, x1, #1``), a writeback stream, a stack/frame base or an ``adrp``
    base never closes such a cycle, so GOT, canary, stack and streaming loads stay out."""
    load = body[k]
    if not load.load or not load.loaded or set(load.addr) & _FRAME or not is_loop_body(body):
        return False
    return any(_cycles(body, j) for j in _loads_feeding(body, k))


def _loads_feeding(body: list[Op], k: int) -> list[int]:
    """Load ``k`` and every load whose value reaches ``k``'s address through registers."""
    found = [k]
    for j, reg in _address_sources(body, k):
        if reg in body[j].loaded and j not in found:
            found.append(j)
    return found


def _cycles(body: list[Op], k: int) -> bool:
    """Load ``k``'s loaded value reaches its own address in the next iteration."""
    load = body[k]
    if not load.loaded or set(load.addr) & _FRAME:
        return False
    return any(j == k and reg in load.loaded for j, reg in _address_sources(body, k))


def _address_sources(body: list[Op], k: int) -> list[tuple[int, str]]:
    """Every (instruction, register) whose written value reaches load ``k``'s address
    through registers, in this iteration or (around the loop) the previous one; stack and
    frame registers are not followed."""
    stack = [(k, r) for r in body[k].addr if r not in _FRAME]
    seen: dict[tuple[int, str], None] = {}  # ordered set
    while stack:
        i, reg = stack.pop()
        j = _writer(body, i, reg)
        if j is None or (j, reg) in seen:
            continue
        seen[(j, reg)] = None
        stack += [(j, r) for r in _inputs(body[j], reg) if r not in _FRAME]
    return list(seen)


def exit_tests_load(body: list[Op]) -> bool:
    """The loop's decision (its last conditional branch: the register a ``cbz``/``tbz``
    tests, or the flags a ``b.cond`` reads) depends on a value loaded in this iteration."""
    tainted: set[str] = set()
    flags = False
    decision = False
    for op in body:
        if isa.is_conditional_branch(op.mnemonic):
            decision = flags if op.mnemonic not in isa.CONDITIONAL else \
                bool(set(op.src) & tainted)
            continue
        derived = bool(op.loaded) or bool(set(op.src) & tainted)
        if op.mnemonic in FLAG_SETTERS:
            flags = derived
        tainted = (tainted | set(op.dest)) if derived else (tainted - set(op.dest))
    return decision


def polls(body: list[Op]) -> bool:
    """A spin loop: no store, every load reads an address the loop never changes, no
    register steps (no scan, skip or decode), and the exit tests a loaded value."""
    if not is_loop_body(body) or any(isa.is_store(op.mnemonic) or isa.is_call(op.mnemonic)
                                     for op in body):
        return False
    loads = [op for op in body if op.load]
    if not loads:
        return False
    written = {r for op in body for r in op.dest}
    if any(op.writeback or not op.addr or set(op.addr) & written for op in loads):
        return False
    if any(op.steps(r) for op in body for r in op.dest):
        return False
    return exit_tests_load(body)


def byte_step(body: list[Op]) -> int | None:
    """A byte/halfword loop: the index of its narrow load whose base or index register
    steps by a constant each iteration and whose value a compare or branch tests; None when
    the body is no such loop (one compare, no step, or already vector code)."""
    if not is_loop_body(body) or any(isa.is_call(op.mnemonic) for op in body) or \
            any(op.dest and op.dest[0].startswith("v") and op.load for op in body):
        return None
    if not any(isa.is_conditional_branch(op.mnemonic) for op in body):
        return None
    for k, op in enumerate(body):
        if op.mnemonic not in NARROW_LOADS:
            continue
        if not any(other.steps(r) for r in op.addr for other in body):
            continue
        if _tested(body, k):
            return k
    return None


def _tested(body: list[Op], k: int) -> bool:
    """The value of load ``k`` decides whether the loop goes on: it reaches (through
    registers, in the same iteration) the test of the branch back or of a branch out."""
    first, last = body[0].pc, body[-1].pc
    tainted = set(body[k].loaded)
    flags = False
    for i, op in enumerate(body[k + 1:], start=k + 1):
        if isa.is_conditional_branch(op.mnemonic):
            tested = flags if op.mnemonic not in isa.CONDITIONAL else bool(set(op.src) & tainted)
            leaves = op.target is not None and not first <= op.target <= last
            if tested and (leaves or i == len(body) - 1):
                return True
            continue
        derived = bool(set(op.src) & tainted)
        if op.mnemonic in FLAG_SETTERS:
            flags = derived
        tainted = (tainted | set(op.dest)) if derived else (tainted - set(op.dest))
    return False


def indirect_class(call: bool, table_entry: bool, table_sites: int) -> int:
    """The class of an indirect branch from what it reads: a ``br`` whose target is a table
    entry (``is_table_jump`` of the instruction producing it) is a table jump (interpreter
    dispatch when the function has many such sites, else a switch); a call (``blr``) is a
    function-pointer or virtual call; any other ``br`` a tail call or computed jump."""
    if call:
        return CALL
    if table_entry:
        return DISPATCH if table_sites >= DISPATCH_SITES else SWITCH
    return TAIL


def is_table_jump(producer: Op | None) -> bool:
    return producer is not None and producer.load and len(producer.addr) == 2


def target_producer(ops: list[Op], k: int) -> Op | None:
    """The instruction that last wrote the target register of branch ``k``, looking back at
    most 16 instructions; an ``add``/``sxtw`` of a table entry is followed to the load."""
    regs = set(ops[k].src)
    for j in range(k - 1, max(-1, k - 17), -1):
        hit = regs & set(ops[j].dest)
        if not hit:
            continue
        if ops[j].load:
            return ops[j]
        regs = (regs - hit) | set(ops[j].src)
    return None


# AAPCS64: a call may change x0-x18 (arguments, results, temporaries, the veneers' x16/x17,
# the platform's x18); x19-x28 survive it
CALL_CLOBBERED = tuple(f"x{n}" for n in range(19))


def sets(o: Op) -> tuple[str, ...]:
    """The registers ``o`` may change: those it writes, and for a call also those the callee
    may (CALL_CLOBBERED)."""
    return (*o.dest, *CALL_CLOBBERED) if isa.is_call(o.mnemonic) else o.dest


def setter(op: Callable[[int], Op], rows: Iterable[int], reg: str, read: int,
           changes: Callable[[int], tuple[str, ...]]) -> int | None:
    """The row that last sets ``reg`` for a read at PC ``read`` (of a span of code: its last
    PC), looking back through ``rows`` (the rows before it, latest first; the caller bounds
    them) as far as control goes on from them to it (falls_through): the first that may
    change it (``changes``: per row, pcscope.core.call_effects, a call's callee included). A
    W write sets the X register (it clears the upper half; Op names both X). None when none
    of them does."""
    for r in falls_through(op, rows, read):
        if reg in changes(r):
            return r
    return None


def falls_through(op: Callable[[int], Op], rows: Iterable[int], read: int) -> Iterator[int]:
    """``rows`` (before the PC ``read``, latest first) up to one that does not go on towards
    it: a return, a register branch or a ``b`` elsewhere than forward to at most ``read`` (a
    jump into a loop's test still reaches the loop; what is before any other reaches the
    read only by another jump). A conditional branch falls through; a call returns."""
    for r in rows:
        o = op(r)
        m = o.mnemonic
        if isa.is_branch(m) and not isa.is_conditional_branch(m) and not isa.is_call(m) and \
                not (m == "b" and o.target is not None and o.pc < o.target <= read):
            return
        yield r


def constant(asm: str, signed: bool = False) -> int | None:
    """The value a move of an immediate writes to its register, as the register holds it
    (``signed``: read as a signed number of its width): ``movz`` shifted by its ``lsl``,
    ``movn`` inverted, the ``mov`` alias as written, ``orr`` of the zero register with an
    immediate; None for any other instruction (``movk`` keeps the other bits)."""
    raw = asm.split(None, 1)[0].lower() if asm.strip() else ""
    _, ops = isa.canonical(asm)
    if len(ops) > 1 and raw == "orr" and ops[1] in ("wzr", "xzr"):
        ops = [ops[0], *ops[2:]]
    elif raw not in ("mov", "movz", "movn"):
        return None
    shift = _LSL.match(ops[2]) if len(ops) == 3 else None
    if len(ops) not in (2, 3) or (len(ops) == 3 and shift is None) or \
            not _RE_IMM.match(ops[1]):
        return None
    value = int(ops[1].lstrip("#"), 0) << (int(shift.group(1)) if shift else 0)
    bits = 32 if ops[0].startswith("w") else 64
    value = (~value if raw == "movn" else value) & ((1 << bits) - 1)
    return value - (1 << bits) if signed and value >> (bits - 1) else value


LSE_FLAG = "x16"  # libgcc's helpers load __aarch64_have_lse_atomics into w16


def outline_atomic_helper(ops: list[Op]) -> bool:
    """libgcc's outline-atomic helper shape: a byte load of the LSE capability flag into
    w16 (``ldrb w16, [x16, #…]``), a ``cbz w16`` to the LL/SC path, an LSE atomic."""
    for i, op in enumerate(ops[:-2]):
        if op.mnemonic == "ldrb" and op.loaded == (LSE_FLAG,) and op.addr[:1] == (LSE_FLAG,):
            rest = ops[i + 1:i + 4]
            if rest and rest[0].mnemonic in ("cbz", "cbnz") and rest[0].src == (LSE_FLAG,):
                return any(isa.is_lse(o.mnemonic) for o in rest[1:]) or \
                    any(isa.is_exclusive(o.mnemonic) for o in ops)
    return False
