"""The loops of a profile (pcscope.core.natural_loops) on hand-written code: which rows each
loop owns, which loops nest, and the cycles inside a loop."""

from __future__ import annotations

import csv

from pcscope.core import natural_loops
from pcscope.core.patterns import code_facts
from pcscope.core.readers.profile_csv import read_profile


def loops_of(tmp_path, rows: list[tuple[int, str]], at: int = 0x1000):
    """The function loops of one function whose rows (count, asm) sit at consecutive
    addresses from ``at``: each loop's head and own rows as pcs."""
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for i, (count, asm) in enumerate(rows):
            out.writerow(["f", "f", hex(at + 4 * i), count, asm])
    profile = read_profile(path)
    loops = natural_loops.loops(profile, code_facts(profile), profile.function)
    return [(int(profile.pc[loop.head]), [int(profile.pc[r]) for r in loop.rows])
            for loop in loops]


def test_a_register_jump_is_no_way_into_the_next_row(tmp_path):
    """A tail call through ``braaz`` inside a loop leaves it: the row after it is reached
    only by the jump to it, so the tail call's block is no row of the loop."""
    loop = [(1000, "add x0, x0, #1"), (1000, "cmp x0, x1"), (1000, "b.ne #0x1014"),
            (10, "ldr x16, [x2]"), (10, "braaz x16"),
            (990, "add x3, x3, x0"), (990, "subs x4, x4, #1"), (990, "b.ne #0x1000"),
            (10, "ret")]
    assert loops_of(tmp_path, loop) == [(0x1000, [0x1000, 0x1004, 0x1008, 0x1014, 0x1018,
                                                  0x101c])]


def two_heads(into_large: int = 400) -> list[tuple[int, str]]:
    """A loop over lengths that prices a distance two ways, laid out as xz's encoder does:
    the entry picks the small-distance path (0x100c, falling into the per-length body at
    0x1010) or the large one (0x103c, jumping back to 0x1010); the body's test jumps back to
    the small path or falls into the large one. 1000 entries, ``into_large`` of them
    straight into the large path, 20000 lengths."""
    small = 3000 - into_large
    return [(1000, "mov w3, #0"), (1000, "cmp w11, #0x7f"), (1000, "b.hi #0x103c"),
            (small, "ldr w5, [x0, w11, uxtw #2]"),
            (20000, "add w9, w3, w21"), (20000, "ldr w1, [x2, w9, uxtw #2]"),
            (20000, "cmp w5, w1"), (20000, "b.hs #0x1024"), (5000, "str w5, [x2, w9, uxtw #2]"),
            (20000, "add w3, w3, #1"), (20000, "cmp w3, w4"), (20000, "b.eq #0x1048"),
            (19000, "ldr w11, [x6, w3, uxtw #2]"), (19000, "cmp w11, #0x7f"),
            (19000, "b.ls #0x100c"),
            (17000, "lsr w1, w11, #6"), (17000, "ldr w5, [x7, w1, uxtw #2]"),
            (17000, "b #0x1010"), (1000, "ret")]


def test_two_heads_of_one_cycle_entered_apart_are_one_loop(tmp_path):
    """The small-distance path's head (0x100c) is entered from outside and so is the large
    path, bypassing it: neither head comes first on every way in, so the per-length body is
    no loop nested in the small path's but the same loop, counted by its busiest head."""
    assert loops_of(tmp_path, two_heads()) == [(0x1010, [0x100c + 4 * i for i in range(15)])]


def test_a_loop_entered_only_through_another_is_nested_in_it(tmp_path):
    """The same code entered only at the small path (the entry's jump never goes to the large
    one: no row outside jumps into the body but through 0x100c): the body, run 6.7 times as
    often, is a loop nested in it."""
    rows = two_heads()
    rows[2] = (1000, "b.hi #0x1048")  # the entry's other side leaves instead
    loops = loops_of(tmp_path, rows)
    assert (0x1010, [0x1010 + 4 * i for i in range(14)]) in loops
    assert (0x100c, [0x100c]) in loops


def test_a_jump_back_to_an_exit_block_is_no_loop(tmp_path):
    """A loop's exit block laid out before it (reached by a branch to a lower address, then
    returning) is no loop around it, and nests nothing."""
    rows = [(100, "mov x0, #0"), (100, "b #0x1010"), (100, "add x0, x0, x5"), (100, "ret"),
            (10000, "ldr x5, [x1], #8"), (10000, "cmp x5, x2"), (10000, "b.eq #0x1008"),
            (9900, "add x3, x3, x5"), (9900, "subs x4, x4, #1"), (9900, "b.ne #0x1010")]
    assert loops_of(tmp_path, rows) == [(0x1010, [0x1010 + 4 * i for i in range(6)])]


def test_a_block_of_an_inner_loop_laid_out_far_away_keeps_it_nested(tmp_path):
    """An inner loop's rare path placed past the end of the function's code (beyond the
    rows a loop is read over) jumps back into it: that is no way into the inner loop from
    outside the outer one (only the inner loop reaches it), so the inner loop stays nested."""
    far = 0x102c + 4 * 519  # after the return and 519 rows of other code
    rows = [(100, "mov w1, #0"), (100, "nop"),
            (10000, "ldr w2, [x0], #4"), (10000, "cmp w2, #0"), (10000, f"b.lt #{far:#x}"),
            (10000, "add w3, w3, w2"), (10000, "subs w4, w4, #1"), (10000, "b.ne #0x1008"),
            (100, "subs w5, w5, #1"), (100, "b.ne #0x1000"), (1, "ret"),
            *[(0, "nop")] * 519, (50, "neg w2, w2"), (50, "b #0x1014")]
    assert loops_of(tmp_path, rows) == [(0x1000, [0x1000, 0x1004, 0x1020, 0x1024]),
                                        (0x1008, [0x1008 + 4 * i for i in range(6)])]
