"""The loops of a profile (pcscope.core.natural_loops) on hand-written code: which rows each
loop owns, which loops nest, and the cycles inside a loop."""

from __future__ import annotations

import csv

from pcscope.core import natural_loops
from pcscope.core.patterns import code_facts
from pcscope.core.readers.profile_csv import read_profile


def loops_of(tmp_path, rows: list[tuple[int, str]], at: int = 0x1000):
    """The function loops of one function whose rows (count, asm) sit at consecutive
    addresses from ``at``: each loop's own rows as pcs."""
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for i, (count, asm) in enumerate(rows):
            out.writerow(["f", "f", hex(at + 4 * i), count, asm])
    profile = read_profile(path)
    loops = natural_loops.loops(profile, code_facts(profile), profile.function)
    return [[int(profile.pc[r]) for r in rows] for rows in loops]


def test_a_register_jump_is_no_way_into_the_next_row(tmp_path):
    """A tail call through ``braaz`` inside a loop leaves it: the row after it is reached
    only by the jump to it, so the tail call's block is no row of the loop."""
    loop = [(1000, "add x0, x0, #1"), (1000, "cmp x0, x1"), (1000, "b.ne #0x1014"),
            (10, "ldr x16, [x2]"), (10, "braaz x16"),
            (990, "add x3, x3, x0"), (990, "subs x4, x4, #1"), (990, "b.ne #0x1000"),
            (10, "ret")]
    assert loops_of(tmp_path, loop) == [[0x1000, 0x1004, 0x1008, 0x1014, 0x1018, 0x101c]]
