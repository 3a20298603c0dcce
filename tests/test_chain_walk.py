"""The concrete levers of a loop-carried load chain (pcscope.core.chain_walk), on a hand-written
hash-chain match search with exact per-instruction counts, and on look-alikes where each lever
must stay quiet: a compare against a value the walk changes every step is no first reject, a
byte two apart is no halfword, a value whose input changes every step is not recomputed, exits
that add a register are no extension, 32-bit links bound nothing."""

from __future__ import annotations

import csv
from dataclasses import replace

import msgspec
import pytest

from pcscope.core import chain_walk, invariant_work
from pcscope.core.backends.advice import advise
from pcscope.core.chase_values import Beside, ChaseValues, PairedLinks, SecondReach, WrapBound
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanism_finder import find_mechanisms
from pcscope.core.patterns import Code, code_facts, find_patterns
from pcscope.core.readers.profile_csv import read_profile


def search(*, fixed: str = "w10", second: str = "#-1", rare: str = "w7",
           link: str = "ldrh w1, [x11, x1, lsl #1]", exit_add: str = "#") -> list:
    """(count, asm) from 0x1000: a walk of 810 candidate steps; 610 end at the first byte
    compare, 100 more at the second; 100 extend their match in 4 unrolled compares whose exits
    add the step's length and join at 0x108c."""
    def add(k: int) -> str:
        return f"add x2, x2, {exit_add}{k}" if exit_add == "#" else f"add x2, x2, {exit_add}"
    return [
        (10, "ldr x11, [x0, #0x70]"), (10, "ldr w12, [x0, #0x58]"),
        (10, "ldrb w10, [x13, #8]"), (10, "ldrb w15, [x13, #7]"), (10, "b 0x1024"),
        (800, "and w1, w1, w12"), (800, link),  # 0x1014: the walk's head, the chained load
        (800, "subs w6, w6, #1"), (800, "b.eq 0x10c0"),  # the step budget
        (810, f"sxtw x3, {rare}"), (810, "add x2, x8, x1"),  # 0x1024
        (810, "ldrb w5, [x2, w7, sxtw]"), (810, f"cmp w5, {fixed}"), (810, "b.ne 0x1014"),
        (200, "add x3, x2, x3"), (200, f"ldurb w3, [x3, {second}]"), (200, "cmp w3, w15"),
        (200, "b.ne 0x1014"),
        (100, "ldrb w5, [x2, #1]"), (100, "ldrb w4, [x13, #1]"), (100, "cmp w5, w4"),
        (100, "b.ne 0x10a0"),
        (80, "ldrb w5, [x2, #2]"), (80, "ldrb w4, [x13, #2]"), (80, "cmp w5, w4"),
        (80, "b.ne 0x10a8"),
        (60, "ldrb w5, [x2, #3]"), (60, "ldrb w4, [x13, #3]"), (60, "cmp w5, w4"),
        (60, "b.ne 0x10b0"),
        (40, "ldrb w5, [x2, #4]"), (40, "ldrb w4, [x13, #4]"), (40, "cmp w5, w4"),
        (40, "b.ne 0x10b8"),
        (30, "add x2, x2, #4"),
        (100, "sub w3, w2, w8"), (100, "cmp w3, w7"), (100, "b.le 0x1014"),  # 0x108c: join
        (10, "mov w7, w3"), (10, "b 0x1014"),  # a better match: rare
        (20, add(1)), (20, "b 0x108c"), (20, add(2)), (20, "b 0x108c"),
        (20, add(3)), (20, "b 0x108c"), (10, add(4)), (10, "b 0x108c"),
        (10, "mov w0, w7"), (10, "ret"),
    ]


def chase(tmp_path, lines):
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for i, (n, asm) in enumerate(lines):
            out.writerow(["longest", "longest", hex(0x1000 + 4 * i), n, asm])
    profile = read_profile(path)
    facts = code_facts(profile)
    (m,) = [m for m in find_mechanisms(profile, find_patterns(profile, facts), facts)
            if m.kind == "pointer-chase"]
    return m


def figures(m) -> dict:
    return {x.name: x.value for x in m.metrics}


def chased(m) -> ChaseValues:
    return m.value(ChaseValues) or ChaseValues()


def said(m, prefix: str) -> str | None:
    return next((c.removeprefix(prefix) for c in m.checks if c.startswith(prefix)), None)


