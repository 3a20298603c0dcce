"""Which instructions can support which idea category (the validator's support table).

A finding's category is supported when at least one of its PCs is an instruction of a
class the category is about (``indirect-branch`` needs a ``br``/``blr``, ``division`` a
divide…) or carries the pattern hit of that category. Classes are judged from the canonical
mnemonic (pcscope.core.isa: objdump, capstone and llvm spellings, undecoded LSE words).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core import isa

_INDIRECT = re.compile(r"^(br|blr)(aa|ab|aaz|abz)?$")
_CONDITIONAL = re.compile(r"^(b|bc)\.[a-z]{2}$|^(cbz|cbnz|tbz|tbnz)$")
_BRANCH = re.compile(r"^(b|bl|br|blr|ret)(aa|ab|aaz|abz)?$|^(b|bc)\.[a-z]{2}$|^(cbz|cbnz|tbz|tbnz)$")
_EXCLUSIVE = re.compile(r"^(lda?x(r[bh]?|p)|stl?x(r[bh]?|p))$")
_LSE = re.compile(
    r"^(casp?(a|l|al)?[bh]?|swp(a|l|al)?[bh]?"
    r"|ld(add|clr|eor|set|smax|smin|umax|umin)(a|l|al)?[bh]?"
    r"|st(add|clr|eor|set|smax|smin|umax|umin)l?[bh]?)$"
)
_BARRIER = re.compile(r"^(dmb|dsb|isb|sb|ssbb|pssbb)$")
_ORDERED = re.compile(r"^(ldar[bh]?|ldapr[bh]?|ldapur\w*|stlr[bh]?|stlur\w*|ldlar[bh]?|stllr[bh]?"
                      r"|ldax(r[bh]?|p)|stlx(r[bh]?|p))$")
_DIVIDE = re.compile(r"^(udiv|sdiv|udivr|sdivr|fdiv|fdivr|fsqrt|frsqrte|frecpe)$")
_WAIT_HINT = re.compile(r"^(yield|wfe|wfi|wfet|wfit|sevl|isb)$")
_FP_OPERAND = re.compile(r"\b[vqdsh]\d{1,2}\b|\bz\d{1,2}\.")


def is_indirect(m: str) -> bool:
    return bool(_INDIRECT.match(m))


def is_conditional(m: str) -> bool:
    return bool(_CONDITIONAL.match(m))


def is_exclusive(m: str) -> bool:
    return bool(_EXCLUSIVE.match(m))


def is_lse(m: str) -> bool:
    return bool(_LSE.match(m))


def is_barrier(m: str) -> bool:
    return bool(_BARRIER.match(m))


def is_divide(m: str) -> bool:
    return bool(_DIVIDE.match(m))


def is_wait_hint(m: str) -> bool:
    return bool(_WAIT_HINT.match(m))


def is_load(m: str) -> bool:
    return m.startswith("ld") or m == "prfm" or bool(_LSE.match(m))


def is_store(m: str) -> bool:
    return m.startswith("st") or m.startswith("dc") or bool(_LSE.match(m))


def is_memory(m: str) -> bool:
    return is_load(m) or is_store(m)


def is_fp(m: str, asm: str) -> bool:
    return m.startswith("f") or bool(_FP_OPERAND.search(asm.lower()))


@dataclass(frozen=True)
class Requirement:
    what: str  # said in a rejection: "no <what> among its PCs"
    test: Callable[[str, str], bool]  # (mnemonic, asm) -> supports


def _m(pattern: re.Pattern[str]) -> Callable[[str, str], bool]:
    return lambda m, _asm: bool(pattern.match(m))


_ANY = Requirement("instruction", lambda _m_, _a: True)

SUPPORT: dict[str, Requirement] = {
    "indirect-branch": Requirement("br/blr indirect branch", _m(_INDIRECT)),
    "branch-mispredict": Requirement("conditional branch (b.cond/cbz/tbz)", _m(_CONDITIONAL)),
    "atomic-llsc": Requirement("exclusive load/store (ldxr/stxr family)", _m(_EXCLUSIVE)),
    "atomic-contention": Requirement(
        "atomic (exclusive or LSE)", lambda m, _a: bool(_EXCLUSIVE.match(m) or _LSE.match(m))),
    "barrier": Requirement("barrier (dmb/dsb/isb)", _m(_BARRIER)),
    "acquire-release": Requirement("acquire/release access (ldar/stlr/ldapr)", _m(_ORDERED)),
    "dependent-load": Requirement("load", lambda m, _a: is_load(m)),
    "cache-miss": Requirement("load or store", lambda m, _a: is_memory(m)),
    "tlb-miss": Requirement("load or store", lambda m, _a: is_memory(m)),
    "store-forwarding": Requirement("load or store", lambda m, _a: is_memory(m)),
    "division": Requirement("divide or square root (udiv/sdiv/fdiv/fsqrt)", _m(_DIVIDE)),
    "spin-wait": Requirement(
        "load, branch or wait hint",
        lambda m, _a: is_load(m) or bool(_BRANCH.match(m) or _WAIT_HINT.match(m))),
    "call-overhead": Requirement("branch or call", _m(_BRANCH)),
    "memcpy": Requirement("load or store", lambda m, _a: is_memory(m)),
    "fp-dependency": Requirement("floating-point or SIMD instruction", is_fp),
    "vectorization": _ANY,
    "other": _ANY,
}


def supports(category: str, asm: str, patterns: list[str]) -> bool:
    """Whether one instruction (its asm text and pattern hits) supports ``category``."""
    mnemonic, _ops = isa.canonical(asm)
    return category in patterns or SUPPORT[category].test(mnemonic, asm)
