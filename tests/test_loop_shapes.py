"""Loops read through their dataflow (pcscope.core.loop_dataflow), each with look-alikes
that must stay quiet: keys gathered through an index array and branched on (review 6 item
3), a cost relaxation over an array of structs and a fixed-trip lookup sum (item 4)."""

from __future__ import annotations

import csv
from dataclasses import replace

import pytest
from test_store_shapes import as_dict

from pcscope.core import loop_dataflow
from pcscope.core.backends.advice import advise
from pcscope.core.gather_partition import (
    DIAMONDS,
    EXITS,
    INDEXED,
    LOOPS,
    PARTITION,
    SCATTERS,
    THREE_WAY,
)
from pcscope.core.gather_values import CALL, GatherValues, Guard
from pcscope.core.mechanism_finder import find_mechanisms
from pcscope.core.patterns import code_facts, find_patterns, loop_trips
from pcscope.core.readers.profile_csv import read_profile
from pcscope.core.shapes import Op


def mechanisms_of(tmp_path, blocks):
    """blocks: (function, first pc, [(count, asm)...]); one window per function, a row per
    instruction at consecutive addresses."""
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for function, at, rows in blocks:
            for i, (count, asm) in enumerate(rows):
                out.writerow([function, function, hex(at + 4 * i), count, asm])
    profile = read_profile(path)
    facts = code_facts(profile)
    return profile, find_mechanisms(profile, find_patterns(profile, facts), facts)


def of_kind(table, kind: str) -> list:
    return [m for m in table if m.kind == kind]


WORK = ("work", 0x9000, [(1000, "add x0, x0, #1")] * 20)


# -- the dataflow the detectors read -------------------------------------------------------
def test_strides_follow_the_induction_variable_through_shifts_and_moves():
    ops = [Op.of(0x1000 + 4 * i, a) for i, a in enumerate([
        "add w13, w3, w21", "add x0, x13, x13, lsl #1", "lsl x0, x0, #2", "sub x0, x0, x13",
        "add x0, x26, x0, lsl #2", "ldr w1, [x0, #0xedc]", "ldr w2, [x5, x3, lsl #2]",
        "add w4, w3, #1", "mov w3, w4", "ldr w6, [x7]", "b.ne #0x1000"])]
    flow = loop_dataflow.read(ops)
    assert flow.steps == {"x3": 1}
    assert flow.strides[5] == 44 and flow.strides[6] == 4  # 11 × 4 bytes, then 4 bytes
    assert flow.strides[9] == 0  # a fixed address


def test_a_value_loaded_in_an_earlier_iteration_is_marked():
    ops = [Op.of(0x1000 + 4 * i, a) for i, a in enumerate([
        "ldr x0, [x0, #8]", "ldr w1, [x0]", "add w2, w2, w1", "cbnz x0, #0x1000"])]
    flow = loop_dataflow.read(ops)
    assert loop_dataflow.EARLIER in flow.sources[0]  # the walk: its address was loaded
    assert flow.sources[2] >= {1}


# -- gather and branch through an index array ----------------------------------------------
def partition(extra: tuple[str, ...] = (), stream: str = "ldr w6, [x14]",
              key: str = "ldrb w1, [x2, w1, uxtw]", decide: str = "b.hs #0x1018",
              index: str = "add w1, w13, w6") -> list[tuple[int, str]]:
    """A partition scan: the index, the key through it, a branch on the key, a swap on one
    side (4000 of 10000 elements)."""
    return [(10000, stream), (10000, index), (10000, key), (10000, "cmp w1, w12"),
            (10000, decide), (4000, "str w6, [x15], #4"), (10000, "add x14, x14, #4"),
            *((10000, e) for e in extra), (10000, "cmp x14, x16"), (10000, "b.ne #0x1000")]