def test_match_search_levers_fire(tmp_path):
    m = chase(tmp_path, search())
    got = figures(m)
    assert got["rejected at the first compare"] == round(100 * 610 / 810, 1)
    assert said(m, chain_walk.REJECT) == "`cmp w5, w10` at 0x1030"
    assert said(m, chain_walk.PAIRED) == "`cmp w3, w15` at 0x1040"
    # the most run recomputation first, then the loads of the fixed string (scan[1..4])
    assert said(m, invariant_work.CHECK).startswith(
        "`sxtw x3, w7` at 0x1024, `ldrb w4, [x13, #1]` at 0x104c")
    assert got["extension steps"] == 4
    assert got["extension bytes per entry"] == (100 + 80 + 60 + 40) / 100
    assert got["link bits"] == 16 and got["table bound"] == 65536 * 2
    # the exit blocks are the walk's own work: counted in its site
    assert {0x10a0, 0x10a4, 0x10b8, 0x10bc} <= set(m.sites[0].pcs)
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "75.3% of the steps end at the first compare" in rec
    assert "one `ldrh`" in rec and "24.7%" in rec
    assert "`sxtw x3, w7` at 0x1024 (and more, in the checks) is recomputed" in rec
    assert "compare 8 bytes per step" in rec and "about 3" in rec
    # the link is masked by w12, loaded before the walk: the width is only a bound
    assert said(m, chain_walk.MASKED) == ("`and w1, w1, w12` at 0x1014, set before the walk "
                                          "by `ldr w12, [x0, #0x58]` at 0x1004, value not in "
                                          "the code")
    assert "table size" not in got
    assert "mask + 1 entries, at most 65,536 entries of 2 byte(s) (128 KiB, the link width's " \
        "bound), within every Neoverse L2" in rec and "not DRAM misses" in rec
    assert "jump pointers) has little latency to hide" in rec


def test_look_alikes_stay_quiet(tmp_path):
    """Each variant removes one lever and leaves the others."""
    moving = chase(tmp_path, search(fixed="w6", rare="w6"))  # the budget: every step
    assert "rejected at the first compare" not in figures(moving)
    assert said(moving, chain_walk.REJECT) is None and said(moving, chain_walk.PAIRED) is None
    assert "sxtw" not in said(moving, invariant_work.CHECK)  # its input changes every step
    apart = chase(tmp_path, search(second="#-2"))  # not the adjacent byte
    assert said(apart, chain_walk.REJECT) and said(apart, chain_walk.PAIRED) is None
    assert "`ldrh`" not in advise(builtins_of(apart), "executions", None).recommendation
    wide = chase(tmp_path, search(link="ldr w1, [x11, x1, lsl #2]", exit_add="x9"))
    assert "link bits" not in figures(wide) and "extension steps" not in figures(wide)
    rec = advise(builtins_of(wide), "executions", None).recommendation
    # masked by a register loaded before the walk: nothing in the code bounds the mask
    assert "mask + 1 entries, a number nothing in the code bounds: if it is many MiB" in rec
    assert "8 bytes per step" not in rec and "little latency to hide" not in rec


def test_an_immediate_mask_bounds_a_wide_link(tmp_path):
    """`and w1, w1, #0x7fff` on the index bounds a 32-bit link to 15 bits."""
    m = chase(tmp_path, search(link="ldr w1, [x11, x1, lsl #2]")
              [:5] + [(800, "and w1, w1, #0x7fff")] + search(link="ldr w1, [x11, x1, lsl #2]")[6:])
    assert figures(m)["link bits"] == 15 and figures(m)["table bound"] == 32768 * 4


def test_a_mask_set_from_a_constant_gives_the_table_size(tmp_path):
    """`mov w12, #0x7fff` before the walk: 32,768 entries of 2 bytes, not the 16-bit
    link's 65,536."""
    lines = search()
    lines[1] = (10, "mov w12, #0x7fff")
    m = chase(tmp_path, lines)
    assert figures(m)["table size"] == 32768 * 2 and figures(m)["table bound"] == 65536 * 2
    assert said(m, chain_walk.MASKED).endswith("by `mov w12, #0x7fff` at 0x1004")
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "mask + 1 entries, 64 KiB, within L1D" in rec and "mask + 1 entries, at most" not in rec


