"""Per-operation call trees (pcscope.core.call_cohorts): many small functions entered
exactly as often as each other (or a whole number of times as often) are one mechanism;
the function doing the work, functions whose counts only look alike, and too few
functions stay out."""

from __future__ import annotations

import csv

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.call_cohorts import CALLERS_CHECK, SETUP_CHECK
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanism_finder import find_mechanisms
from pcscope.core.patterns import code_facts, find_patterns
from pcscope.core.readers.profile_csv import read_profile
from pcscope.core.tree_values import OneShot, Pair, TreeValues
from tests.test_mechanism_rules import STUB, mechanisms_of


def small(n: int) -> list[str]:
    return [f"add x{i % 8}, x{i % 8}, #1" for i in range(n - 1)] + ["ret"]


def tree(counts: list[int], size: int = 10) -> list:
    blocks = [(f"f{i}", 0x10000 * (i + 1), c, small(size)) for i, c in enumerate(counts)]
    work = ("kernel", 0x900000, counts[0], small(300))  # the operation's work: 300 per call
    return [*blocks, work, ("main", 0x800000, 1, small(4))]


def operations(tmp_path, blocks):
    profile, table = mechanisms_of(tmp_path, blocks)
    return profile, [m for m in table if m.kind == "per-operation"]


def test_small_functions_entered_once_per_operation_are_one_tree(tmp_path):
    counts = [2000] * 8 + [4000, 2001]  # one called twice per operation; one from start-up too
    profile, (m,) = operations(tmp_path, tree(counts))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["operations"] == 2000 and figures["functions per operation"] == 10
    assert figures["calls per operation"] == 11
    assert "kernel" not in m.functions  # over 256 instructions per call: the work
    assert m.share == pytest.approx(10 * sum(counts) / profile.total)
    assert m.sites[0].pc == 0x10000 * 9 + 4 * 9  # keyed on the function's ret
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None and advice.rule == "per-operation"
    assert "reuse the context" in advice.recommendation
    assert "allocator" not in advice.claim  # no member is one


def test_counts_that_only_look_alike_are_no_tree(tmp_path):
    _profile, found = operations(tmp_path, tree([2000 + 37 * i for i in range(10)]))
    assert found == []


def test_too_few_functions_are_no_tree(tmp_path):
    _profile, found = operations(tmp_path, tree([2000] * 7))
    assert found == []


def test_members_called_a_little_more_from_elsewhere_join_and_look_alikes_stay_out(tmp_path):
    # two more calls per operation plus 0.5 % from start-up and outside callers join (an
    # allocator); counts 5 % above a multiple belong to something else
    counts = [2000] * 8 + [4020, 2100, 4200]
    _profile, (m,) = operations(tmp_path, tree(counts))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["functions per operation"] == 9 and figures["calls per operation"] == 10
    assert "f8" in m.functions and "f9" not in m.functions and "f10" not in m.functions


def test_allocator_calls_per_operation_are_named(tmp_path):
    # malloc and free twice per operation, plus a few calls from start-up; CRYPTO_malloc wraps
    # malloc but is not the allocator itself
    blocks = tree([2000] * 8) + [("malloc", 0x700000, 4008, small(10)),
                                 ("free", 0x710000, 4006, small(12)),
                                 ("CRYPTO_malloc", 0x720000, 4008, small(5))]
    _profile, (m,) = operations(tmp_path, blocks)
    assert {"malloc", "free", "CRYPTO_malloc"} <= set(m.functions)
    advice = advise(builtins_of(m), "executions", None)
    assert "The C allocator per operation: 2 malloc + 2 free = 44 instructions" in advice.claim


