"""AArch64 assembly text helpers: one reading of objdump, capstone and llvm spellings.

Everything here works on one instruction's text (``"LDR X4, [X0, #8]!"``). Mnemonics are
normalised to one canonical lower-case spelling (``b.cs`` -> ``b.hs``, ``movz`` -> ``mov``,
``hint #34`` -> ``bti``, an undecoded LSE atomic ``.inst 0x88e07c41`` -> ``casa``); registers
to one name per architectural register (``w5`` and ``x5`` are both ``x5``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

# Condition spellings that name the same flags test (objdump prints cs/cc, llvm hs/lo;
# SVE has its own aliases). Canonical form on the right.
COND_ALIASES = {
    "cs": "hs", "cc": "lo",
    "none": "eq", "any": "ne", "nlast": "hs", "last": "lo", "first": "mi", "nfrst": "pl",
    "pmore": "hi", "plast": "ls", "tcont": "ge", "tstop": "lt",
}  # fmt: skip
CONDITIONS = frozenset(
    ("eq", "ne", "hs", "lo", "mi", "pl", "vs", "vc", "hi", "ls", "ge", "lt", "gt", "le", "al", "nv")
) | frozenset(COND_ALIASES)

# objdump prints the preferred alias `mov` where capstone keeps `movz`/`movn`.
MNEMONIC_ALIASES = {"movz": "mov", "movn": "mov"}

# `hint #N` as capstone 4 prints it, and the name the architecture gives it.
HINTS = {
    0: "nop", 1: "yield", 2: "wfe", 3: "wfi", 4: "sev", 5: "sevl", 6: "dgh", 7: "xpaclri",
    8: "pacia1716", 10: "pacib1716", 12: "autia1716", 14: "autib1716", 16: "esb", 17: "psb",
    18: "tsb", 20: "csdb", 22: "clrbhb", 24: "paciaz", 25: "paciasp", 26: "pacibz",
    27: "pacibsp", 28: "autiaz", 29: "autiasp", 30: "autibz", 31: "autibsp",
    32: "bti", 34: "bti", 36: "bti", 38: "bti",
}  # fmt: skip

UNDECODED = frozenset((".byte", ".inst", ".word", ".long"))

CALLS = frozenset(("bl", "blr", "blraa", "blrab", "blraaz", "blrabz"))
RETURNS = frozenset(("ret", "retaa", "retab", "eret", "eretaa", "eretab"))
INDIRECT = frozenset(("br", "braa", "brab", "braaz", "brabz", "blr", "blraa", "blrab",
                      "blraaz", "blrabz"))  # fmt: skip
CONDITIONAL = frozenset(("cbz", "cbnz", "tbz", "tbnz"))  # plus every b.<cond> / bc.<cond>
# Unconditional branches that do not link: control goes to the target, never to the next
# instruction (``b`` direct, ``br`` and its pointer-authenticated forms through a register).
JUMPS = frozenset(("b", "br", "braa", "brab", "braaz", "brabz"))
# Traps compilers emit where control must not go on (``__builtin_trap``, ``unreachable``):
# the exception returns to the trapping instruction itself, never to the next one. (``svc``,
# ``hvc``, ``smc`` and ``hlt``, semihosting's call, return to the next instruction.)
TRAPS = frozenset(("brk", "udf"))
DIRECT = frozenset(("b", "bl")) | CONDITIONAL

# Instructions that write no general register (beyond what is listed elsewhere).
NO_DEST = frozenset((
    "cmp", "cmn", "tst", "ccmp", "ccmn", "fcmp", "fcmpe", "fccmp", "fccmpe",
    "prfm", "prfum", "msr", "sys", "dc", "ic", "tlbi", "at", "brk", "svc", "hvc", "smc",
    "udf", "hlt", "clrex", "dmb", "dsb", "isb", "sb", "ssbb", "pssbb", "setffr", "cfinv",
)) | frozenset(HINTS.values())  # fmt: skip
# Instructions that read their destination too (accumulate, insert, compare-and-swap).
READS_DEST = frozenset(("movk", "bfi", "bfxil", "bfm", "bfc", "mla", "mls", "fmla", "fmls",
                        "sdot", "udot", "ins"))  # fmt: skip

_LSE_OPS = ("add", "clr", "eor", "set", "smax", "smin", "umax", "umin")
_OPS = "(?:" + "|".join(_LSE_OPS) + ")"
_ORDER = "(?:a|l|al)?"
_RE_STORE_STATUS = re.compile(r"^st(l)?x(r[bh]?|p)$")  # first operand is a status register
# LSE atomics that return the old value in their second operand.
_LSE_LOAD = f"ld{_OPS}{_ORDER}[bh]?|swp{_ORDER}[bh]?|swpp{_ORDER}|ld(?:clr|set)p{_ORDER}"
_RE_LSE_LD = re.compile(f"^(?:{_LSE_LOAD})$")
_RE_CAS = re.compile(r"^cas(a|l|al)?[bh]?$")
_RE_CASP = re.compile(r"^casp(a|l|al)?$")
# Instruction families by canonical mnemonic (the pattern pass maps them to categories).
FAMILIES = {
    "llsc": re.compile(r"^(ld(a)?x(r[bh]?|p)|st(l)?x(r[bh]?|p))$"),
    "lse": re.compile(f"^(?:{_LSE_LOAD}|st{_OPS}l?[bh]?|cas{_ORDER}[bh]?|casp{_ORDER})$"),
    "barrier": re.compile(r"^(dmb|dsb|isb|sb|ssbb|pssbb)$"),
    "acquire-release": re.compile(r"^(ldar[bh]?|ldapr[bh]?|ldapur(s?[bh]|sw)?|ldlar[bh]?|"
                                  r"stlr[bh]?|stllr[bh]?|stlur[bh]?)$"),
    "division": re.compile(r"^(udiv|sdiv|udivr|sdivr|fdiv|fdivr|fsqrt)$"),
}  # fmt: skip
_RE_PAIR_LOAD = re.compile(r"^(ldp|ldnp|ldpsw|ld(a)?xp|ldiapp)$")
_RE_COMMENT = re.compile(r"\s*(//|;).*$")  # objdump/llvm `// ...`, capstone/objdump `; ...`
_RE_SYMBOL = re.compile(r"\s*<[^>]*>")  # objdump's `<main+0x10>`
_RE_SPLIT = re.compile(r"^\s*(\S+)\s*(.*?)\s*$")
# The target operand of a direct branch, on operand text with `<symbol>` parts removed:
# capstone `#0x55000021b4`, plain `0x1020`, objdump's bare hex `4005d0`, relative `#-0x10`.
_RE_TARGET = re.compile(r"(?:^|,)\s*#?(-?)(?:0x)?([0-9a-f]+)\s*$")
_RE_IMM = re.compile(r"#?\s*(0x[0-9a-f]+|[0-9]+)")
_RE_TOKENS = re.compile(r"[\s,\[\]{}!]+")  # what separates the registers of one operand

_GPR_ALIASES = {"sp": "sp", "wsp": "sp", "xzr": "xzr", "wzr": "xzr",
                "fp": "x29", "lr": "x30", "ip0": "x16", "ip1": "x17"}  # fmt: skip
_RE_REG = re.compile(r"^(?:([wx])([0-9]{1,2})|([bhsdqvz])([0-9]{1,2})|(pn?)([0-9]{1,2}))$")


def split_asm(text: str) -> tuple[str, str]:
    """``"LDR X4, [X0] // c"`` -> ``("ldr", "x4, [x0]")``: lower case, comment dropped."""
    if "/" not in text and ";" not in text and "\n" not in text:
        # no comment to drop and one line: what the patterns below match, without regex
        # (both split at the same Unicode whitespace)
        parts = text.lower().split(None, 1)
        if not parts:
            return "", ""
        return parts[0], parts[1].rstrip() if len(parts) > 1 else ""
    match = _RE_SPLIT.match(_RE_COMMENT.sub("", text).lower())
    if not match:
        return "", ""
    return match.group(1), match.group(2)


def normalize_mnemonic(mnemonic: str, operands: str = "") -> str:
    """The canonical spelling of a mnemonic; ``operands`` resolves ``hint #N`` and ``.inst``."""
    m = mnemonic.lower()
    if m == "hint":
        imm = _first_immediate(operands)
        return HINTS.get(imm, "hint") if imm is not None else "hint"
    if m in UNDECODED:
        word = _undecoded_word(m, operands)
        return (decode_word(word) or m) if word is not None else m
    if m.startswith("b.") or m.startswith("bc."):
        head, _, cond = m.partition(".")
        return f"{head}.{COND_ALIASES.get(cond, cond)}"
    if len(m) > 2 and m[0] == "b" and m[1:] in CONDITIONS:  # GNU `beq` spelling
        return f"b.{COND_ALIASES.get(m[1:], m[1:])}"
    return MNEMONIC_ALIASES.get(m, m)


