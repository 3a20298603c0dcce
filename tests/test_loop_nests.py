"""Work a loop recomputes from rarely changing inputs (pcscope.core.invariant_work), led with
before a layout or vector rewrite, and ideas about the inner and outer loops of one nest
naming each other (pcscope.core.loop_nests), each with a look-alike that stays quiet: an
index advancing on every iteration recomputes nothing, and two loops one after the other
are no nest."""

from __future__ import annotations

import re
from dataclasses import replace

from test_loop_shapes import WORK, mechanisms_of, of_kind
from test_natural_loops import two_heads
from test_store_shapes import as_dict

from pcscope.core import invariant_work, loop_nests, natural_loops
from pcscope.core.backends.advice import advise
from pcscope.core.mechanism_finder import _Finder
from pcscope.core.nest_values import NestValues
from pcscope.core.patterns import code_facts, find_patterns
from pcscope.core.recomputed_values import RecomputedValues


def priced_relaxation(advances: int) -> list[tuple[int, str]]:
    """A cost relaxation over 44-byte structs whose base is a distance price rebuilt on each
    of its 10000 iterations from ``matches[i]`` (a lookup through a slot table), while ``i``
    advances on ``advances`` of them."""
    n = 10000
    body = [(n, "add x4, x26, x2, lsl #3"), (n, "ldr w11, [x4, #0x2e0]"),
            (n, "lsr w6, w11, #6"), (n, "ldrb w6, [x15, w6, uxtw]"),
            (n, "ldr w16, [x26, x6, lsl #2]"),
            (n, "add w13, w1, w21"), (n, "sub w5, w1, #2"), (n, "add x5, x3, x5"),
            (n, "add x0, x13, x13, lsl #1"), (n, "lsl x0, x0, #2"), (n, "sub x0, x0, x13"),
            (n, "add x5, x27, x5, lsl #2"), (n, "ldr w5, [x5, #0x404]"),
            (n, "add x0, x26, x0, lsl #2"), (n, "add w5, w16, w5"),
            (n, "ldr w13, [x0, #0xedc]"), (n, "cmp w5, w13")]
    update = 0x1000 + 4 * (len(body) + 3)
    body += [(n, f"b.hs {hex(update)}"), (500, "str w5, [x0, #0xedc]"),
             (500, "str w21, [x0, #0xee0]"), (n, "cmp w1, w9")]
    step = 0x1000 + 4 * (len(body) + 3)
    return [*body, (n, f"b.ne {hex(step)}"), (advances, "add w14, w14, #1"),
            (advances, "mov w2, w14"),
            (n, "sub w1, w1, #1"), (n, "cmp w1, #1"), (n, "b.hi #0x1000")]


def test_a_price_rebuilt_from_a_rarely_advancing_index_is_hoisted_first(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                priced_relaxation(advances=2000)), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    figures = {x.name: x.value for x in m.metrics}
    # the address, the match load, the shift, the slot lookup and the price load
    assert figures[invariant_work.PER_ITERATION] == 5.0
    assert figures[invariant_work.INPUT_CHANGES] == 20.0  # i advances on 2000 of 10000
    assert any(c.startswith(invariant_work.CHECK) and "`ldrb w6, [x15, w6, uxtw]` at 0x100c"
               in c for c in m.checks)
    assert any(c.startswith(invariant_work.BLOCKED) and "`str w5, [x0, #0xedc]`" in c
               for c in m.checks)
    rec = advise(as_dict(m), "executions", None).recommendation
    assert rec.startswith("First hoist the work the loop recomputes: 5 of ")
    assert rec.index("First hoist") < rec.index("structure of arrays")
    assert "`str w5, [x0, #0xedc]` at 0x1048" in rec
    # where to compute it instead: where i advances
    assert "where those values change (`mov w2, w14` at 0x105c (2,000 times))" in rec
    # which rows the per-iteration total counts: the loop's own, its rarer paths included
    of = figures[invariant_work.LOOP_PER_ITERATION]
    assert of == (23 * 10000 + 2 * 500 + 2 * 2000) / 10000
    assert rec.startswith(f"First hoist the work the loop recomputes: 5 of the {of:g} "
                          "instructions per iteration at 0x1000–0x1068 (")
    assert f"{invariant_work.COUNTED}0x1000–0x1068 (27 rows, the rarer paths included)" \
        in m.checks