def test_hidden_helpers_entered_as_often_as_an_allocator_routine_are_its_part(tmp_path):
    # a hidden function entered once per free (the allocator's internal free) is part of the
    # allocator's cost; a hidden member entered 0.6 % more often than malloc is not
    blocks = tree([2000] * 8) + [("malloc", 0x700000, 4008, small(10)),
                                 ("free", 0x710000, 4006, small(12)),
                                 ("<unknown_7>", 0x720000, 4005, small(30)),
                                 ("<unknown_8>", 0x730000, 4030, small(5))]
    _profile, (m,) = operations(tmp_path, blocks)
    assert {"<unknown_7>", "<unknown_8>"} <= set(m.functions)
    advice = advise(builtins_of(m), "executions", None)
    assert "The C allocator per operation: 2 malloc + 2 free, with the hidden functions of " \
           "their module entered as often as they are (2 × <unknown_7>) = 104 instructions" \
           in advice.claim
    per_op = {x.name: x.value for x in m.metrics}["instructions per operation"]
    assert advice.removes == pytest.approx(104 / per_op, abs=1e-3)


def test_near_equal_entry_counts_name_the_operations(tmp_path):
    # no two functions share one exact count, but all lie within 0.1 % of each other (other
    # callers add a few entries): the smallest count is the number of operations
    counts = [2000, 2001, 2002, 2003, 2000 + 1, 2002, 2001, 2004]
    _profile, (m,) = operations(tmp_path, [*tree(counts)[:-2], ("main", 0x800000, 1, small(4))])
    assert {x.name: x.value for x in m.metrics}["operations"] == 2000


CLEARED = [*small(10)[:-1], "movz x2, #0", "movz x3, #0", "movz x4, #0", "ret"]


def test_per_call_figures_are_net_of_rows_other_ideas_count(tmp_path):
    # three members end in register-clearing runs (another mechanism counts those rows): the
    # tree counts the rest of each call and names the mechanism holding the runs
    blocks = tree([2000] * 8)
    blocks[:3] = [(name, at, n, CLEARED) for name, at, n, _ in blocks[:3]]
    _profile, table = mechanisms_of(tmp_path, blocks)
    zeroing = next(m for m in table if m.kind == "return-zeroing")
    (m,) = [m for m in table if m.kind == "per-operation"]
    heaviest = next(c for c in m.checks if c.startswith("heaviest"))
    assert f"f0 (1× per operation, 10 instructions per call counted here; 3 more in " \
           f"`{zeroing.id}`)" in heaviest
    assert "f3 (1× per operation, 10 instructions per call counted here)" in heaviest
    advice = advise(builtins_of(zeroing), "executions", None)
    assert advice.removes == 1.0  # every run is in a small function: exempting deletes it


def vector(n: int) -> list[str]:
    return [f"pmull v{i % 8}.1q, v{i % 8}.1d, v9.1d" if i % 2 else
            f"eor v{i % 8}.16b, v{i % 8}.16b, v10.16b" for i in range(n - 1)] + ["ret"]


@pytest.mark.parametrize(("k", "size", "setup"), [
    (1, 100, True),  # a fixed-size vector computation once per operation: key set-up
    (2, 100, False),  # twice per operation: not the one set-up of an operation
    (1, 16, False),  # short: a copy of the initial state, not a computation
])  # fmt: skip
def test_vector_code_once_per_operation_is_named_as_set_up(tmp_path, k, size, setup):
    blocks = [*tree([2000] * 8), ("gfinit", 0x700000, 2000 * k, vector(size))]
    _profile, (m,) = operations(tmp_path, blocks)
    assert "gfinit" in m.functions
    advice = advise(builtins_of(m), "executions", None)
    assert ("set the key once" in advice.recommendation) is setup
    assert any(c.startswith(f"{SETUP_CHECK} ") and "gfinit (100 instructions per call)" in c
               for c in m.checks) is setup
    figures = {x.name: x.value for x in m.metrics}
    # the upside counts what the advice deletes: the set-up, when it is one
    assert advice.removes == (pytest.approx(100 / figures["instructions per operation"], abs=1e-3)
                              if setup else None)