def canonical(text: str) -> tuple[str, list[str]]:
    """Canonical mnemonic and operand list of one instruction's text."""
    mnemonic, operands = split_asm(text)
    return normalize_mnemonic(mnemonic, operands), split_operands(operands)


class Reading(NamedTuple):  # a tuple: built once per distinct text, cheaply
    """Everything the register-level checks read from one instruction's text, split once
    (``dest_registers``, ``source_registers``, ``memory_operand`` and ``branch_operand``
    give the same values one question at a time)."""

    mnemonic: str  # canonical
    operands: list[str]
    mem: MemOperand | None
    dest: tuple[str, ...]
    src: tuple[str, ...]
    target: tuple[int, bool] | None  # branch_operand (direct branches only)


def read(text: str) -> Reading:
    mnemonic, operand_text = split_asm(text)
    m = normalize_mnemonic(mnemonic, operand_text)
    operands = split_operands(operand_text)
    mem = memory_operand(operands)
    return Reading(m, operands, mem, _dest_registers(m, operands, mem),
                   _source_registers(m, operands),
                   _target_operand(m, operand_text) if is_branch(m) else None)


def split_operands(operands: str) -> list[str]:
    """Top-level comma split: ``"x0, [x1, #8]!"`` -> ``["x0", "[x1, #8]!"]``."""
    text = _RE_SYMBOL.sub("", operands) if "<" in operands else operands
    if "[" not in text and "{" not in text:  # no nesting: every comma splits
        return [p for p in (part.strip() for part in text.split(",")) if p]
    if "{" not in text and "}" not in text and text.count("[") == 1 and \
            text.count("]") == 1 and text.index("[") < text.index("]"):
        # one memory operand (most of them): every comma outside its brackets splits
        start, end = text.index("["), text.index("]") + 1
        head, tail = text[:start].split(","), text[end:].split(",")
        pieces = [*head[:-1], head[-1] + text[start:end] + tail[0], *tail[1:]]
        return [p for p in (piece.strip() for piece in pieces) if p]
    parts: list[str] = []
    depth = 0
    start = 0
    for i, ch in enumerate(text):
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth = max(0, depth - 1)
        elif ch == "," and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    last = text[start:].strip()
    if last or parts:
        parts.append(last)
    return [p for p in parts if p]