def test_a_mask_the_walk_changes_or_an_immediate_is_no_register_mask(tmp_path):
    """A register the walk writes is not a fixed mask; an immediate one is the link's width."""
    moving = search()
    moving[7] = (800, "add w12, w12, #1")  # in place of the step budget's `subs`
    for lines in (moving, search()[:5] + [(800, "and w1, w1, #0x7fff")] + search()[6:]):
        m = chase(tmp_path, lines)
        assert said(m, chain_walk.MASKED) is None and "table size" not in figures(m)
        assert "masked" not in advise(builtins_of(m), "executions", None).recommendation




def looped_extension() -> list:
    """(count, asm) from 0x1000: the walk of ``search`` whose 100 candidates are extended by
    a loop of unrolled steps (zlib's shape): four compares each leave on a mismatch, the
    fifth (post-indexed loads) feeds a `ccmp` with the end test and the loop's back branch,
    which 20 of the 40 that reach it take."""
    def step(k: int, n: int, exit_to: int) -> list:
        return [(n, f"ldrb w5, [x3, #{k}]"), (n, f"ldrb w4, [x2, #{k}]"), (n, "cmp w5, w4"),
                (n, f"b.ne {exit_to:#x}")]
    return [
        (10, "ldr x11, [x0, #0x70]"), (10, "ldr w12, [x0, #0x58]"),
        (10, "ldrb w10, [x13, #8]"), (10, "ldrb w15, [x13, #7]"), (10, "b 0x1024"),
        (800, "and w1, w1, w12"), (800, "ldrh w1, [x11, x1, lsl #1]"),  # 0x1014: the head
        (800, "subs w6, w6, #1"), (800, "b.eq 0x10d4"),
        (810, "sxtw x3, w7"), (810, "add x2, x8, x1"),  # 0x1024
        (810, "ldrb w5, [x2, w7, sxtw]"), (810, "cmp w5, w10"), (810, "b.ne 0x1014"),
        (200, "add x3, x2, x3"), (200, "ldurb w3, [x3, #-1]"), (200, "cmp w3, w15"),
        (200, "b.ne 0x1014"),
        (100, "mov x3, x13"),  # 0x1048: falls into the loop
        *step(1, 120, 0x10b4), *step(2, 90, 0x10bc), *step(3, 70, 0x10c4),  # 0x104c: loop
        *step(4, 55, 0x10cc),
        (40, "ldrb w5, [x3, #5]!"), (40, "ldrb w4, [x2, #5]!"), (40, "cmp w5, w4"),
        (40, "ccmp x14, x3, #0, eq"), (40, "b.hi 0x104c"),  # 0x108c: 20 go round again
        (100, "sub w3, w2, w8"), (100, "cmp w3, w7"), (100, "b.le 0x1014"),  # 0x10a0: join
        (10, "mov w7, w3"), (10, "b 0x1014"),  # a better match: rare
        (30, "add x2, x2, #1"), (30, "b 0x10a0"), (20, "add x2, x2, #2"), (20, "b 0x10a0"),
        (15, "add x2, x2, #3"), (15, "b 0x10a0"), (15, "add x2, x2, #4"), (15, "b 0x10a0"),
        (10, "mov w0, w7"), (10, "ret"),
    ]


def test_an_extension_counts_the_compare_folded_into_its_loop_test(tmp_path):
    """The fifth step's `cmp` feeds a `ccmp`, not a branch of its own: it is a byte compare
    of the extension all the same (pigz counted 7 of its 8 and said 4.21 bytes, not 4.50)."""
    m = chase(tmp_path, looped_extension())
    got = figures(m)
    assert got["extension steps"] == 4
    assert got["extension bytes per entry"] == (120 + 90 + 70 + 55 + 40) / 100

