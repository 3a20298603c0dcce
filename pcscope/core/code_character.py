"""What a stretch of hot code is, read from its instructions weighted by their counts.

The report's coverage table says this for every top function without an idea, so the
biggest hot code always gets a true, useful sentence: it already uses the crypto
extensions, it is already vectorised, it is scalar floating point, or it is scalar integer
code that no rule covers — and then which measurement decides (branch mispredicts, cache
misses or stall cycles), chosen by what the instruction mix makes likely. Derived from the
mnemonics and operands only, never from a symbol name.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from pcscope.core import isa

CRYPTO_SHARE = 0.10  # executions in crypto-extension instructions that make crypto code
SIMD_SHARE = 0.25  # executions in Advanced SIMD / SVE instructions that make vector code
FP_SHARE = 0.20  # executions in scalar floating-point instructions that make FP code
BRANCHY = 0.10  # conditional branches per instruction that make integer code branchy
MEMORY_HEAVY = 0.35  # loads and stores per instruction that make it memory-heavy
_CRYPTO = re.compile(r"^(aes(e|d|mc|imc)|sha1(c|m|p|h|su0|su1)|sha256(h|h2|su0|su1)|"
                     r"sha512(h|h2|su0|su1)|pmull2?|eor3|rax1|xar|bcax|sm3\w*|sm4\w*)$")
_VECTOR = re.compile(r"\b[vz][0-9]{1,2}\.[0-9]*[bhsdq]\b|\bq[0-9]{1,2}\b|\{")
_SCALAR_FP = re.compile(r"\b[hsd][0-9]{1,2}\b")


@dataclass(frozen=True)
class Mix:
    """Executions of each kind of instruction (weights are the profile's counts)."""

    total: float
    crypto: dict[str, float]  # executions per crypto-extension mnemonic
    vector: float
    scalar_fp: float
    conditional: float
    memory: float

    @classmethod
    def of(cls, code: Iterable[tuple[str, float]]) -> Mix:
        total = vector = scalar_fp = conditional = memory = 0.0
        crypto: dict[str, float] = {}
        for asm, weight in code:
            mnemonic, operands = isa.split_asm(asm)
            mnemonic = isa.normalize_mnemonic(mnemonic, operands)
            total += weight
            if _CRYPTO.match(mnemonic):
                crypto[mnemonic] = crypto.get(mnemonic, 0.0) + weight
            if _VECTOR.search(operands):
                vector += weight
            elif mnemonic.startswith("f") and _SCALAR_FP.search(operands):
                scalar_fp += weight
            conditional += weight if isa.is_conditional_branch(mnemonic) else 0.0
            memory += weight if isa.is_load(mnemonic) or isa.is_store(mnemonic) else 0.0
        return cls(total, crypto, vector, scalar_fp, conditional, memory)


def describe(code: Iterable[tuple[str, float]]) -> str:
    """One sentence on what the code is and what would decide whether it can be faster:
    ``code`` is (instruction text, count) per instruction."""
    mix = Mix.of(code)
    if not mix.total:
        return ""
    crypto = sum(mix.crypto.values()) / mix.total
    if crypto >= CRYPTO_SHARE:
        names = "/".join(sorted(mix.crypto, key=lambda n: -mix.crypto[n])[:4])
        return (f"already uses the Arm crypto extensions ({names}: {crypto:.0%} of its "
                f"executions): the hardware does the rounds, so only fewer calls or more "
                f"data per call help")
    if mix.vector / mix.total >= SIMD_SHARE:
        return (f"already vectorised ({mix.vector / mix.total:.0%} of its executions are "
                f"SIMD): stall cycles (STALL_BACKEND) say whether anything is left")
    if mix.scalar_fp / mix.total >= FP_SHARE:
        return (f"scalar floating-point code ({mix.scalar_fp / mix.total:.0%} of its "
                f"executions, not vectorised): -fopt-info-vec-missed or "
                f"-Rpass-missed=loop-vectorize says why the compiler did not vectorise it")
    branches, memory = mix.conditional / mix.total, mix.memory / mix.total
    mix_text = (f"scalar integer code ({branches:.0%} conditional branches, {memory:.0%} "
                f"loads/stores)")
    if branches >= BRANCHY:
        return (f"branchy {mix_text}: no rule applies; branch mispredicts "
                f"(BR_MIS_PRED_RETIRED or SPE) decide whether branchless code (csel) pays")
    if memory >= MEMORY_HEAVY:
        return (f"memory-heavy {mix_text}: no rule applies; L1D/L2 refills "
                f"(L1D_CACHE_REFILL or SPE latency) decide whether layout or prefetch pays")
    return (f"{mix_text}: no rule applies; stall cycles (STALL_BACKEND, STALL_FRONTEND) "
            f"say what bounds it")