def test_the_per_iteration_total_names_the_inner_cycles_and_calls_it_leaves_out(tmp_path):
    """A cycle inside the loop (a store loop on the advancing path) and a call's callee are
    not the loop's own instructions: the sentence naming the rows says it leaves them out."""
    n, advances = 10000, 2000
    rows = priced_relaxation(advances)
    # after ``mov w2, w14``: a call, then a store loop of two trips; b.ne steps past them
    rows = [*rows[:21], (n, "b.ne #0x1070"), *rows[22:24], (advances, "bl #0x9000"),
            (2 * advances, "str w5, [x1], #0x2c"), (2 * advances, "cmp x1, x3"),
            (2 * advances, "b.ne #0x1064"), *rows[24:]]
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, rows), WORK])
    # the store loop is the idea now; the outer loop's rows are its heaviest site's
    assert f"{invariant_work.COUNTED}0x1000–0x1078 (28 rows, the rarer paths included; not " \
        "the inner cycle at 0x1064 (1.2 per iteration) nor the callees of its 1 call)" \
        in [c for m in table for c in m.checks]


def test_an_inner_loop_entered_at_its_test_is_an_inner_cycle_too(tmp_path):
    """A store loop entered by a jump to its test at the bottom (``b`` to the ``cmp``, as a
    ``while`` compiles unrotated) is a cycle of its own inside the loop, though its back
    edge's natural loop reaches the outer head through that jump."""
    n, advances = 10000, 2000
    rows = priced_relaxation(advances)
    rows = [*rows[:21], (n, "b.ne #0x1070"), *rows[22:24], (advances, "b #0x1068"),
            (advances, "str w5, [x1], #0x2c"), (2 * advances, "cmp x1, x3"),
            (2 * advances, "b.ne #0x1064"), *rows[24:]]
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, rows), WORK])
    assert f"{invariant_work.COUNTED}0x1000–0x1078 (28 rows, the rarer paths included; not " \
        "the inner cycle at 0x1064 (1 per iteration))" in [c for m in table for c in m.checks]


def test_an_index_advancing_on_every_iteration_recomputes_nothing(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                priced_relaxation(advances=10000)), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    assert not any(c.startswith(invariant_work.CHECK) for c in m.checks)
    assert advise(as_dict(m), "executions", None).recommendation.startswith("Keep the compared")


def nest(inner_head: int) -> list[tuple[int, str]]:
    """An outer loop of 1000 iterations around a 4-row inner loop (40 trips per entry)
    placed at ``inner_head`` rows from the start: inside the outer loop when that is before
    its back edge (row 9), after it otherwise."""
    outer = [(1000, "ldr w1, [x0], #4"), (1000, "add w2, w2, w1"), (1000, "mov w3, #0"),
             (1000, "nop"), (1000, "nop"), (1000, "nop"), (1000, "nop"), (1000, "nop"),
             (1000, "subs w4, w4, #1"), (1000, "b.ne #0x1000")]
    inner = [(40000, "ldrb w5, [x6, x3]"), (40000, "add w3, w3, #1"),
             (40000, "cmp w3, w7"), (40000, f"b.ne {hex(0x1000 + 4 * inner_head)}")]
    return outer[:inner_head] + inner + outer[inner_head:] if inner_head < len(outer) \
        else outer + inner


def linked(tmp_path, rows) -> dict[str, tuple[str, ...]]:
    """The checks two hand-made mechanisms get, one on each loop, keyed by their kind."""
    return {kind: m.checks for kind, m in linked_mechanisms(tmp_path, rows).items()}