def test_upside_of_a_tree_with_allocator_calls_is_their_part(tmp_path):
    blocks = tree([2000] * 8) + [("malloc", 0x700000, 4008, small(10)),
                                 ("free", 0x710000, 4006, small(12))]
    _profile, (m,) = operations(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    assert advice.removes == pytest.approx(44 / (8 * 10 + 44), abs=1e-3)


def test_a_tree_of_long_calls_is_the_work_not_plumbing(tmp_path):
    # the same eight functions once per operation, 100 instructions per call each: the
    # operation's work split over functions (no idea); 60 per call is plumbing
    assert operations(tmp_path, tree([2000] * 8, size=100))[1] == []
    assert len(operations(tmp_path, tree([2000] * 8, size=60))[1]) == 1


@pytest.mark.parametrize(("count", "shared"), [
    (3 * 2000 + 2500 + 3, True),  # 3 calls per operation of one tree, 1 of the other
    (3 * 2000 + 2500 + 250, False),  # near no sum of multiples: another caller's function
])  # fmt: skip
def test_a_callee_of_two_trees_joins_the_larger_part_and_both_name_it(tmp_path, count, shared):
    other = [(f"g{i}", 0x200000 + 0x10000 * i, 2500, small(10)) for i in range(8)]
    blocks = [*tree([2000] * 8), *other, ("clear", 0x700000, count, small(20))]
    _profile, found = operations(tmp_path, blocks)
    first, second = sorted(found, key=lambda m: m.metrics[0].value)
    assert ("clear" in first.functions) is shared and "clear" not in second.functions
    if shared:
        figures = {x.name: x.value for x in first.metrics}
        # 3 of its 3.5 calls per operation of the first tree's are its: 6/8.5 of its work
        assert figures["instructions per operation"] == round((80 * 2000 + 20 * count * 6000
                                                               / 8500) / 2000)
        assert f"clear (3× here, 1× in `{second.id}`)" in \
            advise(builtins_of(first), "executions", None).claim
        assert f"clear (1× here, in `{first.id}`)" in \
            advise(builtins_of(second), "executions", None).claim


@pytest.mark.parametrize(("entry", "split"), [
    ([], True),  # nothing in the label jumps past the ret: the next row is another routine's entry
    (["cbz x0, 0x700148"], False),  # a branch of the label reaches it: one function, early return
])  # fmt: skip
def test_a_label_covering_two_routines_is_split_at_the_ret(tmp_path, entry, split):
    # a hidden label: an 82-instruction vector routine once per operation, then after its
    # ret a 10-instruction routine entered 3 times per operation
    first = [*entry, *vector(82 - len(entry))]
    blocks = [*tree([2000] * 8), ("<unknown_5>", 0x700000, 2000, first),
              ("<unknown_5>", 0x700000 + 4 * 82, 6000, small(10))]
    _profile, (m,) = operations(tmp_path, blocks)
    setup = next(c for c in m.checks if c.startswith(SETUP_CHECK))
    heaviest = next(c for c in m.checks if c.startswith("heaviest"))
    if split:
        assert "<unknown_5> (82 instructions per call)" in setup
        assert "<unknown_5>+0x148 (3× per operation, 10 instructions per call" in heaviest
    else:
        assert "<unknown_5> (112 instructions per call)" in setup and "+0x148" not in heaviest


@pytest.mark.parametrize(("names", "counts", "named"), [
    (("foo_new", "foo_free"), (2000, 2000), True),  # an object made and freed per operation
    (("foo_up_ref", "foo_free"), (2000, 2000), True),  # a reference taken and dropped
    (("foo_new", "bar_free"), (2000, 2000), False),  # two stems: no pair
    (("foo_new", "foo_free"), (2000, 4000), False),  # freed twice per make: not one object
    (("<unknown_1>", "<unknown_2>"), (2000, 2000), False),  # hidden names never pair
])  # fmt: skip
def test_create_destroy_pairs_are_named_in_the_recommendation(tmp_path, names, counts, named):
    # the claim's "Heaviest" list may be shortened: the pair must be in the advice itself
    blocks = tree([2000] * 8) + [(name, 0x700000 + 0x10000 * i, n, small(5))
                                 for i, (name, n) in enumerate(zip(names, counts, strict=True))]
    _profile, (m,) = operations(tmp_path, blocks)
    assert set(names) <= set(m.functions)
    advice = advise(builtins_of(m), "executions", None)
    pair = f"{names[0]}/{names[1]}, 1× per operation"
    assert (pair in advice.recommendation) is named
    assert ("instead of making and releasing each on every operation"
            in advice.recommendation) is named
    assert ("the functions entered once per operation, in the mechanism's checks"
            in advice.recommendation) is not named
    assert "above" not in advice.recommendation


def allocator(*extra) -> list:
    """malloc and free twice per operation, a few calls more from start-up."""
    return [*tree([2000] * 8), ("malloc", 0x700000, 4002, small(10)),
            ("free", 0x710000, 4004, small(12)), *extra]


def calling(target: int, before: int = 1, after: int = 2) -> list[str]:
    """A function of ``before`` + ``after`` + 2 instructions calling ``target`` once."""
    return [*small(before + 1)[:-1], f"bl {hex(target)}", *small(after + 1)]


# a PLT holding two stubs; the second (at 0x4010) runs 4,000 times, so it leads to malloc or
# free (4,002 and 4,004 entries: one of the two, either way the allocator)
PLT = [("plt", 0x4000, 10, STUB), ("plt", 0x4010, 4000, STUB)]


@pytest.mark.parametrize(("blocks", "wraps"), [
    ([("xalloc", 0x740000, 4000, calling(0x700000))], True),  # calls malloc every entry
    ([("xalloc", 0x740000, 4000, calling(0x4010)), *PLT], True),  # through a PLT stub
    # through a stub named as its own function (malloc@plt): read through, not the callee
    ([("xalloc", 0x740000, 4000, calling(0x4000)), ("malloc@plt", 0x4000, 4000, STUB)], True),
    # a wrapper of the wrapper: calls xalloc, which calls malloc
    ([("xalloc", 0x740000, 4000, calling(0x700000)),
      ("ctx_new", 0x750000, 2000, ["movz x0, #0x48", "b 0x740000"])], True),
    ([("xalloc", 0x740000, 4000, calling(0x700000, after=40))], False),  # long: does more
    ([("xalloc", 0x740000, 4000, calling(0x730000)),
      ("other", 0x730000, 4000, small(10))], False),  # calls no allocator
    # calls a routine jumping through a pointer it loads (no PLT stub or veneer: where it
    # leads is not read from the counts, though malloc is entered about as often)
    ([("xalloc", 0x740000, 4000, calling(0x730000)),
      ("thunk", 0x730000, 4000, ["ldr x9, [x0, #8]", "br x9"])], False),
    # calls malloc on half its entries
    ([("xalloc", 0x740000, 4000, ["stp x29, x30, [sp, #-0x10]!", "cbz x0, 0x740010"]),
      ("xalloc", 0x740008, 2000, ["bl 0x700000", "nop"]),
      ("xalloc", 0x740010, 4000, ["ldp x29, x30, [sp], #0x10", "ret"])], False),
])  # fmt: skip
def test_short_members_calling_the_allocator_every_entry_are_its_wrappers(tmp_path, blocks,
                                                                          wraps):
    _profile, (m,) = operations(tmp_path, allocator(*blocks))
    assert "xalloc" in m.functions
    advice = advise(builtins_of(m), "executions", None)
    listed = ("the program's wrappers calling them, or another wrapper, on every entry in at "
              "most 32 instructions (2 × xalloc (" in advice.claim)  # the heaviest wrapper first
    assert listed is wraps
    assert ("1 × ctx_new (2 each)" in advice.claim) is (wraps and len(blocks) == 2
                                                       and blocks[1][0] == "ctx_new")
    figures = {x.name: x.value for x in m.metrics}
    wrapper = sum(len(lines) for name, _at, n, lines in blocks if name == "xalloc" and n == 4000)
    assert figures["deletable instructions per operation"] == (44 + 2 * wrapper + (
        2 if any(b[0] == "ctx_new" for b in blocks) else 0) if wraps else 44)


@pytest.mark.parametrize(("callee", "part"), [
    (0x700000, True),  # calls the vector set-up every entry: part of it
    (0x720000, False),  # calls a scalar member: not set-up
])  # fmt: skip
def test_a_member_calling_the_set_up_every_entry_is_set_up(tmp_path, callee, part):
    blocks = [*tree([2000] * 8), ("gfinit", 0x700000, 2000, vector(100)),
              ("plain", 0x720000, 2000, small(10)),
              ("initkey", 0x740000, 2000, calling(callee, after=6))]
    _profile, (m,) = operations(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    assert ("part of that set-up: initkey (9 instructions per call, calls gfinit)"
            in advice.claim) is part
    assert ("`gfinit`, `initkey`) is recomputed" in advice.recommendation) is part
    figures = {x.name: x.value for x in m.metrics}
    assert figures["deletable instructions per operation"] == (109 if part else 100)


def null_checked(at: int, entries: int, live: int) -> list:
    """A release routine entered ``entries`` times that returns at once on a null pointer
    and does its work ``live`` times."""
    return [("foo_free", at, entries, [f"cbz x0, {hex(at + 20)}"]),
            ("foo_free", at + 4, live, small(5)[:-1]),
            ("foo_free", at + 20, entries, ["ret"])]


@pytest.mark.parametrize(("entries", "live", "named"), [
    (4000, 2000, True),  # freed twice per make, once on a null pointer: one object
    (4000, 4000, False),  # freed twice per make, both real: not one object
])  # fmt: skip
def test_a_release_called_on_null_too_pairs_by_its_live_calls(tmp_path, entries, live, named):
    blocks = [*tree([2000] * 8), ("foo_up_ref", 0x700000, 2000, small(5)),
              *null_checked(0x710000, entries, live)]
    _profile, (m,) = operations(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    assert ("foo (foo_up_ref/foo_free, 1× per operation; foo_free is entered 2× and returns "
            "at its null check on the rest)" in advice.recommendation) is named


@pytest.mark.parametrize(("names", "named"), [
    (("Dig", "DigInit_ex", "DigUpdate", "DigFinal_ex"), True),  # the one-shot and its parts
    (("Dig", "Dig_init", "Dig_update", "Dig_final"), True),
    (("Dig", "DigInit_ex", "DigUpdate", "DigCleanup"), False),  # no Final: no stream
    (("Dig", "DagInit_ex", "DigUpdate", "DigFinal_ex"), False),  # another stem
])  # fmt: skip
def test_a_one_shot_call_with_its_streaming_parts_is_named(tmp_path, names, named):
    blocks = tree([2000] * 8) + [(name, 0x700000 + 0x10000 * i, 2000, small(5))
                                 for i, name in enumerate(names)]
    _profile, (m,) = operations(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    parts = ", ".join(f"`{n}`" for n in names[1:])
    assert (f"`Dig` is the one-shot form of {parts} (by symbol names; all entered once per "
            f"operation): call those on a context kept across operations instead of `Dig`"
            in advice.recommendation) is named


def in_modules(tmp_path, blocks):
    """blocks: (function, module, first pc, count, asm lines); the per-operation trees."""
    path = tmp_path / "m.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "module", "window", "pc", "samples", "asm"])
        for function, module, at, count, lines in blocks:
            for i, asm in enumerate(lines):
                out.writerow([function, module, function, hex(at + 4 * i), count, asm])
    profile = read_profile(path)
    facts = code_facts(profile)
    table = find_mechanisms(profile, find_patterns(profile, facts), facts)
    return [m for m in table if m.kind == "per-operation"]


def driver(module: str, target: int, calls: int = 2000) -> list:
    """A function of ``module`` entered 3 times, calling ``target`` ``calls`` times from a
    loop."""
    return [("drive", module, 0x800000, 3, ["stp x29, x30, [sp, #-0x10]!"]),
            ("drive", module, 0x800004, calls, [f"bl {hex(target)}", "subs x19, x19, #1",
                                                "b.ne 0x800004"]),
            ("drive", module, 0x800010, 3, ["ldp x29, x30, [sp], #0x10", "ret"])]


def library(module: str = "libop.so") -> list:
    """Eight small functions of ``module`` entered once per operation (2,000), the work,
    and a stray call into the first from a function entered a few times."""
    return [*((name, module, at, n, lines) for name, at, n, lines in tree([2000] * 8)[:-1]),
            ("stray", module, 0x780000, 3, ["bl 0x10000", "ret"])]


@pytest.mark.parametrize(("caller", "entered", "owner"), [
    # the program calls the library's first function directly: its loop is the program's
    (driver("app", 0x10000), "to f0", "another module"),
    # through a PLT stub run as often as all eight members are entered: which one is unknown
    ([*driver("app", 0x700000), ("plt", "app", 0x700000, 2000, STUB)],
     "through 1 PLT stub whose count matches several members: which one it leads to is not "
     "in the profile", "another module"),
    # the library drives its own operations
    (driver("libop.so", 0x10000), "to f0", "its own module"),
])  # fmt: skip
def test_the_functions_entering_the_tree_are_named_with_their_module(tmp_path, caller,
                                                                     entered, owner):
    (m,) = in_modules(tmp_path, [*library(), *caller])
    check = next(c for c in m.checks if c.startswith(CALLERS_CHECK))
    assert f"`drive` in {caller[0][1]} (entered 3 times, 2,000 calls, 1.00 per operation, " \
           f"{entered}; the " \
           f"members it reaches are in libop.so, {owner})" in check
    assert "stray" not in check and "1 more functions, 3 calls" in check
    advice = advise(builtins_of(m), "executions", None)
    assert "Entered from outside the tree by `drive`" in advice.claim
    if owner == "another module":
        assert "entering the tree on every operation is the caller's choice, so keeping the " \
               "context across operations, initialising it once and updating it per " \
               "operation is a change in `drive`, for the owner of app, while what each " \
               "entry costs inside the tree (the small wrappers) is libop.so's to cut" \
               in advice.recommendation
    else:
        assert "in the tree's own module (libop.so): both entering it on every operation " \
               "and what each entry costs inside it (the small wrappers) are that module's " \
               "to change" in advice.recommendation


def test_a_caller_reaching_a_member_with_a_demangled_name_is_addressed(tmp_path):
    # C++ members carry their parameters in their names: the caller is addressed all the same
    blocks = [*((name if name != "f0" else "op::begin(ctx*)", module, at, n, lines)
                for name, module, at, n, lines in library()), *driver("app", 0x10000)]
    (m,) = in_modules(tmp_path, blocks)
    check = next(c for c in m.checks if c.startswith(CALLERS_CHECK))
    assert "to op::begin(ctx*); the members it reaches are in libop.so, another module)" in check
    assert "is a change in `drive`, for the owner of app" in \
        advise(builtins_of(m), "executions", None).recommendation


def test_a_reopened_index_gives_the_advice_the_callers_and_the_allocator_split(tmp_path):
    from pcscope.index.store import open_workload

    blocks = paired_allocations()
    in_modules(tmp_path, blocks)  # writes m.csv
    open_workload(tmp_path / "m.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "m.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = [m for m in reopened if m.kind == "per-operation"]
    tree = m.value(TreeValues)
    assert tree is not None and [c.name for c in tree.callers] == ["drive"]
    advice = advise(builtins_of(m), "executions", None)
    assert "Of the allocator's 68 instructions per operation, reuse removes the 36" \
        in advice.recommendation
    assert "is a change in `drive`, for the owner of app" in advice.recommendation


def test_the_library_owns_the_allocator_calls_inside_the_tree(tmp_path):
    blocks = [*library(), ("malloc", "libc.so.6", 0x700000, 4002, small(10)),
              ("free", "libc.so.6", 0x710000, 4004, small(12)), *driver("app", 0x10000)]
    (m,) = in_modules(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    assert "while what each entry costs inside the tree (the allocator calls and their " \
           "wrappers, 44 instructions per operation, the small wrappers) is libop.so's to " \
           "cut" in advice.recommendation


def test_a_caller_of_a_tree_without_modules_is_addressed_by_name(tmp_path):
    blocks = [*tree([2000] * 8)[:-1], *((f, at, n, lines) for f, _m, at, n, lines
                                        in driver("", 0x10000))]
    _profile, (m,) = operations(tmp_path, blocks)
    advice = advise(builtins_of(m), "executions", None)
    assert "the operations are entered from `drive` (itself entered 3 times; 1.00 calls per " \
           "operation); keeping " \
           "the context across operations, initialising it once and updating it per " \
           "operation is a change in `drive`" in advice.recommendation
    assert "owner" not in advice.recommendation


def test_a_tree_entered_from_nowhere_known_names_no_caller(tmp_path):
    _profile, (m,) = operations(tmp_path, tree([2000] * 8))
    assert not any(c.startswith(CALLERS_CHECK) for c in m.checks)
    assert "Who changes what" not in advise(builtins_of(m), "executions", None).recommendation


def test_a_tree_calling_a_callee_it_shares_with_another_is_no_caller_of_that_tree(tmp_path):
    # the second tree's g0 calls the shared `clear` once per entry; `clear` joins the first
    # tree (3 of its 4 calls per operation are there): g0 enters no operation of it
    other = [("g0", 0x200000, 2500, calling(0x700000, after=6)),
             *((f"g{i}", 0x200000 + 0x10000 * i, 2500, small(10)) for i in range(1, 8))]
    blocks = [*tree([2000] * 8), *other, ("clear", 0x700000, 3 * 2000 + 2500, small(20))]
    _profile, found = operations(tmp_path, blocks)
    first = next(m for m in found if "clear" in m.functions)
    assert not any(c.startswith(CALLERS_CHECK) for c in first.checks)


def paired_allocations(helper: bool = False, stub: bool = False) -> list:
    """An object made and released per operation through allocator wrappers (foo_new tail
    calls xalloc, which calls malloc; foo_free, xfree and free likewise), and one more
    allocation and release per operation made inside longer members (bar_init, bar_done),
    entered from a program; ``helper``: a hidden function of the allocator's module entered
    once per free that no member calls on every entry; ``stub``: foo_free and bar_done
    reach xfree through a PLT stub run 4,000 times, as often as xalloc, xfree, malloc and
    free are entered (only xfree has calls no other member makes: the stub leads there)."""
    free = 0x4010 if stub else 0x760000
    lib = [("xalloc", 0x740000, 4000, calling(0x700000)),
           ("xfree", 0x760000, 4000, calling(0x710000)),
           ("foo_new", 0x750000, 2000, ["movz x0, #0x48", "b 0x740000"]),
           ("foo_free", 0x770000, 2000, ["mov x1, x0", f"b {hex(free)}"]),
           ("bar_init", 0x7a0000, 2000, calling(0x740000, after=40)),
           ("bar_done", 0x7b0000, 2000, calling(free, after=40)),
           *([("plt", 0x4000, 10, STUB), ("plt", 0x4010, 4000, STUB)] if stub else [])]
    libc = [("malloc", 0x700000, 4002, small(10)), ("free", 0x710000, 4004, small(12)),
            *([("<unknown_7>", 0x720000, 4005, small(30))] if helper else [])]
    return [*library(), *((name, "libop.so", at, n, lines) for name, at, n, lines in lib),
            *((name, "libc.so.6", at, n, lines) for name, at, n, lines in libc),
            *driver("app", 0x10000)]


@pytest.mark.parametrize("stub", [False, True])
def test_the_allocations_under_a_create_destroy_pair_are_the_callers_the_rest_the_librarys(
        tmp_path, stub):
    # allocator cost: malloc 2 × 10, free 2 × 12, xalloc and xfree 2 × 5, foo_new and foo_free
    # 2 = 68 per operation; the pair's own: 2 + 2 + 5 + 10 + 5 + 12 = 36, the rest 32
    (m,) = in_modules(tmp_path, paired_allocations(stub=stub))
    advice = advise(builtins_of(m), "executions", None)
    assert "The C allocator per operation: 2 malloc + 2 free" in advice.claim
    assert "= 68 instructions" in advice.claim
    assert "Of the allocator's 68 instructions per operation, reuse removes the 36 the " \
           "create/destroy pairs' members make themselves on every entry (`foo_new`, " \
           "`foo_free`, directly or through wrappers: the objects' own memory); the other 32 " \
           "begin at `bar_init`, `bar_done`, not in a pair member's own calls, so reuse is " \
           "not known to remove them." \
           in advice.recommendation
    assert "Reuse also removes" not in advice.recommendation
    assert "keeping the context across operations (which removes the pairs' 36 allocator " \
           "instructions per operation), initialising it once and updating it per operation " \
           "is a change in `drive`, for the owner of app, while what each entry costs inside " \
           "the tree (the other allocator calls, 32 instructions per operation, the small " \
           "wrappers) is libop.so's to cut" in advice.recommendation


def test_allocations_the_profile_cannot_place_under_a_pair_are_not_split(tmp_path):
    # the allocator's hidden helper runs once per free, but no member calls it on every
    # entry: which frees enter it is not known, so neither is the pair's part
    (m,) = in_modules(tmp_path, paired_allocations(helper=True))
    advice = advise(builtins_of(m), "executions", None)
    assert "Which of the allocator's 128 instructions per operation the create/destroy " \
           "pairs' members make, and so reuse removes, is not in the profile (a hidden " \
           "allocator function no member calls on every entry: <unknown_7>)." \
           in advice.recommendation
    assert "(the allocator calls reuse does not remove, the small wrappers) is libop.so's " \
           "to cut" in advice.recommendation
    assert "removes the pairs'" not in advice.recommendation


@pytest.mark.parametrize(("pair", "text"), [
    # a pair whose members call no allocator: every allocation starts elsewhere
    ([("foo_up_ref", 0x700000 + 0x50000, 2000, small(5)),
      ("foo_free", 0x700000 + 0x60000, 2000, small(5))],
     "Of the allocator's 44 instructions per operation, the create/destroy pairs' members "
     "make none on every entry: all 44 begin at `malloc`, `free`, not in a pair member's "
     "own calls, so reuse is not known to remove them."),
    # no pair at all: nothing to follow the calls from
    ([], "Which of the allocator's 44 instructions per operation reuse removes is not in the "
         "profile: no create/destroy pair among the members to follow calls from."),
])  # fmt: skip
def test_allocations_outside_every_pair_stay_with_the_tree(tmp_path, pair, text):
    _profile, (m,) = operations(tmp_path, allocator(*pair))
    advice = advise(builtins_of(m), "executions", None)
    assert text in advice.recommendation
    assert "Reuse also removes" not in advice.recommendation


def test_a_reopened_index_gives_the_advice_the_set_up_one_shot_calls_and_pairs(tmp_path):
    # a C++ set-up member carries its parameters, a space and a comma in its name: the
    # advice names it whole
    from pcscope.index.store import open_workload

    setup = "gf::init(key const*, int)"
    blocks = [*tree([2000] * 8), (setup, 0x700000, 2000, vector(100)),
              ("initkey", 0x740000, 2000, calling(0x700000, after=6)),
              *((name, 0x760000 + 0x10000 * i, 2000, small(5))
                for i, name in enumerate(("Dig", "DigInit_ex", "DigUpdate", "DigFinal_ex"))),
              ("foo_up_ref", 0x7c0000, 2000, small(5)), *null_checked(0x7d0000, 4000, 2000)]
    operations(tmp_path, blocks)  # writes p.csv
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = [m for m in reopened if m.kind == "per-operation"]
    found = m.value(TreeValues)
    assert found is not None and found.setup == (setup,)
    assert found.setup_callers == ("initkey",)
    assert found.one_shots == (OneShot("Dig", ("DigInit_ex", "DigUpdate", "DigFinal_ex")),)
    assert found.pairs == (Pair("foo", "foo_up_ref", "foo_free", 1, 2),)
    rec = advise(builtins_of(m), "executions", None).recommendation
    assert "reuse foo (foo_up_ref/foo_free, 1× per operation; foo_free is entered 2× and " \
           "returns at its null check on the rest) across operations" in rec
    assert f"(`{setup}`, `initkey`) is recomputed for every operation" in rec
    assert "`Dig` is the one-shot form of `DigInit_ex`, `DigUpdate`, `DigFinal_ex` (by symbol " \
           "names; all entered once per operation): call those on a context kept across " \
           "operations instead of `Dig`; " in rec