def test_keys_gathered_through_an_index_array_and_branched_on_are_an_idea(tmp_path):
    profile, table = mechanisms_of(tmp_path, [("qsort3", 0x1000, partition()), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert m.sites[0].pc == 0x1008  # the key load
    assert len(m.sites[0].pcs) == 9 and m.share == pytest.approx(
        (8 * 10000 + 4000) / profile.total)
    assert any("`ldr w6, [x14]`" in c for c in m.checks)
    assert any("taken 60%" in c for c in m.checks)  # 6000 of 10000 skip the swap
    assert any("partitions or swaps" in c for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    assert "base[idx[i + d] + k]" in advice.recommendation
    assert "branch-free" in advice.recommendation and "BR_MIS_PRED_RETIRED" in advice.recommendation
    assert "not how often it mispredicted" in advice.claim


def scan(side: list[tuple[int, str]], other: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """A scan that branches on each gathered key (taken 6000 of 10000) to ``other``, with
    ``side`` on the fall-through (4000); both lead to the loop's step at the end."""
    top = [(10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
           (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "cmp w1, w12")]
    step = 0x1000 + 4 * (len(top) + 1 + len(side) + 1 + len(other))
    to_other = 0x1000 + 4 * (len(top) + 1 + len(side) + 1)
    return [*top, (10000, f"b.eq {hex(to_other)}"), *side, (4000, f"b {hex(step)}"), *other,
            (10000, "add x14, x14, #4"), (10000, "cmp x14, x16"), (10000, "b.ne #0x1000")]


COUNT = [(6000, "add w7, w7, #1")]  # zPend++


@pytest.mark.parametrize("side, why", [
    # the other side searches an inner loop (bzip2's generateMTFValues: zPend++ or the MTF
    # search)
    ([(4000, "mov w3, #0"), (40000, "add w3, w3, #1"), (40000, "cmp w3, w1"),
      (40000, "b.ne #0x1018")], "a loop"),
    ([(4000, "mov w0, w1"), (4000, "bl #0x5000")], "a call"),
])
def test_a_branch_guarding_a_loop_or_call_gets_no_branch_free_advice(tmp_path, side, why):
    _profile, table = mechanisms_of(tmp_path, [("mtf", 0x1000, scan(side, COUNT)), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert any(c.startswith("branches that guard") and f"at 0x1010 ({why})" in c
               for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    said = advice.claim.split("Checks passed")[0]
    assert ". Not value choices: `b.eq" in said and f"at 0x1010 ({why})" in said
    assert "it guards a loop or call, not a value choice" in advice.recommendation
    assert "csel`/`cset`)" not in advice.recommendation
    assert "base[idx[i + d] + k]" in advice.recommendation  # the gather half stays


def test_a_branch_picking_between_two_short_sides_keeps_the_branch_free_advice(tmp_path):
    loop = scan([(4000, "add w8, w8, #1")], COUNT)  # an if/else diamond, one row each
    _profile, table = mechanisms_of(tmp_path, [("mtf", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert not any(c.startswith("branches that guard") for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    assert "decide branch-free where the branch only picks a value" in advice.recommendation
    assert "guards a loop" not in advice.recommendation


def three_way(decide: str = "b.lt #0x1024") -> list[tuple[int, str]]:
    """A partition scan testing each key for equality (`cbz`: 6000 of 10000 equal, moved to
    the `==` part), then for order (``decide``: the `>` keys, 1000, move right)."""
    return [(10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
            (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "subs w1, w1, w12"),
            (10000, "cbz w1, #0x1020"), (4000, decide), (1000, "str w6, [x15], #4"),
            (1000, "b #0x1024"), (6000, "str w6, [x17], #4"), (10000, "add x14, x14, #4"),
            (10000, "cmp x14, x16"), (10000, "b.ne #0x1000")]


def test_a_three_way_partition_is_named_with_its_equal_keys(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("qsort3", 0x1000, three_way()), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert f"{THREE_WAY}`cbz w1, #0x1020` at 0x1010 then `b.lt #0x1024` at 0x1014: equal on " \
        "60% of 10,000" in m.checks
    assert PARTITION in m.checks and not any(c.startswith(SCATTERS) for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    assert "three-way (two flags per element: `<` and `==`), and 60% of the partition's " \
        "10,000 keys equal the pivot" in advice.recommendation
    assert "partition twice" in advice.recommendation


def two_scans() -> list[tuple[int, str]]:
    """A three-way partition laid out as mainQSort3 compiles it: a left scan (head 0x1000,
    body 0x1010) whose `==` side swaps into the equal zone (0x108c, 8 rows) and whose `<`
    side only advances (0x1080), both back to the head; its order test leaves for a right
    scan (0x1044) whose `==` side swaps (0x105c, 6 rows) and rejoins the `!=` side at
    0x1038; that scan's order test leaves for the cross swap (0x1074)."""
    return [(10100, "cmp w9, w7"), (10100, "b.le #0x1010"), (100, "b #0x10ac"),
            (100, "nop"),
            (10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
            (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "sub w1, w1, w12"),
            (10000, "cmp w1, #0"), (10000, "cbz w1, #0x108c"), (4000, "b.le #0x1080"),
            (1000, "add x6, x22, w7, sxtw #2"), (1000, "b #0x1044"),
            (2000, "b.mi #0x1074"), (2200, "sub x6, x6, #4"), (2200, "cmp w9, w7"),
            (2200, "b.gt #0x10ac"),
            (3000, "ldr w24, [x6]"), (3000, "sub w7, w7, #1"), (3000, "add w1, w13, w24"),
            (3000, "ldrb w1, [x2, w1, uxtw]"), (3000, "subs w1, w1, w12"),
            (3000, "cbnz w1, #0x1034"),
            (1000, "sxtw x1, w10"), (1000, "sub w10, w10, #1"),
            (1000, "ldr w30, [x22, x1, lsl #2]"), (1000, "str w30, [x6]"),
            (1000, "str w24, [x22, x1, lsl #2]"), (1000, "b #0x1038"),
            (800, "ldr w1, [x14]"), (800, "str w24, [x14]"), (800, "str w1, [x6]"),
            (3800, "add w9, w9, #1"), (3800, "add x14, x14, #4"), (3800, "b #0x1000"),
            (6000, "sxtw x1, w19"), (6000, "add w9, w9, #1"), (6000, "add w19, w19, #1"),
            (6000, "add x14, x14, #4"), (6000, "ldr w24, [x22, x1, lsl #2]"),
            (6000, "stur w24, [x14, #-4]"), (6000, "str w6, [x22, x1, lsl #2]"),
            (6000, "b #0x1000"), (300, "mov w0, w9"), (300, "ret")]


def test_diamonds_rejoining_at_the_loop_head_or_in_another_scan_are_value_choices(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("qsort3", 0x1000, two_scans()), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert f"{DIAMONDS}`cbz` at 0x1024 (rejoining at the loop head 0x1000 within 8), `cbnz` at 0x1058 " \
        "(rejoining at 0x1038 within 6)" in m.checks
    assert f"{EXITS}`b.le` at 0x1028, `b.mi` at 0x1034" in m.checks
    assert not any(c.startswith("branches that guard") for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    for said in ("`cbz` at 0x1024", "`cbnz` at 0x1058", "`b.le` at 0x1028", "`b.mi` at 0x1034"):
        assert said in advice.claim.split("Checks passed")[0] and said in advice.recommendation
    assert "long path" not in advice.claim + advice.recommendation
    assert "`==` cursor" in advice.recommendation


def test_each_loop_is_named_by_head_with_its_inner_cycles_iterations_and_keys(tmp_path):
    """The second scan is a cycle of its own inside the partition loop: its passes are
    iterations too, and the keys of every cycle add up to the keys said."""
    _profile, table = mechanisms_of(tmp_path, [("qsort3", 0x1000, two_scans()), WORK])
    (m,) = of_kind(table, "gather-branch")
    (said,) = [c.removeprefix(LOOPS) for c in m.checks if c.startswith(LOOPS)]
    assert said.endswith("; head 10,100, keys 10,000; inner cycle 0x1044: head 3,000, "
                         "keys 3,000)") and said.startswith("0x1000 (")
    figures = {x.name: x.value for x in m.metrics}
    assert figures["loop iterations"] == 13100 and figures["keys gathered"] == 13000
    claim = advise(as_dict(m), "executions", None).claim
    assert f"13,000 keys, 13,100 loop iterations (by head: {said})" in claim


def test_a_branch_leaving_the_loop_is_its_exit_not_a_long_path(tmp_path):
    """A search: stop at the first key equal to the pivot (out of the loop), else step."""
    loop = [(10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
            (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "cmp w1, w12"), (10000, "b.eq #0x1030"),
            (9900, "add w0, w0, #1"), (9900, "add x14, x14, #4"), (9900, "cmp x14, x16"),
            (9900, "b.ne #0x1000"), (100, "mov w0, #0"), (100, "ret"), (100, "nop"),
            (100, "mov w0, w6"), (100, "ret")]
    _profile, table = mechanisms_of(tmp_path, [("find", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert f"{EXITS}`b.eq` at 0x1010" in m.checks
    assert not any(c.startswith(("branches that guard", DIAMONDS)) for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    assert "long path" not in advice.claim + advice.recommendation
    assert "`b.eq` at 0x1010 (exits the loop)" in advice.recommendation



def test_a_partition_scan_ending_at_its_order_test_names_that_exit(tmp_path):
    """Hoare's scan `while (key[idx[i]] < pivot) *out++ = idx[i++];`: the order test is the
    scan's back edge, its other side leaves the scan."""
    loop = [(10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
            (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "str w6, [x15], #4"),
            (10000, "add x14, x14, #4"), (10000, "cmp w1, w12"), (10000, "b.lo #0x1000"),
            (100, "ret")]
    _profile, table = mechanisms_of(tmp_path, [("scan", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert f"{EXITS}`b.lo` at 0x1018" in m.checks and PARTITION in m.checks
    advice = advise(as_dict(m), "executions", None)
    assert "(`b.lo` at 0x1018 ends its scan: a loop exit" in advice.recommendation
    assert "long path" not in advice.claim + advice.recommendation

def test_sides_that_rejoin_only_after_many_rows_are_a_long_path(tmp_path):
    long_side = [(4000, f"add w{8 + i % 4}, w{8 + i % 4}, #{i + 1}") for i in range(12)]
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, scan(long_side, COUNT)), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert any(c.startswith("branches that guard") and "at 0x1010 (a long path)" in c
               for c in m.checks)
    assert not any(c.startswith((DIAMONDS, EXITS)) for c in m.checks)
    assert "csel`/`cset`)" not in advise(as_dict(m), "executions", None).recommendation


def test_a_continue_block_laid_out_before_the_loop_entry_is_the_loops_own(tmp_path):
    """generateMTFValues' layout: the `==` side (`zPend++; i++`, 0x1004) sits before the
    loop's entry (0x1014, jumped to from 0x1000) and falls into it; the other side runs an
    inner loop (skipped when its count is 0). Jumping back to that block continues the loop:
    the branch guards a loop, it does not exit."""
    loop = [(10, "b #0x1014"), (6000, "add x5, x5, #1"), (6000, "add w2, w2, #1"),
            (6000, "cmp x7, x5"), (6000, "b.eq #0x1048"),
            (10000, "ldr w6, [x14, x5, lsl #2]"), (10000, "add w1, w13, w6"),
            (10000, "ldrb w1, [x23, w1, uxtw]"), (10000, "cmp w1, w12"), (10000, "b.eq #0x1004"),
            (4000, "cbz w9, #0x103c"), (3000, "mov w3, #0"), (30000, "add w3, w3, #1"),
            (30000, "cmp w3, w9"), (30000, "b.ne #0x1030"), (4000, "add x5, x5, #1"),
            (4000, "cmp x7, x5"), (4000, "b.ne #0x1014"), (10, "ret")]
    _profile, table = mechanisms_of(tmp_path, [("mtf", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert any(c.startswith("branches that guard") and "at 0x1024 (a loop)" in c
               for c in m.checks)
    assert not any(c.startswith(EXITS) for c in m.checks)


@pytest.mark.parametrize("loop", [
    partition(),  # one order test: two ways
    three_way(decide="cbz w6, #0x1024"),  # two equality tests on two values, no order
])  # fmt: skip
def test_a_two_way_decision_is_not_called_three_way(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("qsort", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert not any(c.startswith(THREE_WAY) for c in m.checks)
    assert "three-way" not in advise(as_dict(m), "executions", None).recommendation


def bucket_copy(place: str = "str w2, [x22, w4, uxtw #2]", at: int = 0x1000,
                n: int = 10000) -> list[tuple[int, str]]:
    """bzip2's copy step (first row at ``at``): each index's key (``ldrb w7``) picks a
    bucket whose done flag (``ldrb w4``) and cursor (``ldr w4``) are loaded through the key;
    the cursor says where the index goes (``place``), on the 40% of ``n`` keys whose bucket
    is still open."""
    open_ = n * 4 // 10
    return [(n, "ldr w2, [x22, x0, lsl #2]"), (n, "ldrb w7, [x24, w2, uxtw]"),
            (n, "ldrb w4, [x23, w7, uxtw]"), (n, f"cbnz w4, {hex(at + 0x20)}"),
            (open_, "ldr w4, [x8, x7, lsl #2]"), (open_, "add w9, w4, #1"),
            (open_, "str w9, [x8, x7, lsl #2]"), (open_, place), (n, "add x0, x0, #1"),
            (n, "cmp x0, x10"), (n, f"b.ne {hex(at)}")]


def test_a_scatters_key_is_the_load_its_store_index_comes_from(tmp_path):
    """The bucket's flag and cursor are loaded through the key: indexed loads, not keys."""
    _profile, table = mechanisms_of(tmp_path, [("copy", 0x1000, bucket_copy()), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert m.sites[0].pc == 0x1004
    figures = {x.name: x.value for x in m.metrics}
    assert figures["keys gathered"] == 10000 and figures["other indexed loads"] == 14000
    assert f"{LOOPS}0x1000 (" in "".join(m.checks)
    (said,) = [c.removeprefix(LOOPS) for c in m.checks if c.startswith(LOOPS)]
    assert said.endswith("; head 10,000, keys 10,000, other indexed loads 14,000)")
    assert "key loads from a fixed base indexed by the loaded index: " \
        "`ldrb w7, [x24, w2, uxtw]`" in m.checks
    (other,) = [c for c in m.checks if c.startswith(INDEXED)]
    assert "`ldrb w4, [x23, w7, uxtw]` at 0x1008" in other
    assert "`ldr w4, [x8, x7, lsl #2]` at 0x1010" in other
    claim = advise(as_dict(m), "executions", None).claim
    assert "10,000 keys, 10,000 loop iterations" in claim


def test_an_indexed_load_no_decision_reads_is_not_a_key(tmp_path):
    """A payload loaded through the index and summed: the branch reads only the key."""
    loop = partition(extra=("ldr w5, [x3, w6, uxtw #2]", "add w0, w0, w5"))
    _profile, table = mechanisms_of(tmp_path, [("qsort", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    figures = {x.name: x.value for x in m.metrics}
    assert figures["keys gathered"] == 10000 and figures["other indexed loads"] == 10000


def test_the_equal_share_is_of_the_partitions_keys_and_the_scatters_share_is_said(tmp_path):
    """A three-way partition and a bucket scatter in one function: the part of keys found
    equal is of the partition's keys, and the scatter's share of the own share is named."""
    profile, table = mechanisms_of(tmp_path, [
        ("sort", 0x1000, three_way()), ("sort", 0x2000, bucket_copy(at=0x2000, n=5000)),
        WORK])
    (m,) = of_kind(table, "gather-branch")
    figures = {x.name: x.value for x in m.metrics}
    assert figures["keys gathered"] == 15000
    scatter = (7 * 5000 + 4 * 2000) / profile.total  # its rows: 7 run on every key, 4 on 40%
    assert figures["bucket scatter share"] == pytest.approx(100 * scatter, abs=0.005)
    advice = advise(as_dict(m), "executions", None)
    assert "60% of the partition's 10,000 keys equal the pivot" in advice.recommendation
    assert f"the own share {m.share:.2%} includes them ({scatter:.2%} of the run)" \
        in advice.claim


def test_a_bucket_scatter_is_not_called_a_partition(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("copy", 0x1000, bucket_copy()), WORK])
    (m,) = of_kind(table, "gather-branch")
    (said,) = [c for c in m.checks if c.startswith(SCATTERS)]
    assert said.startswith(f"{SCATTERS}`str w2, [x22, w4, uxtw #2]` at 0x101c")
    assert PARTITION not in m.checks
    advice = advise(as_dict(m), "executions", None)
    assert "bucket scatters, not partitions" in advice.claim
    assert "the branch-free partition does not apply to them, only the gather or prefetch" \
        in advice.recommendation
    assert "BlockQuicksort" not in advice.recommendation


def test_an_index_stored_at_a_running_cursor_is_not_a_scatter(tmp_path):
    """A filter keeping the indexes whose key matches, at a cursor that only steps: the key
    decides whether, not where."""
    loop = [(10000, "ldr w2, [x22, x0, lsl #2]"), (10000, "ldrb w7, [x24, w2, uxtw]"),
            (10000, "cmp w7, w12"), (10000, "b.ne #0x1014"), (4000, "str w2, [x17], #4"),
            (10000, "add x0, x0, #1"), (10000, "cmp x0, x10"), (10000, "b.ne #0x1000")]
    _profile, table = mechanisms_of(tmp_path, [("filter", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert not any(c.startswith(SCATTERS) for c in m.checks)
    assert "bucket scatter" not in advise(as_dict(m), "executions", None).recommendation


@pytest.mark.parametrize("loop", [
    # post-indexed: `ldr w6, [x14], #4`
    [(10000, "ldr w6, [x14], #4"), *partition()[1:6], *partition()[7:]],
    # an index register scaled into the array: `ldr w6, [x22, x9, lsl #2]`, `add x9, x9, #1`
    partition(stream="ldr w6, [x22, x9, lsl #2]", extra=("add x9, x9, #1",)),
])
def test_other_ways_of_reading_the_index_array_fire(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, loop), WORK])
    (m,) = of_kind(table, "gather-branch")
    assert any(f"`{loop[0][1]}`" in c for c in m.checks)


@pytest.mark.parametrize("loop", [
    # the keys are summed, nothing decides on them: a plain gather, not this idea
    partition(decide="b.hs #0x1018", extra=("add w0, w0, w1",))[:3]
    + [(10000, "add w0, w0, w1"), (10000, "add x14, x14, #4"), (10000, "cmp x14, x16"),
       (10000, "b.ne #0x1000")],
    # a byte stream through a class table (ctype): not an array of indexes
    partition(stream="ldrb w6, [x14]"),
    # a walk: the next index is the loaded key's slot, not the next array element
    partition(stream="ldr w6, [x2, x6, lsl #2]", index="add w1, w6, w13"),
    # already prefetching the keys ahead
    partition(extra=("prfm pldl1keep, [x14, #64]",)),
])
def test_gather_look_alikes_stay_quiet(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, loop), WORK])
    assert not of_kind(table, "gather-branch")


# -- cost relaxation over an array of structs ----------------------------------------------
def relaxation(updates: int = 500, scale: tuple[str, ...] = (
        "add x0, x13, x13, lsl #1", "lsl x0, x0, #2", "sub x0, x0, x13"),
        table: str = "ldr w5, [x5, #0x404]") -> list[tuple[int, str]]:
    """xz's price loop: price[len] + base against opts[cur + len].price (44-byte structs)."""
    n = 10000
    body = [(n, "add w13, w1, w21"), (n, "sub w5, w1, #2"), (n, "add x5, x3, x5"),
            *((n, s) for s in scale), (n, "add x5, x27, x5, lsl #2"), (n, table),
            (n, "add x0, x26, x0, lsl #2"), (n, "add w5, w16, w5"),
            (n, "ldr w13, [x0, #0xedc]"), (n, "cmp w5, w13")]
    at = 0x1000 + 4 * (len(body) + 3)
    return [*body, (n, f"b.hs {hex(at)}"), (updates, "str w5, [x0, #0xedc]"),
            (updates, "str w21, [x0, #0xee0]"), (n, "sub w1, w1, #1"), (n, "cmp w1, #1"),
            (n, "b.hi #0x1000")]


def test_a_rarely_updating_relaxation_over_structs_is_an_idea(tmp_path):
    profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, relaxation()), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    figures = {x.name: x.value for x in m.metrics}
    assert figures["struct stride"] == 44 and figures["update share"] == 5.0
    assert m.share == pytest.approx((16 * 10000 + 2 * 500) / profile.total)
    assert any("a fixed base" in c for c in m.checks)  # w16 is not loaded in the loop
    advice = advise(as_dict(m), "executions", None)
    assert "`cmhi v.4s`" in advice.recommendation and "`umaxv`" in advice.recommendation
    assert "44-byte structs" in advice.claim and "one `dup`" in advice.recommendation


@pytest.mark.parametrize("loop", [
    relaxation(updates=10000),  # updated every iteration: a transform, not a relaxation
    relaxation(scale=("lsl x0, x13, #1", "nop", "nop")),  # 8-byte pairs: not a wide struct
    relaxation(table="ldr w5, [x0, #0x404]"),  # an 11-byte stride: no contiguous cost table
])
def test_relaxation_look_alikes_stay_quiet(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, loop), WORK])
    assert not of_kind(table, "struct-relaxation")


# -- fixed-trip lookup sums ----------------------------------------------------------------
def price_loop(trips: float = 8, entries: int = 2000, bound: str = "cmp w5, w9",
               extra: tuple[str, ...] = (),
               index: str = "add w1, w1, w5, lsr #8") -> list[tuple[int, str]]:
    """LZMA's literal price: 8 trips per call over the symbol's bits."""
    n = int(trips * entries)
    body = ["lsl w4, w4, #1", "and w1, w2, w4", index, "lsl w5, w5, #1",
            "ldrh w1, [x6, x1, lsl #1]", "lsr w1, w1, #4", "ldrb w1, [x8, w1, uxtw]",
            "add w0, w0, w1", *extra, bound]
    return [(entries, "movz w0, #0"), (entries, "movz w9, #0xffff"), *((n, a) for a in body),
            (n, "b.ls #0x1008"), (entries, "ret")]


def test_a_constant_trip_lookup_sum_is_an_idea(tmp_path):
    profile, table = mechanisms_of(tmp_path, [("literal_price", 0x1000, price_loop())])
    (m,) = of_kind(table, "fixed-trip-sum")
    figures = {x.name: x.value for x in m.metrics}
    assert figures["trips per entry"] == 8 and figures["instructions per trip"] == 10
    assert figures["function calls"] == 2000
    assert m.share == pytest.approx(10 * 16000 / profile.total)
    assert any("a constant set before the loop (`movz w9, #0xffff`)" in c for c in m.checks)
    advice = advise(as_dict(m), "executions", None)
    assert "`#pragma GCC unroll 8`" in advice.recommendation
    assert "may differ" not in advice.recommendation
    assert advice.removes == 0.2  # the compare and branch of 10 instructions per trip


def test_a_bound_set_by_the_caller_is_said_to_vary(tmp_path):
    """`cmp w5, w3` with w3 an argument: the average is whole, the bound may not be."""
    _profile, table = mechanisms_of(tmp_path, [("sum", 0x1000, price_loop(bound="cmp w5, w3"))])
    (m,) = of_kind(table, "fixed-trip-sum")
    advice = advise(as_dict(m), "executions", None)
    assert "may differ between calls" in advice.recommendation


@pytest.mark.parametrize("loop", [
    price_loop(trips=7.5),  # trips vary between entries
    price_loop(trips=32),  # too many trips to unroll whole
    price_loop(extra=("strh w1, [x7], #2",)),  # stores: not a sum
    # the next index is the last lookup: a walk, which waits for memory every trip
    price_loop(index="add w1, w0, w5, lsr #8"),
    price_loop(bound="cmp w5, w0"),  # exits on the sum: the trips depend on the data
])
def test_fixed_trip_look_alikes_stay_quiet(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, loop)])
    assert not of_kind(table, "fixed-trip-sum")


def test_the_scatters_keys_are_not_said_to_be_branched_on_and_inner_cycles_are_counted(tmp_path):
    """A partition with an inner cycle and a bucket scatter: only the partition's keys are
    branched on (the scatter's key addresses a flag and a cursor, whose flag is branched
    on), and the iterations are the heads of two loops and one inner cycle."""
    _profile, table = mechanisms_of(tmp_path, [
        ("sort", 0x1000, two_scans()), ("sort", 0x2000, bucket_copy(at=0x2000, n=5000)),
        WORK])
    (m,) = of_kind(table, "gather-branch")
    claim = advise(as_dict(m), "executions", None).claim
    assert "18,000 keys, 18,100 loop iterations over 2 loops and 1 inner cycle (each by " \
        "head in the checks)" in claim
    assert "It branches on each key" not in claim
    assert "It branches on each partition key: `cbz w1, #0x108c`" in claim
    assert "bucket scatters, not partitions: their 5,000 keys only address loads and " \
        "stores; the own share" in claim


def test_a_lone_scatter_branches_on_what_its_key_addresses(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("copy", 0x1000, bucket_copy()), WORK])
    (m,) = of_kind(table, "gather-branch")
    claim = advise(as_dict(m), "executions", None).claim
    assert "It branches on each key" not in claim
    assert "It branches on what each key addresses, not on the key: `cbnz w4" in claim


SEARCH = [(10000, "ldr w6, [x14]"), (10000, "add w1, w13, w6"),
          (10000, "ldrb w1, [x2, w1, uxtw]"), (10000, "cmp w1, w12"), (10000, "b.eq #0x1030"),
          (9900, "add w0, w0, #1"), (9900, "add x14, x14, #4"), (9900, "cmp x14, x16"),
          (9900, "b.ne #0x1000"), (100, "mov w0, #0"), (100, "ret"), (100, "nop"),
          (100, "mov w0, w6"), (100, "ret")]  # stops at the first key equal to the pivot


@pytest.mark.parametrize(("loop", "values", "says"), [
    (scan([(4000, "mov w0, w1"), (4000, "bl #0x5000")], COUNT),
     GatherValues((), (), (Guard("`b.eq 0x1020` at 0x1010", CALL),)),
     ["A branch-free rewrite does not apply: `b.eq 0x1020` at 0x1010 (a call); it guards a "
      "loop or call"]),
    (SEARCH, GatherValues((), ("`b.eq` at 0x1010",), ()),
     ["`b.eq` at 0x1010 (exits the loop)", "`b.eq` at 0x1010 exits the loop"]),
    (scan([(4000, "add w8, w8, #1")], COUNT), GatherValues(("`b.eq` at 0x1010",), (), ()),
     ["decide branch-free where the branch only picks a value (`csel`/`cset`): `b.eq` at "
      "0x1010", "is a short diamond, only picking a value"]),
])  # fmt: skip
def test_a_reopened_index_gives_the_advice_the_branches_by_role(tmp_path, loop, values, says):
    from pcscope.index.store import open_workload

    mechanisms_of(tmp_path, [("f", 0x1000, loop), WORK])  # writes p.csv
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = of_kind(reopened, "gather-branch")
    found = m.value(GatherValues)
    assert found is not None
    assert (found.diamonds, found.exits, found.guards) == \
        (values.diamonds, values.exits, values.guards)
    advice = advise(as_dict(m), "executions", None)
    text = advice.claim + " " + advice.recommendation
    assert all(s in text for s in says), text


def test_an_unconditional_branch_back_is_taken_on_all_its_runs(tmp_path):
    """A loop closed by ``b`` back whose exit jumps to the row after it: that row's 100 runs
    are the exits', not a fall-through of the ``b``, which is taken on all its 900 runs; so
    1000 iterations over 100 entries, 10 per entry (not 1000 / 200)."""
    profile, _ = mechanisms_of(tmp_path, [("f", 0x1000, [
        (100, "mov w0, #0"), (1000, "ldrb w1, [x2], #1"), (1000, "cbz w1, #0x1014"),
        (900, "add w0, w0, #1"), (900, "b #0x1004"), (100, "ret")])])
    assert loop_trips(profile, 1, 4) == 10.0


def test_the_claim_names_the_loads_and_branches_from_the_values_not_the_checks(tmp_path):
    """The claim's index loads, key loads, branches on the key and their roles come from the
    mechanism's values: a mechanism whose list checks were reworded (here: dropped) says the
    same."""
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, scan([(4000, "add w8, w8, #1")],
                                                                  COUNT)), WORK])
    (m,) = of_kind(table, "gather-branch")
    said = advise(as_dict(m), "executions", None).claim
    unsaid = advise(as_dict(replace(m, checks=())), "executions", None).claim
    assert "(`ldr w6, [x14]`)" in said and "`b.eq` at 0x1010 (rejoining at" in said
    assert unsaid == said