def linked_mechanisms(tmp_path, rows) -> dict:
    """Two hand-made mechanisms, one on each loop, as the nest links them, by kind."""
    profile, _ = mechanisms_of(tmp_path, [("f", 0x1000, rows)])
    facts = code_facts(profile)
    finder = _Finder(profile, find_patterns(profile, facts), facts)
    row = {int(pc): r for r, pc in enumerate(profile.pc)}
    inner_head = next(r for r in range(len(profile)) if profile.asm(r).startswith("ldrb"))
    outer = finder.mechanism("gather-branch", [finder.site([row[0x1000]], row[0x1000])], [], [])
    inner = finder.mechanism("byte-loop", [finder.site(range(inner_head, inner_head + 4),
                                                       inner_head)], [], [])
    return {m.kind: m for m in loop_nests.link(finder, [outer, inner])}


def test_inner_and_outer_loops_of_one_nest_name_each_other(tmp_path):
    checks = linked(tmp_path, nest(inner_head=4))
    assert checks["gather-branch"] == (f"{loop_nests.INNER}`mech:byte-loop:0x1010`",)
    assert checks["byte-loop"] == (f"{loop_nests.OUTER}`mech:gather-branch:0x1000`",)


def test_the_nest_is_a_value_the_advice_reads(tmp_path):
    """Each loop of the nest carries the other's ID as a typed value, not only in a check."""
    found = linked_mechanisms(tmp_path, nest(inner_head=4))
    assert found["gather-branch"].value(NestValues) == NestValues(("mech:byte-loop:0x1010",), ())
    assert found["byte-loop"].value(NestValues) == NestValues((), ("mech:gather-branch:0x1000",))
    (tmp_path / "apart").mkdir()
    assert linked_mechanisms(tmp_path / "apart", nest(inner_head=10))["byte-loop"].values == ()


def test_two_loops_one_after_the_other_are_no_nest(tmp_path):
    checks = linked(tmp_path, nest(inner_head=10))
    assert checks == {"gather-branch": (), "byte-loop": ()}


def test_a_loop_too_small_for_an_idea_is_not_named(tmp_path):
    rows = nest(inner_head=4)
    rows[:4] = [(40, asm) for _, asm in rows[:4]]  # the outer loop's head: 40 of 160,000+
    checks = linked(tmp_path, rows)
    assert checks == {"gather-branch": (), "byte-loop": ()}


def test_a_nest_link_opens_the_claim_and_is_no_evidence(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                priced_relaxation(advances=10000)), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    plain = advise(as_dict(m), "executions", None)
    linked = replace(m, checks=(*m.checks, f"{loop_nests.OUTER}`mech:gather-branch:0x2000`"),
                     values=(*m.values, NestValues((), ("mech:gather-branch:0x2000",))))
    advice = advise(as_dict(linked), "executions", None)
    assert advice.claim.startswith("One loop nest with other ideas: its outer loop is "
                                   "`mech:gather-branch:0x2000`.")
    assert advice.confidence == plain.confidence


