"""Code-shape checks on hand-written assembly: each claim's shape, and its look-alikes."""

from __future__ import annotations

import pytest

from pcscope.core import isa, shapes


def body(*lines: str, at: int = 0x1000) -> list[shapes.Op]:
    return shapes.ops_of([(at + 4 * i, text) for i, text in enumerate(lines)])


# -- spin-wait -----------------------------------------------------------------------------
@pytest.mark.parametrize("lines", [
    ("ldr w1, [x0]", "cbnz w1, 0x1000"),
    ("yield", "ldaxr w1, [x0]", "cmp w1, #0", "b.ne 0x1000"),
    ("wfe", "ldar w2, [x3]", "tbnz w2, #0, 0x1000"),
    ("ldr w1, [x0]", "cbz w1, 0x1010", "isb", "b 0x1000"),  # b back, conditional exit
])  # fmt: skip
def test_polls(lines):
    assert shapes.polls(body(*lines))


@pytest.mark.parametrize(("lines", "why"), [
    (("ldrb w1, [x0], #1", "tbnz w1, #7, 0x1000"), "varint skip: the pointer advances"),
    (("ldr w1, [x0, #4]", "add x0, x0, #8", "cbnz w1, 0x1000"), "scan: the base steps"),
    (("ldr x0, [x0]", "cbnz x0, 0x1000"), "list walk: the address is the loaded value"),
    (("ldr w2, [x1]", "str w2, [x4]", "cbnz w2, 0x1000"), "stores"),
    (("ldr w2, [x1]", "subs x3, x3, #1", "b.ne 0x1000"), "exit tests a counter, not the load"),
    (("ldaxr w1, [x0]", "add w1, w1, #1", "stlxr w2, w1, [x0]", "cbnz w2, 0x1000"),
     "LL/SC retry"),
    (("ldr w1, [x0]", "b 0x2000", "cbnz w1, 0x1000"), "leaves the body: no loop"),
    (("ret", "ldr x3, [x1, #0x80]", "cbnz x3, 0x1000"), "branch back onto a return"),
])  # fmt: skip
def test_poll_look_alikes(lines, why):
    assert not shapes.polls(body(*lines)), why


# -- dependent loads -----------------------------------------------------------------------
@pytest.mark.parametrize(("lines", "k"), [
    (("ldr x0, [x0, #8]", "cbnz x0, 0x1000"), 0),  # list walk
    (("ldr x9, [x0, #0x18]", "cmp x9, x2", "b.eq 0x2000", "ldr x0, [x0, #8]",
      "cbnz x0, 0x1000"), 0),  # the node's key off the chased pointer
    (("and w3, w1, w5", "ldrh w1, [x11, x3, lsl #1]", "cmp w1, w6", "b.hi 0x1000"), 1),
    (("ldr w3, [x5, x8, lsl #2]", "add w4, w3, w9", "lsl w8, w4, #1", "cbnz w4, 0x1000"), 0),
])  # fmt: skip
def test_loop_carried_loads(lines, k):
    assert shapes.loop_carried_load(body(*lines), k)


@pytest.mark.parametrize(("lines", "k", "why"), [
    (("adrp x8, 0x20000", "ldr x8, [x8, #0x40]", "ldr x9, [x8]", "cbnz x9, 0x1000"), 2,
     "GOT / global pointer: adrp base every iteration"),
    (("adrp x1, 0x20000", "ldr x1, [x1, #0xfd8]", "ldr x2, [x1]", "str x2, [sp, #0x28]",
      "subs x3, x3, #1", "b.ne 0x1000"), 2, "stack-protector canary load"),
    (("ldrh w2, [x20], #2", "ldr x3, [x21, x2, lsl #3]", "blr x3", "cbnz x0, 0x1000"), 1,
     "jump-table load feeding a branch"),
    (("ldr x2, [x1], #8", "ldr x3, [x2]", "subs x4, x4, #1", "b.ne 0x1000"), 1,
     "loads through a post-indexed stream"),
    (("ldr x10, [sp, #8]", "ldr x10, [x10]", "cbnz x10, 0x1000"), 1, "off the stack"),
    (("ldr x10, [x29, #-8]", "cbnz x10, 0x1000"), 0, "off the frame pointer"),
    (("ldr w2, [x0, x1, lsl #2]", "add x1, x1, #1", "cmp x1, x3", "b.lo 0x1000"), 0,
     "counted index"),
    (("ldr q0, [x1]", "sub v0.8h, v0.8h, v6.8h", "str q0, [x1], #16", "cbnz x2, 0x1000"),
     0, "a writeback store steps the base, the stored value does not feed it"),
])  # fmt: skip
def test_dependent_load_look_alikes(lines, k, why):
    assert not shapes.loop_carried_load(body(*lines), k), why