def nested_extension() -> list:
    """(count, asm) from 0x1000: the walk of ``search`` whose candidates, after passing
    scan[0] and scan[1] (loads from x13, which the walk never writes), are extended by a
    loop of its own (0x1070-0x109c: a post-indexed pointer reset to scan + 2 on each entry,
    20 trips back over 80 entries, most leaving on the first compares), run far less often than the walk's steps."""
    return [
        (10, "ldr x11, [x0, #0x70]"), (10, "ldr w12, [x0, #0x58]"),
        (10, "ldrb w10, [x13, #8]"), (10, "ldrb w15, [x13, #7]"), (10, "b 0x1024"),
        (800, "and w1, w1, w12"), (800, "ldrh w1, [x11, x1, lsl #1]"),  # 0x1014: the head
        (800, "subs w6, w6, #1"), (800, "b.eq 0x10b4"),
        (800, "sxtw x3, w7"), (800, "add x2, x8, x1"),  # 0x1024
        (800, "ldrb w5, [x2, w7, sxtw]"), (800, "cmp w5, w10"), (800, "b.ne 0x1014"),
        (200, "add x3, x2, x3"), (200, "ldurb w3, [x3, #-1]"), (200, "cmp w3, w15"),
        (200, "b.ne 0x1014"),
        (100, "ldrb w4, [x2]"), (100, "ldrb w3, [x13]"), (100, "cmp w4, w3"),  # scan[0]
        (100, "b.ne 0x1014"),
        (90, "ldrb w4, [x2, #1]"), (90, "ldrb w3, [x13, #1]"), (90, "cmp w4, w3"),  # scan[1]
        (90, "b.ne 0x1014"),
        (80, "add x2, x2, #2"), (80, "add x3, x13, #2"),
        (100, "ldrb w5, [x3, #1]"), (100, "ldrb w4, [x2, #1]"), (100, "cmp w5, w4"),  # 0x1070
        (100, "b.ne 0x10a0"),
        (60, "ldrb w5, [x3, #2]"), (60, "ldrb w4, [x2, #2]"), (60, "cmp w5, w4"),
        (60, "b.ne 0x10a0"),
        (30, "ldrb w5, [x3, #8]!"), (30, "ldrb w4, [x2, #8]!"), (30, "cmp w5, w4"),
        (30, "b.eq 0x1070"),  # 0x109c: the extension's own back edge
        (80, "sub w3, w3, w13"), (80, "cmp w7, w3"), (80, "b.ge 0x1014"),  # 0x10a0: join
        (10, "mov w7, w3"), (10, "b 0x1014"),  # a better match: rare
        (10, "mov w0, w7"), (10, "ret"),
    ]


def test_a_nested_loops_work_is_not_the_walks(tmp_path):
    """The extension loop's loads and its post-indexed pointer belong to it: the walk's
    recomputed work is scan[0], scan[1] and the index, changed where the match improves."""
    m = chase(tmp_path, nested_extension())
    recomputed = said(m, invariant_work.CHECK)
    assert recomputed is not None
    for inner in ("0x1070", "0x1074", "0x1080", "0x1090"):
        assert inner not in recomputed
    for walk in ("`sxtw x3, w7` at 0x1024", "`ldrb w3, [x13]` at 0x104c",
                 "`ldrb w3, [x13, #1]` at 0x105c"):
        assert walk in recomputed
    changed = said(m, invariant_work.CHANGED)
    assert "`mov w7, w3` at 0x10ac" in changed and "#8]!" not in changed


WRAPS = {"csel": [(700, "add w8, w4, w7"), (700, "csel w4, w8, w4, lo")],
         "csel-zero": [(700, "csel w8, w7, wzr, lo"), (700, "add w4, w4, w8")],
         "branch": [(700, "b.hs 0x1040"), (350, "add w4, w4, w7")]}


def cyclic_tree(*, size_set: str = "sub w11, w1, w3", bound: str = "w7",
                wrap: str = "csel") -> list:
    """(count, asm) from 0x1000: a binary-tree match walk over a cyclic array of 8-byte
    nodes (two 4-byte links; liblzma's bt_find_func form): the node index is the current
    position less the candidate's distance, plus the array size (w7, which the walk does
    not write) when that would fall below zero (``wrap``: `add` + `csel` at 0x1038/0x103c,
    `csel` of w7 or zero + `add`, or an `add` a branch skips); the walk
    ends when the distance reaches ``bound`` (`cmp w11, <bound>` at 0x1020 and 0x1068), after
    7 steps per call."""
    return [
        (100, "sub w14, w4, #1"), (100, "sub w19, w6, w1"), (100, size_set),
        (100, "b 0x1030"),
        (300, "str w3, [x30]"), (300, "add x30, x10, #4"),  # 0x1010: the smaller side
        (300, "ldr w3, [x10, #4]"), (300, "sub w11, w1, w3"), (300, f"cmp w11, {bound}"),
        (300, "b.hs 0x1078"), (280, "subs w14, w14, #1"), (280, "b.eq 0x1078"),
        (700, "add w4, w3, w19"), (700, "cmp w6, w11"), *WRAPS[wrap],  # 0x1030
        (700, "ubfiz x10, x4, #3, #0x1f"),
        (700, "lsl w8, w4, #1"), (700, "add x10, x5, x10"),
        (700, "ldrb w12, [x2, w11, uxtw]"), (700, "cmp w12, w9"), (700, "b.lo 0x1010"),
        (400, "str w3, [x18]"), (400, "mov x18, x10"),  # 0x1058: the larger side
        (400, "ldr w3, [x5, x8, lsl #2]"), (400, "sub w11, w1, w3"),
        (400, f"cmp w11, {bound}"), (400, "b.hs 0x1078"),
        (370, "subs w14, w14, #1"), (370, "b.ne 0x1030"),
        (100, "str wzr, [x18]"), (100, "ret"),  # 0x1078
    ]