def clamped_relaxation(compare: str = "cmp w1, #5", constant: str = "mov w0, #5",
                       select: str = "csel w0, w1, w0, ls") -> list[tuple[int, str]]:
    """A cost relaxation whose 10000 iterations each step a length ``w1`` by one and price
    it twice: a length price loaded through ``w1`` itself, and a distance price from a
    table row chosen by min(``w1``, 5) (``compare`` + ``csel``) and a slot of ``matches[i]``,
    while ``i`` advances on 2000 of them."""
    n = 10000
    body = [(n, "add x4, x26, x2, lsl #3"), (n, "ldr w11, [x4, #0x2e0]"),
            (n, "lsr w6, w11, #6"), (n, "ldrb w6, [x15, w6, uxtw]"),
            (n, compare), (n, constant), (n, select),
            (n, "sub w0, w0, #2"), (n, "lsl x0, x0, #6"), (n, "add x0, x0, x6"),
            (n, "add x0, x25, x0, lsl #2"), (n, "ldr w16, [x0, #8]"),
            (n, "sub w5, w1, #2"), (n, "add x5, x3, x5"), (n, "add x5, x27, x5, lsl #2"),
            (n, "ldr w5, [x5, #0x404]"), (n, "add w13, w1, w21"),
            (n, "add x8, x13, x13, lsl #1"), (n, "lsl x8, x8, #2"), (n, "sub x8, x8, x13"),
            (n, "add x8, x26, x8, lsl #2"), (n, "add w5, w16, w5"),
            (n, "ldr w12, [x8, #0xedc]"), (n, "cmp w5, w12")]
    update = 0x1000 + 4 * (len(body) + 3)
    body += [(n, f"b.hs {hex(update)}"), (500, "str w5, [x8, #0xedc]"),
             (500, "str w21, [x8, #0xee0]"), (n, "cmp w1, w9")]
    step = 0x1000 + 4 * (len(body) + 3)
    return [*body, (n, f"b.ne {hex(step)}"), (2000, "add w14, w14, #1"),
            (2000, "mov w2, w14"),
            (n, "add w1, w1, #1"), (n, "cmp w1, w10"), (n, "b.lo #0x1000")]


def test_work_reading_a_length_only_through_a_saturating_clamp_is_hoisted_too(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, clamped_relaxation()),
                                               WORK])
    (m,) = of_kind(table, "struct-relaxation")
    figures = {x.name: x.value for x in m.metrics}
    # min(w1, 5) - 2, the row offset, the slot added, the address and the slot price load
    assert figures[invariant_work.CLAMPED_PER_ITERATION] == 5.0
    assert f"{invariant_work.CLAMPED}`csel w0, w1, w0, ls` at 0x1018 is 5 for w1 ≥ 5 " \
        "(`cmp w1, #5`)" in m.checks
    assert any(c.startswith(invariant_work.CLAMPED_WORK + "`sub w0, w0, #2` at 0x101c")
               and c.endswith("`ldr w16, [x0, #8]` at 0x102c") for c in m.checks)
    # the checks are the whole record: every instruction of both sets, in address order
    for prefix, n in ((invariant_work.CHECK, 4), (invariant_work.CLAMPED_WORK, 5)):
        listed = next(c.removeprefix(prefix) for c in m.checks if c.startswith(prefix))
        pcs = [int(pc, 16) for pc in re.findall(r"` at (0x[0-9a-f]+)", listed)]
        assert len(pcs) == n and pcs == sorted(pcs) and "more" not in listed
    rec = advise(as_dict(m), "executions", None).recommendation
    assert rec.startswith("First hoist the work the loop recomputes: 4 of the ")
    assert "Hoist also what the clamp `csel w0, w1, w0, ls` at 0x1018 fixes once saturated " \
        "(5 for w1 ≥ 5): `ldr w16, [x0, #8]` at 0x102c and 4 more" in rec
    # more: the clamp's work is beyond the recomputed work, never a part of it
    assert "and 4 more (5 more per iteration, " in rec
    assert "at most): compute it where its other inputs change; only `ldr w5" \
        in rec
    # the length price stays: it is loaded through w1 itself
    assert "; only `ldr w5, [x5, #0x404]` at 0x103c and 1 more stay per iteration" in rec
    assert "Counts cannot tell how often it saturates (a `csel` runs the same either way): " \
        "count how often `cmp w1, #5` at 0x1010 finds w1 ≥ 5." in rec
    assert rec.index("Hoist also") < rec.index("structure of arrays")


def test_a_maximum_with_minus_one_from_movn_is_a_clamp(tmp_path):
    """`movn w0, #0` writes -1: max(w1, -1) by a signed select is -1 for w1 ≤ -1."""
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, clamped_relaxation(
        "cmp w1, #0", "movn w0, #0", "csel w0, w1, w0, ge")), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    assert f"{invariant_work.CLAMPED}`csel w0, w1, w0, ge` at 0x1018 is -1 for w1 ≤ -1 " \
        "(`cmp w1, #0`)" in m.checks


