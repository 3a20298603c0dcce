"""The vectorised loop conditions never drop a loop the exact shape checks keep, and do
drop look-alikes; the register masks they read name every register isa reads."""

import numpy as np
import pytest

from pcscope.core import isa, shapes
from pcscope.core.asmtext import OTHER_REGISTER, register_code, register_masks
from pcscope.core.columns import StringColumn
from pcscope.core.loop_filters import may_chase, may_step_bytes
from pcscope.core.patterns import (
    BYTE_LOOP_MAX,
    LOOP_MAX,
    backward_branches,
    code_facts,
    enclosing_loops,
)
from pcscope.core.readers.profile_csv import read_profile
from tests.conftest import real_program, real_programs
from tests.test_patterns import DEPENDENT, write_profile


def _bits(registers) -> int:
    mask = 0
    for reg in registers:
        code = register_code(reg)
        mask |= 1 << (code if code >= 0 else OTHER_REGISTER)
    return mask


def _masks_cover_isa(texts: list[str]) -> None:
    masks = register_masks(StringColumn.from_strings(texts), np.arange(len(texts)))
    for i, text in enumerate(texts):
        reading = isa.read(text)
        mem = [r for r in (reading.mem.base, reading.mem.index) if r] if reading.mem else []
        written = () if isa.is_call(reading.mnemonic) else reading.dest  # x30: not named
        read = () if reading.mnemonic in isa.RETURNS else reading.src
        assert _bits([*written, *read, *mem]) & ~int(masks.named[i]) == 0, text
        assert _bits(mem) & ~int(masks.addressed[i]) == 0, text
        if isa.overwrites_first(reading.mnemonic):
            assert _bits(read) & ~int(masks.after_comma[i]) == 0, text


def test_register_masks_name_what_isa_reads():
    texts = ["ldr x0, [x1, x2, lsl #3]", "LDR W5,[X6]", "ld1d {z0.d}, p0/z, [x0, z1.d, lsl #3]",
             "whilelo pn8.b, x0, x1", "add x05, x05, #1", "stp x29, x30, [sp, #-16]!",
             "ldr q0, [x3], #16", "mov x0, x1 // x2", "ld1 {v0.s}[1], [x4]", "ret", "",
             "bl 0x1000 <f>", "ldaddal w1, w2, [x3]", "fmov d0, x9", "stxr w1, x2, [x3]",
             "movk x0, #1, lsl #16", "and x11, x8, x11", "ld2 {v0.4s, v1.4s}, [x0]"]
    _masks_cover_isa(texts)
    masks = register_masks(StringColumn.from_strings(texts), np.arange(2))
    assert masks.named.tolist() == [0b111, (1 << 5) | (1 << 6)]  # a word never runs on
    assert masks.addressed.tolist() == [0b110, 1 << 6]           # into the next row
    assert masks.after_comma.tolist() == [0b110, 1 << 6]


@pytest.mark.parametrize("name", real_programs()[:2])
def test_register_masks_on_real_rows(name):
    profile = read_profile(real_program(name).profile)
    _masks_cover_isa(profile.asm_column.to_list())


def _exact_and_filtered(profile):
    """For every load in a short loop: (loop_carried_load, may_chase)."""
    f = code_facts(profile)
    loads = np.flatnonzero(f.load & (f.base >= 0) & (f.base < 29) & ~f.writeback)
    branch, head, in_loop = enclosing_loops(profile, f, loads, profile.window)
    short = np.flatnonzero(in_loop & (branch - head < LOOP_MAX))
    loads, head, branch = loads[short], head[short], branch[short]
    kept = may_chase(profile.asm_column, profile.pc, f, loads, head, branch)
    exact = [shapes.loop_carried_load(f.code.ops(h, b), k - h)
             for k, h, b in zip(loads.tolist(), head.tolist(), branch.tolist(), strict=True)]
    return profile.pc[loads], np.array(exact, dtype=bool), kept


def test_chase_filter_keeps_every_chase_and_drops_look_alikes(tmp_path):
    rows = [*DEPENDENT,
            # a chase through a vector register and back (fmov): the filter folds them
            ("v", 0xB000, 10, "ldr x1, [x2]"),
            ("v", 0xB004, 10, "fmov d0, x1"),
            ("v", 0xB008, 10, "fmov x2, d0"),
            ("v", 0xB00C, 10, "cbnz x1, 0xb000")]
    pcs, exact, kept = _exact_and_filtered(write_profile(tmp_path, rows))
    assert exact.any() and not (exact & ~kept).any()
    assert 0xB000 in pcs[exact]
    assert 0x8000 in pcs[~kept]  # its index is a counter: no load feeds the address


@pytest.mark.parametrize("name", real_programs())
def test_chase_filter_keeps_every_real_chase(name):
    pcs, exact, kept = _exact_and_filtered(read_profile(real_program(name).profile))
    assert not (exact & ~kept).any(), [hex(p) for p in pcs[exact & ~kept]]
    assert kept.sum() < len(kept)  # it does filter


def _byte_steps(profile):
    """For every short loop: (its head's pc, byte_step found one, may_step_bytes)."""
    f = code_facts(profile)
    branch, head = backward_branches(profile, f, profile.window)
    short = branch - head < BYTE_LOOP_MAX
    branch, head = branch[short], head[short]
    kept = may_step_bytes(profile.asm_column, profile.pc, f, head, branch)
    exact = [shapes.byte_step(f.code.ops(h, b)) is not None
             for h, b in zip(head.tolist(), branch.tolist(), strict=True)]
    return profile.pc[head], np.array(exact, dtype=bool), kept


def test_byte_filter_keeps_every_byte_loop_and_drops_look_alikes(tmp_path):
    rows = [("a", 0x1000, 10, "mov w2, w0"), ("a", 0x1004, 10, "ldrb w0, [x1, #1]!"),
            ("a", 0x1008, 10, "strb w2, [x1]"), ("a", 0x100C, 10, "cmp w3, w0"),
            ("a", 0x1010, 10, "b.ne 0x1000"),  # a byte loop stepping by writeback
            ("b", 0x2000, 10, "ldrb w2, [x0, x1]"), ("b", 0x2004, 10, "add x1, x1, #1"),
            ("b", 0x2008, 10, "cbnz w2, 0x2000"),  # stepping its index
            ("c", 0x3000, 10, "ldrb w2, [x0]"), ("c", 0x3004, 10, "cmp w2, #7"),
            ("c", 0x3008, 10, "b.ne 0x3000"),  # a poll: nothing steps
            ("d", 0x4000, 10, "ldrb w2, [x0], #1"), ("d", 0x4004, 10, "bl 0x9000"),
            ("d", 0x4008, 10, "cbnz w2, 0x4000"),  # calls per byte
            ("e", 0x5000, 10, "ldrb w2, [x0], #1"), ("e", 0x5004, 10, "ret"),
            ("e", 0x5008, 10, "cbnz w2, 0x5000")]  # returns: no loop body
    pcs, exact, kept = _byte_steps(write_profile(tmp_path, rows))
    assert pcs[exact].tolist() == [0x1000, 0x2000]
    assert pcs[kept].tolist() == [0x1000, 0x2000]


@pytest.mark.parametrize("name", real_programs())
def test_byte_filter_keeps_every_real_byte_loop(name):
    pcs, exact, kept = _byte_steps(read_profile(real_program(name).profile))
    assert not (exact & ~kept).any(), [hex(p) for p in pcs[exact & ~kept]]
    assert kept.sum() < len(kept)