@lru_cache(maxsize=4096)  # operand tokens repeat: read each spelling once
def parse_register(token: str) -> str | None:
    """Canonical register name: ``w5``/``x5`` -> ``x5``, ``wsp`` -> ``sp``, ``wzr`` -> ``xzr``,
    ``d3``/``q3``/``v3.4s``/``z3.d`` -> ``v3``, ``p1/z`` -> ``p1``; None if not a register."""
    t = token.strip().lower().rstrip("!")
    t = t.split("/", 1)[0].split(".", 1)[0].split("[", 1)[0]
    if t in _GPR_ALIASES:
        return _GPR_ALIASES[t]
    m = _RE_REG.match(t)
    if not m:
        return None
    if m.group(1):
        n = int(m.group(2))
        return f"x{n}" if n <= 30 else None
    if m.group(3):
        n = int(m.group(4))
        return f"v{n}" if n <= 31 else None
    n = int(m.group(6))
    return f"p{n}" if n <= 15 else None


def registers_in(operand: str) -> list[str]:
    """Every register named in one operand, in order: ``{v0.16b, v1.16b}`` -> v0, v1;
    ``[x1, x2, lsl #3]`` -> x1, x2."""
    return list(_registers_in(operand))


@lru_cache(maxsize=8192)  # operands repeat across instructions (``x0``, ``[x1, #8]``)
def _registers_in(operand: str) -> tuple[str, ...]:
    regs = (parse_register(t) for t in _RE_TOKENS.split(operand) if t and not t.startswith("#"))
    return tuple(r for r in regs if r is not None)


@dataclass(frozen=True)
class MemOperand:
    base: str  # canonical register name
    index: str | None
    writeback: bool  # pre-index `[x1, #8]!` or post-index `[x1], #8`


def memory_operand(operands: list[str]) -> MemOperand | None:
    """The bracketed memory operand, or None (register-only or literal/pc-relative forms)."""
    for i, op in enumerate(operands):
        if op.startswith("["):
            return _memory_operand(op, i + 1 < len(operands))
    return None