# -- byte loops ----------------------------------------------------------------------------
def test_byte_loop():
    # move-to-front search: byte load with a pre-indexed pointer, compared, branch back
    assert shapes.byte_step(body("mov w2, w0", "ldrb w0, [x1, #1]!", "strb w2, [x1]",
                                 "cmp w3, w0", "b.ne 0x1000")) == 1
    assert shapes.byte_step(body("ldrb w2, [x0, x1]", "add x1, x1, #1", "cbnz w2, 0x1000")) == 0


@pytest.mark.parametrize(("lines", "why"), [
    (("ldrb w2, [x0, #3]", "cmp w2, #7", "b.ne 0x2000"), "one compare, no loop back"),
    (("ldrb w2, [x0]", "cmp w2, #7", "b.ne 0x1000"), "no stepping pointer (a poll)"),
    (("ldrb w2, [x0], #1", "add w5, w5, w2", "subs x3, x3, #1", "b.ne 0x1000"),
     "the byte is summed, the exit is a counter"),
    (("ldr q1, [x0], #16", "ldrb w2, [x0]", "cmp w2, #0", "b.ne 0x1000"),
     "already vector code"),
    (("ldrb w2, [x0], #1", "bl 0x9000", "cbnz w2, 0x1000"), "calls per byte"),
])  # fmt: skip
def test_byte_loop_look_alikes(lines, why):
    assert shapes.byte_step(body(*lines)) is None, why


# -- indirect branches ---------------------------------------------------------------------
def classified(branch, producer, table_sites: int) -> int:
    """indirect_class as the pattern pass reads it: from the branch and its target's producer."""
    return shapes.indirect_class(isa.is_call(branch.mnemonic), shapes.is_table_jump(producer),
                                 table_sites)


def test_indirect_classes():
    table = body("ldrh w2, [x20], #2", "and x2, x2, #0xff", "ldr x3, [x0, x2, lsl #3]",
                 "br x3")
    producer = shapes.target_producer(table, 3)
    assert shapes.is_table_jump(producer)
    assert classified(table[3], producer, 162) == shapes.DISPATCH
    assert classified(table[3], producer, 1) == shapes.SWITCH
    call = body("ldr x2, [x0, #0x30]", "blr x2")
    assert classified(call[1], shapes.target_producer(call, 1), 0) == shapes.CALL
    tail = body("ldr x1, [x19, #8]", "ldp x29, x30, [sp], #16", "br x1")
    producer = shapes.target_producer(tail, 2)
    assert producer is not None and producer.pc == 0x1000
    assert classified(tail[2], producer, 0) == shapes.TAIL
    # a switch: byte table entry added to a base address
    switch = body("ldrb w1, [x2, w0, uxtw]", "adr x3, 0x1100", "add x1, x3, w1, sxtb #2",
                  "br x1")
    assert shapes.is_table_jump(shapes.target_producer(switch, 3))