def test_a_select_against_a_changing_bound_makes_nothing_invariant(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                clamped_relaxation("cmp w1, w17")), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    assert not any(c.startswith(invariant_work.CLAMPED) for c in m.checks)
    assert invariant_work.CLAMPED_PER_ITERATION not in {x.name for x in m.metrics}
    assert "clamp" not in advise(as_dict(m), "executions", None).recommendation


def test_a_minimum_with_an_immediate_is_a_clamp_too(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, clamped_relaxation(
        "nop", "nop", "umin w0, w1, #5")), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    assert f"{invariant_work.CLAMPED}`umin w0, w1, #5` at 0x1018 is 5 for w1 ≥ 5" in m.checks
    assert f"{invariant_work.NOT_COUNTED}a minimum or maximum runs the same either way; count " \
        "how often `umin w0, w1, #5` at 0x1018 finds w1 ≥ 5" in m.checks


def test_a_select_of_a_constant_short_of_the_compared_bound_is_no_clamp(tmp_path):
    # min(w1, 5) for w1 <= 9, else 5: the result still changes while w1 runs from 5 to 9
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                clamped_relaxation("cmp w1, #9")), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    assert not any(c.startswith(invariant_work.CLAMPED) for c in m.checks)


def test_a_loop_entered_below_its_head_counts_its_entries_where_they_come_in(tmp_path):
    """The loop of two heads (test_natural_loops.two_heads) is counted at its busier head
    (0x1010), entered at 0x100c and 0x103c: its entries are the 1000 runs of the code before
    it, not what reaches the head from outside its cycle."""
    rows = two_heads()
    rows[5] = (20000, "ldr w1, [x2, #0x10]")  # a fixed slot: changes only on entry
    profile, _ = mechanisms_of(tmp_path, [("f", 0x1000, rows)])
    facts = code_facts(profile)
    finder = _Finder(profile, find_patterns(profile, facts), facts)
    (loop,) = finder.function_loops
    work = invariant_work.read(profile, finder.op, loop.head, loop.rows, (),
                               natural_loops.entries(profile, facts, loop.rows))
    assert work is not None and work.iterations == 20000 and work.entries == 1000
    assert work.rows == (profile.row_of(0x1014),)


def chain_search(above: str = "b #0x1018") -> list[tuple[int, str]]:
    """A chain walk laid out as a compiler lays out a hash chain search: the code before it
    jumps (``above``) to the candidate test at 0x1018, which a conditional branch of the
    walk's step (the budget's ``b.eq`` exit at 0x1014) falls into too. 100 entries, 1000
    tests: 950 step on (the ``b.ne`` back to 0x1008), 50 match; 50 steps run out."""
    return [(100, "mov w6, #8"), (100, above),
            (950, "and w1, w1, w12"), (950, "ldrh w1, [x11, x1, lsl #1]"),
            (950, "subs w6, w6, #1"), (950, "b.eq #0x1028"),
            (1000, "ldrb w5, [x2, #0x10]"), (1000, "cmp w5, w1"), (1000, "b.ne #0x1008"),
            (50, "mov w0, w1"), (100, "ret")]


def recomputed_work(tmp_path, rows: list[tuple[int, str]]) -> invariant_work.Recomputed:
    profile, _ = mechanisms_of(tmp_path, [("f", 0x1000, rows)])
    facts = code_facts(profile)
    finder = _Finder(profile, find_patterns(profile, facts), facts)
    (loop,) = finder.function_loops
    work = invariant_work.read(profile, finder.op, loop.head, loop.rows, (),
                               natural_loops.entries(profile, facts, loop.rows))
    assert work is not None
    return work


def test_a_loop_entered_by_a_jump_to_a_row_a_branch_falls_into_counts_that_jump(tmp_path):
    """The jump from outside (100 runs) comes in at a row the walk's exit test also falls
    into: the entries are that jump's runs, not the candidate test's count less all of it
    taken as the fall-through of the branch above (0)."""
    work = recomputed_work(tmp_path, chain_search())
    assert work.iterations == 950 and work.entries == 100