def test_an_index_wrapped_by_a_register_bounds_the_table(tmp_path):
    """w7 bounds the walk and wraps its index: at most w7 nodes of 8 bytes, a size only the
    run time knows, so the advice names w7 and what to measure instead of 'unbounded' or
    'if it hits L1 there is little to gain'."""
    m = chase(tmp_path, cyclic_tree())
    wrap = said(m, chain_walk.WRAPPED)
    assert wrap is not None and wrap.startswith("w7: ")
    assert "`add w8, w4, w7` at 0x1038" in wrap and "`csel w4, w8, w4, lo` at 0x103c" in wrap
    assert "`cmp w11, w7` at 0x1020" in wrap and "0x1068" in wrap
    assert figures(m)["wrapped entry bytes"] == 8 and "table size" not in figures(m)
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "Nothing in the code bounds" not in rec and "little to gain" not in rec
    assert "at most w7 entries of 8 bytes (8 × w7 bytes)" in rec
    assert "a run-time size held in w7" in rec
    assert "prefetch" in rec and "measure the value of w7" in rec.lower()
    for form, rows in (("csel-zero", "`csel w8, w7, wzr, lo` at 0x1038, `add w4, w4, w8` at "
                                     "0x103c"),
                       ("branch", "`b.hs 0x1040` at 0x1038, `add w4, w4, w7` at 0x103c")):
        wrap = said(chase(tmp_path, cyclic_tree(wrap=form)), chain_walk.WRAPPED)
        assert wrap is not None and wrap.startswith(f"w7: {rows} wrap the index"), form


def test_a_wrap_size_from_a_constant_gives_the_table_size(tmp_path):
    m = chase(tmp_path, cyclic_tree(size_set="mov w7, #0x1000"))
    assert figures(m)["wrapped table size"] == 4096 * 8
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "at most 4,096 entries of 8 bytes (32 KiB), within L1D" in rec


def test_a_wrap_size_from_a_shifted_move_gives_the_table_size(tmp_path):
    """`movz w7, #0x1, lsl #16` sets w7 to 65,536: the shift is part of the value."""
    m = chase(tmp_path, cyclic_tree(size_set="movz w7, #0x1, lsl #16"))
    assert figures(m)["wrapped table size"] == 65536 * 8


def test_a_mask_set_before_a_call_is_not_the_walks_mask(tmp_path):
    """A call between `mov w12, #0x7fff` and the walk may change w12 (caller-saved): the
    call is what last sets it, its value not in the code; not so for the callee-saved w20."""
    lines = search()
    lines[1], lines[3] = (10, "mov w12, #0x7fff"), (10, "bl 0x4000")
    m = chase(tmp_path, lines)
    assert "table size" not in figures(m)
    assert said(m, chain_walk.MASKED).endswith(
        "set before the walk by `bl 0x4000` at 0x100c, value not in the code")
    kept = [(n, asm.replace("w12", "w20")) for n, asm in lines]
    assert figures(chase(tmp_path, kept))["table size"] == 32768 * 2


def test_a_register_set_on_another_path_before_the_walk_is_no_argument(tmp_path):
    """Code ending in a `ret` before the walk does not run into it: w7's setter is not
    known, and it is not called an argument."""
    lines = cyclic_tree(size_set="mov w7, #0x1000")
    lines[3] = (100, "ret")  # instead of the jump into the walk
    m = chase(tmp_path, lines)
    wrap = said(m, chain_walk.WRAPPED)
    assert "wrapped table size" not in figures(m)
    assert wrap is not None and wrap.endswith("set outside the rows read, value not in the code")


