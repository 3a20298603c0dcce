"""A function likely written in assembly (pcscope.core.hand_written) gets its change as an
instruction edit: a frameless leaf that returns without clearing the registers it writes, in a
module whose other functions clear theirs before returning (-fzero-call-used-regs). Look-alikes
stay with the C advice: no such module, a function that clears before returning (the flag
reached it), a function with a frame."""

from __future__ import annotations

import csv

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.hand_written import CHECK
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanism_finder import find_mechanisms
from pcscope.core.patterns import code_facts, find_patterns
from pcscope.core.readers.profile_csv import read_profile

CLEANSE = ["cbz x1, 0x1020", "str xzr, [x0], #8", "sub x1, x1, #8",
           "tst x1, #0xfffffffffffffff8", "b.ne 0x1004", "ret"]


def compiled(at: int, zeroing: bool) -> list[str]:
    """A small compiled function: a frame, a call, and (with the flag) its registers cleared
    before the return."""
    tail = ["mov x2, #0", "mov x3, #0", "mov x4, #0"] if zeroing else []
    return ["stp x29, x30, [sp, #-16]!", "add x2, x0, x1", "mul x3, x2, x2", "eor x4, x3, x0",
            "bl 0x9000", "ldp x29, x30, [sp], #16", *tail, "ret"]


def store_loop(tmp_path, cleanse: list[str], zeroing: bool = True):
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm", "module"])
        for i, asm in enumerate(cleanse):  # the loop body runs 10 times per call
            n = 10000 if "[x0], #8" in asm or asm.startswith(("sub x1", "tst", "b.ne")) else 1000
            out.writerow(["cleanse", "cleanse", hex(0x1000 + 4 * i), n, asm, "libcrypto.so"])
        for k in range(4):
            at = 0x2000 + 0x100 * k
            for i, asm in enumerate(compiled(at, zeroing)):
                out.writerow([f"f{k}", f"f{k}", hex(at + 4 * i), 2000, asm, "libcrypto.so"])
    profile = read_profile(path)
    facts = code_facts(profile)
    (m,) = [m for m in find_mechanisms(profile, find_patterns(profile, facts), facts)
            if m.kind == "store-loop"]
    return m


def test_a_bare_leaf_among_flagged_functions_gets_the_instruction_edit(tmp_path):
    m = store_loop(tmp_path, CLEANSE)
    (said,) = [c for c in m.checks if c.startswith(CHECK)]
    assert "writes (x1)" in said and "4 other functions of libcrypto.so" in said
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "instruction edit" in rec and "`stp xzr, xzr, [xN], #16`" in rec
    assert "`str xzr, [xN], #8`" in rec and "a form the compiler cannot drop" not in rec


@pytest.mark.parametrize(("cleanse", "zeroing"), [
    (CLEANSE, False),  # no function of the module clears registers: nothing to compare
    ([*CLEANSE[:-1], "mov x1, #0", "ret"], True),  # the flag reached it
    (["stp x29, x30, [sp, #-16]!", *CLEANSE[1:-1], "ldp x29, x30, [sp], #16", "ret"], True),
])  # fmt: skip
def test_look_alikes_keep_the_c_advice(tmp_path, cleanse, zeroing):
    m = store_loop(tmp_path, cleanse, zeroing)
    assert not [c for c in m.checks if c.startswith(CHECK)]
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "instruction edit" not in rec and "explicit_bzero" in rec