def test_a_branch_both_of_whose_sides_enter_the_loop_counts_all_its_runs(tmp_path):
    """The code before the walk jumps to the candidate test on 70 of its 100 runs and falls
    into the walk's step on 30: both sides come in, so the entries are its 100 runs (not 30,
    the step's count less the back edge's, with the test's runs all taken from the step)."""
    rows = chain_search("b.hi #0x1018")
    rows[2:6] = [(980, "and w1, w1, w12"), (980, "ldrh w1, [x11, x1, lsl #1]"),
                 (980, "subs w6, w6, #1"), (980, "b.eq #0x1028")]
    assert recomputed_work(tmp_path, rows).entries == 100


def split_entry(leave: str = "ret") -> list[tuple[int, str]]:
    """A walk whose candidate test (0x1020) a branch before it (0x1004) jumps to on 60 of its
    70 runs; its other 10 fall to 0x1008, a row the first branch jumps to on 30 of its 100
    runs (so 0x1008's count mixes the two paths), which ends with ``leave``."""
    return [(100, "cbz w4, #0x1008"), (70, "cbz w3, #0x1020"),
            (40, "add w0, w0, #1"), (40, leave),
            (950, "and w1, w1, w12"), (950, "ldrh w1, [x11, x1, lsl #1]"),
            (950, "subs w6, w6, #1"), (950, "b.eq #0x1030"),
            (960, "ldrb w5, [x2, #0x10]"), (960, "cmp w5, w1"), (960, "b.ne #0x1010"),
            (10, "mov w0, w1"), (60, "ret")]


def test_a_branch_whose_other_side_joins_another_path_is_counted_through_that_path(tmp_path):
    """0x1008's count mixes the two branches' paths, but the first branch's fall-through row
    is reached only from it (70 of 100: it jumps 30), so 0x1004 falls 40 - 30 = 10 times and
    jumps into the walk 60 times: 60 entries (not 0, the test's count less all of it taken
    as the fall-through of the walk's exit test above it)."""
    assert recomputed_work(tmp_path, split_entry()).entries == 60


def test_entries_the_counts_cannot_tell_keep_the_loops_own_answer(tmp_path):
    """The same code leaving through a register jump (``br``, which may reach any row of the
    function, the walk's test too): no row's count is its edges in, so how often 0x1004 jumps
    into the walk is not known; the entries stay what the loop's own rows say (its heads'
    counts less what the loop sends them, here 0), not a difference of mixed counts. A guard:
    it passes on the code before entry_runs too."""
    assert recomputed_work(tmp_path, split_entry("br x9")).entries == 0


def test_a_reopened_index_gives_the_advice_the_recomputed_and_the_clamped_work(tmp_path):
    from pcscope.index.store import open_workload

    mechanisms_of(tmp_path, [("optimum", 0x1000, clamped_relaxation()), WORK])  # p.csv
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = of_kind(reopened, "struct-relaxation")
    work = m.value(RecomputedValues)
    assert work is not None and len(work.instructions) == 4 and work.span == "0x1000–0x1084"
    assert work.clamp is not None and work.clamp.clamp == "`csel w0, w1, w0, ls` at 0x1018"
    assert work.clamp.saturates == "5 for w1 ≥ 5" and len(work.clamp.work) == 5
    assert work.clamp.work[0] == "`sub w0, w0, #2` at 0x101c"
    assert work.clamp.count == ("count how often `cmp w1, #5` at 0x1010 finds w1 ≥ 5",)
    rec = advise(as_dict(m), "executions", None).recommendation
    assert rec.startswith("First hoist the work the loop recomputes: 4 of the ")
    assert "instructions per iteration at 0x1000–0x1084 (" in rec
    assert "Hoist also what the clamp `csel w0, w1, w0, ls` at 0x1018 fixes once saturated " \
        "(5 for w1 ≥ 5): `ldr w16, [x0, #8]` at 0x102c and 4 more" in rec
    assert "Counts cannot tell how often it saturates (a `csel` runs the same either way): " \
        "count how often `cmp w1, #5` at 0x1010 finds w1 ≥ 5." in rec