def test_a_conditional_add_without_a_compare_on_it_is_no_wrap(tmp_path):
    """`csel` between i and i + w7 while the walk compares with another register: a
    conditional step, not a wrap; nothing bounds the table."""
    m = chase(tmp_path, cyclic_tree(bound="w13"))
    assert said(m, chain_walk.WRAPPED) is None
    assert "Nothing in the code bounds" in advise(builtins_of(m), "executions",
                                                  None).recommendation


def test_a_load_addressed_by_the_link_of_the_same_step_is_a_second_access(tmp_path):
    """liblzma's tree walk compares a byte of the window at each node: its address comes
    from the link this step loaded (`sub w11, w1, w3`), through a base the chain does not
    use (x2): a second random access per step, named with its path and the branch on it."""
    m = chase(tmp_path, cyclic_tree())
    second = said(m, chain_walk.SECOND)
    assert second == ("`ldrb w12, [x2, w11, uxtw]` at 0x104c, from `ldr w3, [x10, #4]` at "
                      "0x1018 through `sub w11, w1, w3` at 0x101c (on other paths from "
                      "`ldr w3, [x5, x8, lsl #2]` at 0x1060); its value is branched on "
                      "(`cmp w12, w9` at 0x1050)")
    advice = advise(builtins_of(m), "executions", None)
    assert "second random access" in advice.claim
    assert "`ldrb w12, [x2, w11, uxtw]` at 0x104c takes its address from the link `ldr w3, " \
        "[x10, #4]` at 0x1018 loaded in the same step (through `sub w11, w1, w3` at 0x101c) " \
        "or, on other paths, from `ldr w3, [x5, x8, lsl #2]` at 0x1060," in advice.claim
    # zlib's form: the window byte at the candidate plus the best length, and the bytes the
    # unrolled extension reads from the same place
    zlib = said(chase(tmp_path, search()), chain_walk.SECOND)
    assert zlib is not None and zlib.startswith(
        "`ldrb w5, [x2, w7, sxtw]` at 0x102c, from `ldrh w1, [x11, x1, lsl #1]` at 0x1018 "
        "through `add x2, x8, x1` at 0x1028")
    assert "also `ldurb w3, [x3, #-1]` at 0x103c, `ldrb w5, [x2, #1]` at 0x1048" in zlib
    assert "x13" not in zlib  # the fixed string's bytes: not addressed by the link


def test_the_second_access_is_named_from_the_values_not_the_check(tmp_path):
    """The claim's words on the second access come from the mechanism's values: without the
    check (reworded, say) the claim says the same, branch and further loads included."""
    m = chase(tmp_path, search())
    unsaid = replace(m, checks=tuple(c for c in m.checks if not c.startswith(chain_walk.SECOND)))
    claim = advise(builtins_of(m), "executions", None).claim
    assert "second random access" in claim and "(3 more load(s) addressed" in claim
    assert advise(builtins_of(unsaid), "executions", None).claim == claim


def test_a_field_of_the_node_the_link_points_at_is_no_second_access(tmp_path):
    """A list walk reading the next node's payload (the link plus a constant) reads the node
    the chain goes to next, not another structure."""
    lines = [(10, "mov x0, x1"), (500, "ldr x0, [x0, #8]"), (500, "ldr w4, [x0, #16]"),
             (500, "add w5, w5, w4"), (500, "cbnz x0, 0x1004"), (10, "ret")]
    assert said(chase(tmp_path, lines), chain_walk.SECOND) is None


def test_a_compare_reads_no_load_a_call_clobbers_before_it(tmp_path):
    """`ldrb w5` then a call: the call may change w5 (caller-saved), so `cmp w5, w10` does
    not compare the loaded byte; with the callee-saved w20 it does."""
    for reg, compared in (("w5", None), ("w20", 0)):
        path = tmp_path / "p.csv"
        with open(path, "w", newline="") as f:
            out = csv.writer(f)
            out.writerow(["function", "window", "pc", "samples", "asm"])
            for i, asm in enumerate((f"ldrb {reg}, [x2]", "bl 0x4000", f"cmp {reg}, w10",
                                     "b.ne 0x1000")):
                out.writerow(["walk", "walk", hex(0x1000 + 4 * i), 10, asm])
        profile = read_profile(path)
        reader = chain_walk._Reader(profile, Code(profile).op, [0, 1, 2, 3], frozenset())
        got = reader.compared_load(3)
        assert (got[0] if got else None) == compared, reg


