"""The instructions a dispatch sequence spends merging flags into its opcode (review: the
upside of "test the flags only where they change" is those instructions' share)."""

from __future__ import annotations

from pcscope.core.dispatch_merge import merged_into_index
from pcscope.core.mechanism_finder import _reads, _writes
from pcscope.core.shapes import Op


def seq(*asm: str) -> list[Op]:
    """A dispatch sequence in program order, returned br first as the finder walks it."""
    return [Op.of(0x1000 + 4 * i, a) for i, a in enumerate(asm)][::-1]


def merged(*asm: str) -> int:
    return len(merged_into_index(seq(*asm), _reads, _writes))


def test_flags_reloaded_and_orred_into_the_opcode_are_counted() -> None:
    # CPython 3.11's shape: a probe semaphore through a spilled pointer, a spilled tracing
    # byte, cmp/csetm/orr into the next opcode, a spilled table base
    assert merged("ldr x2, [sp, #0x68]", "ldrh w2, [x2]", "ldrh w0, [x23, #2]",
                  "ldrb w1, [sp, #0x100]", "cmp w2, #0", "csetm w2, ne",
                  "orr w2, w2, w1", "orr w2, w2, w0", "ldr x0, [sp, #0x70]",
                  "and x2, x2, #0xff", "ldr x3, [x0, x2, lsl #3]", "br x3") == 7


def test_a_lean_dispatch_merges_nothing() -> None:
    assert merged("ldrh w0, [x23], #2", "and x1, x0, #0xff",
                  "ldr x2, [x22, x1, lsl #3]", "br x2") == 0
    assert merged("ldrb w0, [x19, #1]!", "ldr x1, [x20, x0, lsl #3]", "br x1") == 0


def test_an_index_built_only_from_the_stack_is_not_told_apart() -> None:
    """Two stack values combined: no opcode fetch to keep, so nothing is claimed."""
    assert merged("ldr w0, [sp, #8]", "ldr w1, [sp, #12]", "add w2, w0, w1",
                  "ldr x3, [x4, x2, lsl #3]", "br x3") == 0


def test_the_opcode_is_the_fetch_nearest_the_merge_not_a_tested_flag() -> None:
    """A flag loaded straight from a fixed base (no pointer reload) and tested into a mask
    is also a load off a register the sequence does not compute; the opcode is the fetch
    that reaches the merge without a test: the flag's load, compare and mask are merged in."""
    assert merged("ldrh w4, [x23, #2]", "ldrh w2, [x20, #0xb34]", "add x0, x19, #0x20",
                  "cmp w2, #0", "csetm w2, ne", "ldrb w1, [sp, #0x100]",
                  "orr w2, w2, w1", "orr w2, w2, w4", "and x2, x2, #0xff",
                  "ldr x3, [x0, x2, lsl #3]", "br x3") == 6
    # the opcode read through a pointer loaded in the sequence: the pointer load is its
    # fetch, the flag still merged in
    assert merged("ldr x0, [x27, #0x38]", "ldrh w2, [x20, #0xb34]", "ldrb w3, [sp, #0x100]",
                  "cmp w2, #0", "ldrh w11, [x0, #2]", "csetm w2, ne", "orr w2, w2, w3",
                  "orr w2, w2, w11", "and x2, x2, #0xff", "ldr x3, [x1, x2, lsl #3]",
                  "br x3") == 6
    # the opcode read after the bytecode pointer's step in the same block: still the opcode
    assert merged("ldrh w2, [x20, #0xb34]", "ldrb w1, [sp, #0x100]", "add x23, x23, #4",
                  "cmp w2, #0", "ldrh w11, [x23]", "csetm w2, ne", "orr w2, w2, w1",
                  "orr w2, w2, w11", "and x2, x2, #0xff", "ldr x3, [x0, x2, lsl #3]",
                  "br x3") == 6