@lru_cache(maxsize=8192)  # memory operands repeat across instructions (``[sp, #16]``)
def _memory_operand(op: str, more: bool) -> MemOperand | None:
    """One bracketed operand; ``more``: operands follow it (``[x1], #8`` writes back)."""
    inner = op[1 : op.find("]")] if "]" in op else op[1:]
    regs = [parse_register(p) for p in inner.split(",")]
    if not regs or regs[0] is None:
        return None
    index = regs[1] if len(regs) > 1 else None
    writeback = op.endswith("!") or (op.endswith("]") and more)
    return MemOperand(regs[0], index, writeback)


@lru_cache(maxsize=4096)  # asked for the loads feeding indirect branches, which repeat
def indexed(text: str) -> bool:
    """The instruction's memory operand has an index register (``[x0, x1, lsl #3]``)."""
    mem = memory_operand(canonical(text)[1])
    return mem is not None and mem.index is not None


def base_register(text: str) -> str | None:
    """Base register of the memory operand of an instruction's text, if it has one."""
    mem = memory_operand(canonical(text)[1])
    return mem.base if mem else None


# The one set of instruction predicates (every caller asks here). They take the canonical
# mnemonic (``normalize_mnemonic``). Edge cases, decided once:
# - ``prfm``/``prfum`` are prefetches: neither load nor store (no register is written, no
#   data changes), but memory accesses (``is_memory``).
# - ``dc``/``ic`` are cache maintenance: not stores (``dc zva`` zeroes a line, but the
#   mnemonic alone cannot tell it from ``dc cvac``), but memory accesses.
# - Exclusive pairs (``ldxp``/``ldaxp``, ``stxp``/``stlxp``) are exclusive loads/stores.
# - LSE atomics (``cas*``, ``swp*``, ``ld<op>*``) load and store; ``st<op>*`` only store.
# - PAC-authenticated branches (``braa``, ``blraaz``…) are indirect; ``retaa`` is a return.
_RE_ACQUIRE = re.compile(r"^(ldar[bh]?|ldapr[bh]?|ldapur(s?[bh]|sw)?|ldlar[bh]?|ldax(r[bh]?|p))$")
_RE_RELEASE = re.compile(r"^(stlr[bh]?|stllr[bh]?|stlur[bh]?|stlx(r[bh]?|p))$")
_WAIT_HINTS = frozenset(("yield", "wfe", "wfi", "wfet", "wfit", "sevl", "isb"))
_FP_DIVIDES = frozenset(("fdiv", "fdivr", "fsqrt"))
PREFETCHES = frozenset(("prfm", "prfum"))
CACHE_MAINTENANCE = frozenset(("dc", "ic"))


def is_load(mnemonic: str) -> bool:
    """Reads memory into registers: ``ldr*``, ``ldp``, exclusives, acquire loads, ``ld1``…,
    and the atomics that return the old value (``cas*``, ``swp*``, ``ldadd*``…)."""
    return mnemonic.startswith("ld") or is_cas(mnemonic) or mnemonic.startswith("swp")


def is_store(mnemonic: str) -> bool:
    """Writes memory: ``str*``, ``stp``, exclusives, release stores, ``st1``…, atomics."""
    return mnemonic.startswith("st") or is_cas(mnemonic) or bool(_RE_LSE_LD.match(mnemonic))


def is_prefetch(mnemonic: str) -> bool:
    return mnemonic in PREFETCHES


def is_memory(mnemonic: str) -> bool:
    """Touches memory or the caches: loads, stores, prefetches, cache maintenance."""
    return (is_load(mnemonic) or is_store(mnemonic) or mnemonic in PREFETCHES
            or mnemonic in CACHE_MAINTENANCE)  # fmt: skip


def is_cas(mnemonic: str) -> bool:
    return bool(_RE_CAS.match(mnemonic) or _RE_CASP.match(mnemonic))


def is_exclusive(mnemonic: str) -> bool:
    """Load/store-exclusive, byte/half/pair forms included (``ldxr``…``stlxp``)."""
    return bool(FAMILIES["llsc"].match(mnemonic))


def is_lse(mnemonic: str) -> bool:
    """An LSE atomic: ``cas*``, ``casp*``, ``swp*``, ``ld<op>*``, ``st<op>*``."""
    return bool(FAMILIES["lse"].match(mnemonic))


def is_atomic(mnemonic: str) -> bool:
    return is_exclusive(mnemonic) or is_lse(mnemonic)