def test_a_wrap_set_from_memory_names_its_whole_setter(tmp_path):
    """A bound loaded before the walk is named by its whole instruction, commas and all."""
    m = chase(tmp_path, cyclic_tree(size_set="ldr w7, [x0, #0x10]"))
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "a run-time size held in w7 (set before the walk by `ldr w7, [x0, #0x10]`, its " \
           "value not in the code)" in rec


@pytest.mark.parametrize(("lines", "values", "says"), [
    (cyclic_tree(), ChaseValues("w14", "`str w3, [x30]` at 0x1010", WrapBound(
        "w7", ("add w8, w4, w7", "csel w4, w8, w4, lo"), ("cmp w11, w7", "cmp w11, w7"), "",
        True), None, False, reach=SecondReach("ldrb w12, [x2, w11, uxtw]", "sub w11, w1, w3", "w11", 1,
        None, None, "w7", "cmp w11, w7", ()), pair=PairedLinks(("ldr w3, [x10, #4]",
        "ldr w3, [x5, x8, lsl #2]"), 8, "b.lo 0x1010"), reject="`cmp w12, w9` at 0x1050"),
     ["(`str w3, [x30]` at 0x1010), so they would go stale on every insert",
                 "The link's index wraps at w7 (`add w8, w4, w7`, `csel w4, w8, w4, lo`; the "
                 "walk compares w7 with `cmp w11, w7`)", "(passed in as an argument, its "
                 "value not in the code)", "Measure the value of w7 at run time"]),
    (search(), ChaseValues("w6", None, None, "`and w1, w1, w12`, set before the walk by "
                           "`ldr w12, [x0, #0x58]`, value not in the code", False,
                           reach=SecondReach("ldrb w5, [x2, w7, sxtw]", "ldrh w1, [x11, x1, lsl #1]",
                                       "w1", 1, 65536, 16, None, "", ("w7",)),
                           beside=(Beside("ldurb w3, [x3, #-1]", "", 0, -1),
                            Beside("ldrb w5, [x2, #1]", "w7", -1, 1),
                            Beside("ldrb w5, [x2, #2]", "w7", -1, 2)),
                           reject="`cmp w5, w10` at 0x1030", paired="`cmp w3, w15` at 0x1040"),
     ["lower the step budget the loop already has (w6 counts down by one per step and ends "
      "the walk at zero; its start value", "The link is masked (`and w1, w1, w12`, set before "
      "the walk by `ldr w12, [x0, #0x58]`, value not in the code)"]),
])  # fmt: skip
def test_a_reopened_index_gives_the_advice_the_walks_budget_relink_and_wrap(tmp_path, lines,
                                                                           values, says):
    from pcscope.index.store import open_workload

    chase(tmp_path, lines)  # writes p.csv
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = [m for m in reopened if m.kind == "pointer-chase"]
    found = m.value(ChaseValues)
    assert found is not None and msgspec.structs.replace(found, second=None) == values
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert all(s in rec for s in says), rec


def test_the_second_access_is_sized_by_the_links_width(tmp_path):
    """zlib's form: the window byte at x8 + the 16-bit link + w7: the link's width bounds it to
    64 KiB past its base, plus the offset w7 the walk rarely changes; the table bound alone
    left the window unsized."""
    m = chase(tmp_path, search())
    reach = chased(m).reach
    assert reach is not None and reach.span == 65536 and reach.stride == 1
    assert reach.bound is None and reach.offsets == ("w7",)
    claim = advise(builtins_of(m), "executions", None).claim
    assert "That access is indexed by the same 16-bit link, so it spans at most 64 KiB (plus " \
        "the offset w7): within every Neoverse L2" in claim, claim
    wide = chase(tmp_path, search(link="ldr w1, [x11, x1, lsl #2]", exit_add="x9"))
    assert chased(wide).reach is None  # a 32-bit link bounds nothing