def call_in_loop(held: str) -> list[tuple[int, str]]:
    """A loop of 10000 iterations (100 entries) that loads a pointer from a fixed slot into
    ``held``, calls a function, then loads through ``held``."""
    return [(100, "mov w21, #0"),
            (10000, f"ldr {held}, [x20, #0x8]"), (10000, "bl #0x9000"),
            (10000, f"ldr w5, [{held}, #0x10]"), (10000, "add w21, w21, w5"),
            (10000, "subs w22, w22, #1"), (10000, "b.ne #0x1004"), (100, "ret")]


def test_a_value_in_a_caller_saved_register_is_not_read_across_a_call(tmp_path):
    """A call may change x0-x18 (AAPCS64; shapes.sets, the rule chain_walk and
    keyed_lookups read): the load through x1 after it reads what the call left, which may
    change on every call, so it is not recomputed work; through the callee-saved x19 it is."""
    for held, rows in (("x1", (1,)), ("x19", (1, 3))):  # x1: the slot load only
        (tmp_path / held).mkdir()
        assert recomputed_work(tmp_path / held, call_in_loop(held)).rows == rows


def test_the_recomputed_and_the_clamped_work_are_counted_together_too(tmp_path):
    """The clamp's work is taken from what the recomputed work leaves, so the two share no
    instruction and their sizes add: 4 + 5 = 9 of the loop's 30.5 instructions per
    iteration (29.5% of it; 90,000 of the run's 325,000 executions, 27.692%)."""
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, clamped_relaxation()),
                                               WORK])
    (m,) = of_kind(table, "struct-relaxation")
    figures = {x.name: x.value for x in m.metrics}
    assert figures[invariant_work.HOISTED_PER_ITERATION] == 9.0
    assert figures[invariant_work.HOISTED_LOOP_SHARE] == 29.5
    assert figures[invariant_work.HOISTED_SHARE] == 27.692
    assert f"{invariant_work.TOGETHER}9 of the 30.5 instructions per iteration (29.5% of the " \
        "loop's, 27.692% of the total) at most" in m.checks


def recomputed_with_callee(tmp_path, callee: list[tuple[int, str]]) -> tuple[int, ...]:
    """The recomputed rows of call_in_loop("x1") calling ``callee`` (at 0x9000)."""
    profile, _ = mechanisms_of(tmp_path, [("f", 0x1000, call_in_loop("x1")),
                                          ("g", 0x9000, callee)])
    facts = code_facts(profile)
    finder = _Finder(profile, find_patterns(profile, facts), facts)
    (loop,) = finder.function_loops
    work = invariant_work.read(profile, finder.op, loop.head, loop.rows, (),
                               natural_loops.entries(profile, facts, loop.rows))
    assert work is not None
    return work.rows


def test_a_callee_whose_code_leaves_a_register_alone_keeps_its_value(tmp_path):
    """The callee's whole code is in the profile and writes only x0 and x2: the compiler
    that keeps the pointer in x1 across the call knows that (GCC's -fipa-ra), and so do
    the counts, so the load through x1 after it is recomputed work. A callee writing x1, or
    calling on (its callee unseen), leaves the call read the ABI's way."""
    for name, callee, rows in (
            ("keeps", [(10000, "add x0, x0, #1"), (10000, "cbz x0, #0x900c"),
                       (9000, "mov x2, #0"), (10000, "ret")], (1, 3)),
            ("writes", [(10000, "add x0, x0, #1"), (10000, "mov x1, #0"), (10000, "ret")],
             (1,)),
            ("calls", [(10000, "add x0, x0, #1"), (10000, "bl #0xa000"), (10000, "ret")],
             (1,))):
        (tmp_path / name).mkdir()
        assert recomputed_with_callee(tmp_path / name, callee) == rows, name
