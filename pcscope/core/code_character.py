"""What a stretch of hot code is, read from its instructions weighted by their counts.

The report's coverage table says this for every top function without an idea, so the
biggest hot code always gets a true, useful sentence: it already uses the crypto
extensions, it is already vectorised, it is scalar floating point, it is a store loop (and
its store width), or it is scalar integer code that no rule covers — and then which
measurement decides (branch mispredicts, cache misses or stall cycles), chosen by what the
instruction mix makes likely; the report says each such measurement once. Derived from the
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
NO_RULE = ": no rule applies"  # the end of a description that says nothing specific
# Stores per instruction, and their part of all loads and stores, that make a store loop (a
# fill or zeroing loop: one `str` in a four-instruction loop is 25%, with no loads).
STORE_SHARE = 0.20
STORES_OF_MEMORY = 0.80
_REGISTER_BYTES = {"x": 8, "w": 4, "q": 16, "d": 8, "s": 4, "h": 2, "b": 1}
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
    stores: dict[int, float]  # executions of stores per bytes written by one instruction

    @classmethod
    def of(cls, code: Iterable[tuple[str, float]]) -> Mix:
        total = vector = scalar_fp = conditional = memory = 0.0
        crypto: dict[str, float] = {}
        stores: dict[int, float] = {}
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
            if isa.is_store(mnemonic) and (size := _store_bytes(mnemonic, operands)):
                stores[size] = stores.get(size, 0.0) + weight
        return cls(total, crypto, vector, scalar_fp, conditional, memory, stores)

    @property
    def store_width(self) -> int | None:
        """The usual store width in bytes when the code is a store loop (a fill or clear:
        mostly stores, almost no loads), else None."""
        stored = sum(self.stores.values())
        if not self.total or stored / self.total < STORE_SHARE or \
                stored < STORES_OF_MEMORY * self.memory:
            return None
        return max(self.stores, key=lambda n: self.stores[n])


def _store_bytes(mnemonic: str, operands: str) -> int | None:
    """Bytes one plain store writes (`str xzr` 8, `strb` 1, `stp q` 32), None when the
    form is not a plain or paired store."""
    if mnemonic in ("strb", "sturb", "stlrb"):
        return 1
    if mnemonic in ("strh", "sturh", "stlrh"):
        return 2
    if mnemonic not in ("str", "stur", "stlr", "stp", "stnp"):
        return None
    first = isa.split_operands(operands)[:1]
    size = _REGISTER_BYTES.get(first[0][:1]) if first else None
    return size and size * (2 if mnemonic in ("stp", "stnp") else 1)


@dataclass(frozen=True)
class Character:
    """What a stretch of code is and, when that says nothing specific (no rule applies),
    the measurement that decides whether it can be faster: the same few sentences for many
    functions, which a report says once."""

    what: str
    decides: str = ""


def describe(code: Iterable[tuple[str, float]]) -> Character:
    """What the code is and what would decide whether it can be faster: ``code`` is
    (instruction text, count) per instruction."""
    mix = Mix.of(code)
    if not mix.total:
        return Character("")
    crypto = sum(mix.crypto.values()) / mix.total
    if crypto >= CRYPTO_SHARE:
        names = "/".join(sorted(mix.crypto, key=lambda n: -mix.crypto[n])[:4])
        return Character(f"already uses the Arm crypto extensions ({names}: {crypto:.0%} "
                         f"of its executions): the hardware does the rounds, so only fewer "
                         f"calls or more data per call help")
    if mix.vector / mix.total >= SIMD_SHARE:
        return Character(f"already vectorised ({mix.vector / mix.total:.0%} of its "
                         f"executions are SIMD): stall cycles (STALL_BACKEND) say whether "
                         f"anything is left")
    if mix.scalar_fp / mix.total >= FP_SHARE:
        return Character(f"scalar floating-point code ({mix.scalar_fp / mix.total:.0%} of "
                         f"its executions, not vectorised): -fopt-info-vec-missed or "
                         f"-Rpass-missed=loop-vectorize says why the compiler did not "
                         f"vectorise it")
    branches, memory = mix.conditional / mix.total, mix.memory / mix.total
    width = mix.store_width
    if width is not None:
        stored = sum(mix.stores.values())
        wider = ("wider stores (`stp` of two registers, `stp q` of 32 bytes, or `dc zva` "
                 "for whole zeroed lines)" if width < 32 else "fewer or smaller fills")
        return Character(f"store loop: {stored / mix.total:.0%} of its executions are "
                         f"stores, mostly {width}-byte ones, with almost no loads (a fill "
                         f"or clear); {wider} or fewer calls help")
    mix_text = (f"scalar integer code ({branches:.0%} conditional branches, {memory:.0%} "
                f"loads/stores)")
    if branches >= BRANCHY:
        return Character(f"branchy {mix_text}{NO_RULE}",
                         "for branchy code, branch mispredicts (BR_MIS_PRED_RETIRED or SPE) "
                         "decide whether branchless code (csel) pays")
    if memory >= MEMORY_HEAVY:
        return Character(f"memory-heavy {mix_text}{NO_RULE}",
                         "for memory-heavy code, L1D/L2 refills (L1D_CACHE_REFILL or SPE "
                         "latency) decide whether layout or prefetch pays")
    return Character(f"{mix_text}{NO_RULE}",
                     "for other scalar code, stall cycles (STALL_BACKEND, STALL_FRONTEND) "
                     "say what bounds it")