def test_the_second_access_is_sized_by_the_walks_exit_bound(tmp_path):
    """liblzma's form: the window byte at x2 + w11, and the walk leaves once w11 reaches w7
    (`cmp w11, w7`, `b.hs` out): w7 bytes, an eighth of the 8 × w7 the pair table holds."""
    m = chase(tmp_path, cyclic_tree())
    reach = chased(m).reach
    assert reach is not None and reach.span is None and reach.bound == "w7"
    assert reach.stride == 1 and reach.compare == "cmp w11, w7" and reach.offsets == ()
    claim = advise(builtins_of(m), "executions", None).claim
    assert "That access moves with w11 (`sub w11, w1, w3`), and the walk leaves once w11 " \
        "reaches w7 (`cmp w11, w7`), so it spans at most w7 bytes, one eighth of the table's " \
        "8 × w7 bytes (below)" in claim, claim
    # another register the walk does not write bounds it the same way, with no ratio
    other = advise(builtins_of(chase(tmp_path, cyclic_tree(bound="w13"))), "executions",
                   None).claim
    assert "leaves once w11 reaches w13 (`cmp w11, w13`), so it spans at most w13 bytes." \
        in other, other
    # a walk that leaves while the value is below the register is not bounded by it
    lines = cyclic_tree()
    lines[9] = (300, "b.lo 0x1078")
    lines[27] = (400, "b.lo 0x1078")
    low = chase(tmp_path, lines)
    assert chased(low).reach is None


def test_loads_beside_the_second_access_are_placed_against_it(tmp_path):
    """The other loads the link addresses read near the second access (a constant, or the
    offset w7 and a constant, away): the same or a nearby line, not more random lines."""
    m = chase(tmp_path, search())
    beside = {b.load: (b.register, b.sign, b.offset) for b in chased(m).beside}
    assert beside["ldurb w3, [x3, #-1]"] == ("", 0, -1)
    assert beside["ldrb w5, [x2, #1]"] == ("w7", -1, 1)
    claim = advise(builtins_of(m), "executions", None).claim
    assert "all near it: `ldurb w3, [x3, #-1]` 1 byte before it, in the same or an adjacent " \
        "64-byte line" in claim, claim
    assert "`ldrb w5, [x2, #1]` w7 − 1 bytes before it" in claim, claim


def test_two_links_reading_one_pair_are_loaded_once(tmp_path):
    """`ldr w3, [x10, #4]` and `ldr w3, [x5, x8, lsl #2]` read x5 + 8 × w4 + 4 and + 0, and
    the branch on the window byte picks one: one line either way, so the branch-free form
    trades the mispredicts for the window byte's latency, and the text says so."""
    m = chase(tmp_path, cyclic_tree())
    pair = chased(m).pair
    assert pair is not None and pair.size == 8 and pair.branch == "b.lo 0x1010"
    assert pair.halves == ("ldr w3, [x10, #4]", "ldr w3, [x5, x8, lsl #2]")
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "Both link loads read halves of one 8-byte pair (`ldr w3, [x10, #4]`, `ldr w3, [x5, " \
        "x8, lsl #2]`): its line is fetched once the link is known, whichever way `b.lo 0x1010` " \
        "goes" in rec, rec
    assert "trades its mispredicts for the second access's latency every step" in rec, rec
    lines = cyclic_tree()
    lines[24] = (400, "ldr w3, [x6, x8, lsl #2]")  # another base: not the same pair
    apart = chase(tmp_path, lines)
    assert chased(apart).pair is None
    assert "`csel`" not in advise(builtins_of(apart), "executions", None).recommendation


def test_a_load_a_line_or_more_away_is_not_beside_the_second_access(tmp_path):
    """`ldurb w3, [x3, #-100]` reads 100 bytes before the second access: maybe another line,
    so only the other two are placed near it."""
    m = chase(tmp_path, search(second="#-100"))
    assert "ldurb w3, [x3, #-100]" not in {b.load for b in chased(m).beside}
    claim = advise(builtins_of(m), "executions", None).claim
    assert "2 of them near it: `ldrb w5, [x2, #1]` w7 − 1 bytes before it" in claim, claim


def test_a_call_in_the_walk_changes_the_caller_saved_registers_it_compares(tmp_path):
    """A call inside the walk (its callee not in the profile) may change x0-x18 on every step
    (pcscope.core.call_effects): a compare against w10 after it is no first reject, since
    w10 is not a value the walk leaves alone; against the callee-saved w20 it is."""
    def with_call(fixed: str) -> list:
        rows = search(fixed=fixed)
        rows[7] = (800, "bl 0x9000")  # in place of the step budget's subs
        return rows
    assert "rejected at the first compare" in figures(chase(tmp_path, with_call("w20")))
    (tmp_path / "w10").mkdir()
    assert "rejected at the first compare" not in figures(chase(tmp_path / "w10",
                                                                with_call("w10")))