def is_acquire(mnemonic: str) -> bool:
    """A load with acquire (or RCpc) semantics outside LSE: ``ldar``, ``ldapr``, ``ldaxr``…"""
    return bool(_RE_ACQUIRE.match(mnemonic))


def is_release(mnemonic: str) -> bool:
    """A store with release semantics outside LSE: ``stlr``, ``stlur``, ``stlxr``…"""
    return bool(_RE_RELEASE.match(mnemonic))


def is_ordered(mnemonic: str) -> bool:
    return is_acquire(mnemonic) or is_release(mnemonic)


def is_barrier(mnemonic: str) -> bool:
    return bool(FAMILIES["barrier"].match(mnemonic))


def is_divide(mnemonic: str) -> bool:
    """Integer or FP divide or square root (the long-latency, often unpipelined ops)."""
    return bool(FAMILIES["division"].match(mnemonic))


def is_fp_divide(mnemonic: str) -> bool:
    return mnemonic in _FP_DIVIDES


def is_wait_hint(mnemonic: str) -> bool:
    """What a polling loop uses to wait: ``yield``, ``wfe``/``wfet``, ``sevl``, ``isb``."""
    return mnemonic in _WAIT_HINTS


def is_conditional_branch(mnemonic: str) -> bool:
    return mnemonic in CONDITIONAL or mnemonic.startswith("b.") or mnemonic.startswith("bc.")


def is_branch(mnemonic: str) -> bool:
    return (mnemonic in DIRECT or mnemonic in INDIRECT or mnemonic in RETURNS
            or is_conditional_branch(mnemonic))  # fmt: skip


def is_call(mnemonic: str) -> bool:
    return mnemonic in CALLS


def is_return(mnemonic: str) -> bool:
    return mnemonic in RETURNS


def ends_flow(mnemonic: str) -> bool:
    """Control does not fall through to the next instruction: an unconditional branch that
    does not link (``b``, ``br``, ``braa``, ``braaz``…), a return (``ret``, ``retaa``,
    ``eret``…) or a trap (``brk``, ``udf``). Conditional branches and calls fall through."""
    return mnemonic in JUMPS or mnemonic in RETURNS or mnemonic in TRAPS


def is_indirect(mnemonic: str) -> bool:
    """A branch or call through a register, authenticated forms included. ``ret`` is not:
    returns are predicted by the return stack, not the indirect predictor."""
    return mnemonic in INDIRECT


@lru_cache(maxsize=4096)  # asked again for every instruction the shape checks read
def dest_positions(m: str) -> tuple[int, ...]:
    """Which operands a (canonical) mnemonic writes, by position; ``()`` for none."""
    if _RE_STORE_STATUS.match(m):
        return (0,)
    if m.startswith("st") or m in NO_DEST or is_branch(m):
        return ()
    if _RE_PAIR_LOAD.match(m) or _RE_CASP.match(m):
        return (0, 1)
    if _RE_LSE_LD.match(m):
        return (1,)
    return (0,)


@lru_cache(maxsize=4096)
def _written_positions(m: str) -> frozenset[int]:
    """Operand positions that only receive a value (not also read) for ``source_registers``."""
    return frozenset() if m in READS_DEST or is_cas(m) else frozenset(dest_positions(m))


def overwrites_first(m: str) -> bool:
    """The first operand only receives a value: ``source_registers`` does not read it."""
    return 0 in _written_positions(m)


def dest_registers(mnemonic: str, operands: list[str]) -> tuple[str, ...]:
    """Registers the instruction writes (canonical names, in operand order): the destination
    operand(s), ``x30`` for calls, and the base of a writeback addressing mode."""
    return _dest_registers(normalize_mnemonic(mnemonic), operands, memory_operand(operands))


def _dest_registers(m: str, operands: list[str], mem: MemOperand | None) -> tuple[str, ...]:
    """``dest_registers`` of a canonical mnemonic whose memory operand is already read
    (``normalize_mnemonic`` gives a canonical name back unchanged)."""
    if is_call(m):
        return ("x30",)
    out: list[str] = []
    for pos in dest_positions(m):
        if pos < len(operands) and not operands[pos].startswith("["):
            out.extend(_registers_in(operands[pos]))
    if mem is not None and mem.writeback:
        out.append(mem.base)
    return tuple(dict.fromkeys(r for r in out if r != "xzr"))


def source_registers(mnemonic: str, operands: list[str]) -> tuple[str, ...]:
    """Registers the instruction reads (canonical names, in operand order)."""
    return _source_registers(normalize_mnemonic(mnemonic), operands)