# -- outline atomics -----------------------------------------------------------------------
def test_outline_atomic_helper():
    lse = body("bti c", "adrp x16, 0x99000", "ldrb w16, [x16, #0x7a8]", "cbz w16, 0x1018",
               "casa w0, w1, [x2]", "ret", "mov w16, w0", "ldaxr w0, [x2]", "cmp w0, w16",
               "b.ne 0x102c", "stxr w17, w1, [x2]", "cbnz w17, 0x101c", "ret")
    assert shapes.outline_atomic_helper(lse)
    inline = body("ldaxr w0, [x2]", "add w0, w0, #1", "stlxr w3, w0, [x2]", "cbnz w3, 0x1000")
    assert not shapes.outline_atomic_helper(inline)
    flag_only = body("adrp x16, 0x99000", "ldrb w16, [x16, #0x7a8]", "cbz w16, 0x1010",
                     "add x0, x0, #1", "ret")
    assert not shapes.outline_atomic_helper(flag_only)


# -- the setter of a register before a read ------------------------------------------------
def setter_of(reg: str, *lines: str) -> int | None:
    """The setter of ``reg`` for a read right after ``lines``, looking back through all."""
    ops = body(*lines)
    return shapes.setter(ops.__getitem__, range(len(ops) - 1, -1, -1), reg, 0x1000 + 4 * len(ops),
                         lambda r: shapes.sets(ops[r]))


def test_the_setter_is_the_last_write_and_a_w_write_sets_the_x_register():
    assert setter_of("x12", "mov w12, #0xffff", "add x3, x3, #1", "ldr w12, [x0, #0x58]",
                     "add x4, x4, #1") == 2
    assert setter_of("x12", "mov w12, #0xffff", "add x3, x3, #1") == 0
    assert setter_of("x12", "add x3, x3, #1") is None


def test_a_conditional_branch_falls_through_to_the_read():
    assert setter_of("x7", "mov w7, #0x1000", "cbz x0, 0x2000", "b.ne 0x2000") == 0


@pytest.mark.parametrize("end", ["b 0x2000", "b 0x1000", "ret", "br x16"])
def test_code_before_an_unconditional_branch_does_not_set_the_register(end):
    assert setter_of("x7", "mov w7, #0x1000", end, "add x3, x3, #1") is None


def test_a_jump_forward_to_the_read_still_reaches_it():
    """A rotated loop's entry: ``b`` to its test, past the rows it skips."""
    assert setter_of("x7", "mov w7, #0x1000", "b 0x100c", "add x3, x3, #1") == 0


def test_a_call_sets_the_registers_it_may_clobber_not_the_callee_saved_ones():
    lines = ("mov w7, #0x1000", "mov w19, #0x10", "bl 0x4000", "add x3, x3, #1")
    assert setter_of("x7", *lines) == 2  # x0-x18: AAPCS64 lets the callee change them
    assert setter_of("x19", *lines) == 1


@pytest.mark.parametrize(("asm", "value"), [
    ("mov w7, #0x1000", 0x1000), ("movz w7, #4096", 4096),
    ("movz w7, #0x1, lsl #16", 0x10000), ("movz x7, #0x2, lsl #32", 0x2 << 32),
    ("movn w7, #0x2f", 0xffffffd0), ("movn x7, #0", (1 << 64) - 1),
    ("mov w7, #-1", 0xffffffff), ("orr w7, wzr, #0xff", 0xff),
    ("mov w7, w3", None), ("movk w7, #0x1, lsl #16", None), ("ldr w7, [x0]", None),
    ("orr w7, w3, #0xff", None), ("add w7, wzr, #3", None),
])  # fmt: skip
def test_the_constant_a_move_writes(asm, value):
    assert shapes.constant(asm) == value


def test_a_constant_read_as_signed_in_its_register_width():
    assert shapes.constant("movn w7, #0x2f", signed=True) == -0x30
    assert shapes.constant("mov x7, #-1", signed=True) == -1
    assert shapes.constant("movz w7, #0x8000, lsl #16", signed=True) == -(1 << 31)
    assert shapes.constant("movz w7, #5", signed=True) == 5


def test_the_rows_falling_through_to_a_read_end_at_an_unconditional_branch():
    ops = body("mov w7, #1", "b 0x2000", "cbz x0, 0x2000", "bl 0x4000", "add x3, x3, #1")
    assert list(shapes.falls_through(ops.__getitem__, range(4, -1, -1), 0x1014)) == [4, 3, 2]
