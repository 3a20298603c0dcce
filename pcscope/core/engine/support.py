"""Which instructions can support which idea category (the validator's support table).

A finding's category is supported when at least one of its PCs is an instruction of a
class the category is about (``indirect-branch`` needs a ``br``/``blr``, ``division`` a
divide…) or carries the pattern hit of that category. Instruction classes are ISA facts and
come from pcscope.core.isa (one answer for every caller); this table only says which class
each category needs.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core import isa

_FP_OPERAND = re.compile(r"\b[vqdsh]\d{1,2}\b|\bz\d{1,2}\.")


def _is_fp(m: str, asm: str) -> bool:
    return m.startswith("f") or bool(_FP_OPERAND.search(asm.lower()))


@dataclass(frozen=True)
class Requirement:
    what: str  # said in a rejection: "no <what> among its PCs"
    test: Callable[[str, str], bool]  # (mnemonic, asm) -> supports


def _m(test: Callable[[str], bool]) -> Callable[[str, str], bool]:
    return lambda m, _asm: test(m)


_ANY = Requirement("instruction", lambda _m_, _a: True)
_MEMORY = Requirement("load or store", _m(isa.is_memory))

SUPPORT: dict[str, Requirement] = {
    "indirect-branch": Requirement("br/blr indirect branch", _m(isa.is_indirect)),
    "branch-mispredict": Requirement("conditional branch (b.cond/cbz/tbz)",
                                     _m(isa.is_conditional_branch)),
    "atomic-llsc": Requirement("exclusive load/store (ldxr/stxr family)", _m(isa.is_exclusive)),
    "atomic-contention": Requirement("atomic (exclusive or LSE)", _m(isa.is_atomic)),
    "barrier": Requirement("barrier (dmb/dsb/isb)", _m(isa.is_barrier)),
    "acquire-release": Requirement("acquire/release access (ldar/stlr/ldapr)",
                                   _m(isa.is_ordered)),
    "dependent-load": Requirement("load", _m(isa.is_load)),
    "cache-miss": _MEMORY,
    "tlb-miss": _MEMORY,
    "store-forwarding": _MEMORY,
    "division": Requirement("divide or square root (udiv/sdiv/fdiv/fsqrt)", _m(isa.is_divide)),
    "spin-wait": Requirement(
        "load, branch or wait hint",
        _m(lambda m: isa.is_load(m) or isa.is_branch(m) or isa.is_wait_hint(m))),
    "call-overhead": Requirement("branch or call", _m(isa.is_branch)),
    "memcpy": _MEMORY,
    "fp-dependency": Requirement("floating-point or SIMD instruction", _is_fp),
    "vectorization": _ANY,
    "register-spill": _MEMORY,
    "state-in-memory": _MEMORY,
    "string-routine": _ANY,  # the routine's and its callers' code: loads, compares, branches
    "hardening": _ANY,  # what a flag adds: register clears, canary checks, landing pads
    "narrow-access": _MEMORY,
    "loop-overhead": _ANY,
    "other": _ANY,
}


def supports(category: str, asm: str, patterns: list[str]) -> bool:
    """Whether one instruction (its asm text and pattern hits) supports ``category``."""
    mnemonic, _ops = isa.canonical(asm)
    return category in patterns or SUPPORT[category].test(mnemonic, asm)