def _source_registers(m: str, operands: list[str]) -> tuple[str, ...]:
    """``source_registers`` of a canonical mnemonic."""
    written = _written_positions(m)
    out: list[str] = []
    for pos, op in enumerate(operands):
        if pos not in written or op.startswith("["):
            out.extend(_registers_in(op))
    if m in RETURNS and not operands:
        out.append("x30")
    return tuple(dict.fromkeys(r for r in out if r != "xzr"))


def branch_target(text: str, pc: int | None = None) -> int | None:
    """Target address of a direct branch (``b``, ``bl``, ``b.cond``, ``cbz``, ``tbz``…).

    Accepts ``b.eq 0x1020``, ``bl #0x55000021b4``, ``cbz x0, 0x1f0``, ``tbz w1, #3, 0x200``
    and objdump's ``b 4005d0 <main+0x10>`` (bare hex). A negative immediate (``b #-0x10``,
    older llvm-objdump) is relative and needs ``pc``. None for anything else."""
    return resolve_target(branch_operand(text), pc)


def branch_operand(text: str) -> tuple[int, bool] | None:
    """The PC-independent half of ``branch_target``: the target operand's value and whether
    it is relative (to be subtracted from the PC); None when the text is no direct branch."""
    mnemonic, operands = split_asm(text)
    return _target_operand(normalize_mnemonic(mnemonic, operands), operands)


def _target_operand(m: str, operands: str) -> tuple[int, bool] | None:
    """``branch_operand`` of a canonical mnemonic and its operand text."""
    if m not in DIRECT and not (m.startswith("b.") or m.startswith("bc.")):
        return None
    match = _RE_TARGET.search(_RE_SYMBOL.sub("", operands))
    if not match:
        return None
    return int(match.group(2), 16), bool(match.group(1))


def resolve_target(operand: tuple[int, bool] | None, pc: int | None) -> int | None:
    """A ``branch_operand`` at ``pc``: its address (None if relative and no PC is known)."""
    if operand is None:
        return None
    value, relative = operand
    if relative:
        return pc - value if pc is not None else None
    return value


def _first_immediate(operands: str) -> int | None:
    match = _RE_IMM.search(operands.lower())
    if not match:
        return None
    return int(match.group(1), 0)


def _undecoded_word(mnemonic: str, operands: str) -> int | None:
    """The 32-bit instruction word of ``.byte 0x41, 0x7c, 0xe0, 0x88`` (little-endian bytes)
    or ``.inst 0x88e07c41`` / ``.word 0x88e07c41``."""
    values = [int(v, 0) for v in re.findall(r"0x[0-9a-f]+|\b[0-9]+\b", operands.lower())]
    if mnemonic == ".byte":
        if len(values) != 4 or any(v > 0xFF for v in values):
            return None
        return int.from_bytes(bytes(values), "little")
    return values[0] if len(values) == 1 and values[0] <= 0xFFFFFFFF else None


def decode_word(word: int) -> str | None:
    """Mnemonic of an LSE atomic instruction word (what capstone 4 leaves as ``.byte``)."""
    size = (word >> 30) & 3
    width = {0: "b", 1: "h"}.get(size, "")
    if word & 0x3FA07C00 == 0x08A07C00:  # CAS: size 0010001 L 1 Rs o0 11111 Rn Rt
        acq, rel = (word >> 22) & 1, (word >> 15) & 1
        return "cas" + ("a" if acq else "") + ("l" if rel else "") + width
    if word & 0xBFA07C00 == 0x08207C00:  # CASP: 0 sz 0010000 L 1 Rs o0 11111 Rn Rt
        acq, rel = (word >> 22) & 1, (word >> 15) & 1
        return "casp" + ("a" if acq else "") + ("l" if rel else "")
    if word & 0x3F200C00 == 0x38200000:  # LD<op>/ST<op>/SWP: size 111 0 00 A R 1 Rs o3 opc 00
        acq, rel = (word >> 23) & 1, (word >> 22) & 1
        o3, opc, rt = (word >> 15) & 1, (word >> 12) & 7, word & 0x1F
        order = ("a" if acq else "") + ("l" if rel else "")
        if o3 == 1:
            return "swp" + order + width if opc == 0 else None
        if rt == 31 and not acq:  # the ST<op> aliases discard the old value
            return "st" + _LSE_OPS[opc] + ("l" if rel else "") + width
        return "ld" + _LSE_OPS[opc] + order + width
    return None
