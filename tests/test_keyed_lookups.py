"""A lookup routine's caller making one call per constant key (pcscope.core.keyed_lookups):
named in the C-library routine's mechanism and its idea; look-alikes stay quiet."""

from __future__ import annotations

import pytest

from pcscope.core.keyed_lookups import LOOKUP_CHECK, MORE_CHECK, TREE_CHECK
from pcscope.core.lookup_values import LookupValues
from tests.test_mechanism_rules import STRCMP, STUB, lookup, mechanisms_of

ENTRIES = 125  # the caller's entries; 8 lookups each make the 1,000 lookups below
# strcmp with more instructions than the lookup and its stub, so that its site is the
# heaviest and the mechanism is named for it (as on real programs, where it loops)
LONG_STRCMP = [*STRCMP[:-1], *(["nop"] * 12), STRCMP[-1]]


def keyed_calls(key: str, n: int = 8, to: int = 0x1000) -> list[str]:
    """``n`` calls to the lookup at ``to``, each after ``key`` (asm lines ending with the
    key in x1; ``{i}`` is the call's number)."""
    return [line for i in range(n) for line in
            [*(k.format(i=i) for k in key.split("; ")), "mov x0, x21", f"bl {hex(to)}",
             f"cbz x0, {hex(0x3400 + 16 * i)}"]]


def table_with(caller: list[tuple[int, int, list[str]]]):
    """strcmp through its stub from the small ``lookup`` (1,000 calls), and the caller's
    blocks (first pc, count, asm)."""
    return [("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
            ("strcmp", 0x5000, 1000, LONG_STRCMP),
            *(("requests", at, n, lines) for at, n, lines in caller)]


def libc_of(tmp_path, blocks):
    _profile, table = mechanisms_of(tmp_path, blocks)
    (m,) = [m for m in table if m.kind == "libc-routine"]
    return m


def test_caller_with_one_constant_key_per_call_site_is_named(tmp_path):
    m = libc_of(tmp_path, table_with([
        (0x3000, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #{i}0") + ["ret"])]))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["constant keys"] == 8
    assert figures["constant-key lookups per caller entry"] == 8.0
    assert figures["keyed caller entries"] == ENTRIES
    assert any(c.endswith(": requests") for c in m.checks)


def test_a_key_set_before_a_conditional_branch_reaches_the_call(tmp_path):
    """A test between the key's adrp/add and its call falls through to the call: the key
    is still the constant (a call between would clobber x1: no key, as the look-alikes)."""
    m = libc_of(tmp_path, table_with([
        (0x3000, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #{i}0; cbz x22, 0x3f00")
         + ["ret"])]))
    assert {x.name: x.value for x in m.metrics}["constant keys"] == 8


@pytest.mark.parametrize("caller", [
    # the same constant key at every call site
    [(0x3000, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #0x10") + ["ret"])],
    # keys loaded at run time, not address constants
    [(0x3000, ENTRIES, keyed_calls("ldr x1, [x22, #{i}8]") + ["ret"])],
    # the adrp/add goes to another register than the key's
    [(0x3000, ENTRIES, keyed_calls("adrp x2, 0x30000; add x2, x2, #{i}0") + ["ret"])],
    # a call between the adrp/add and the lookup's call may change x1
    [(0x3000, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #{i}0; bl 0x3f00")
      + ["ret"])],
    # one call site in a loop, 8 iterations per entry, with one key register
    [(0x3000, ENTRIES, ["stp x29, x30, [sp, #-0x20]!", "movz x22, #8"]),
     (0x3008, 8 * ENTRIES, ["adrp x1, 0x30000", "add x1, x1, #0x10", "mov x0, x21",
                            "bl 0x1000", "subs x22, x22, #1", "b.ne 0x3008"]),
     (0x3020, ENTRIES, ["ret"])],
    # four constant keys, but each call site runs on a quarter of the entries
    [(0x3000, 4 * ENTRIES, ["stp x29, x30, [sp, #-0x20]!"]),
     (0x3004, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #{i}0", 4))],
])  # fmt: skip
def test_look_alikes_name_no_keyed_caller(tmp_path, caller):
    m = libc_of(tmp_path, table_with(caller))
    assert "constant keys" not in {x.name for x in m.metrics}
    assert not any(c.endswith(": requests") for c in m.checks)


def test_idea_names_the_caller_and_the_inverted_lookup(tmp_path):
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of

    m = libc_of(tmp_path, table_with([
        (0x3000, ENTRIES, keyed_calls("adrp x1, 0x30000; add x1, x1, #{i}0") + ["ret"])]))
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None
    assert "`requests` (entered 125 times) calls `lookup` from 8 call sites: 8 lookups per " \
           "entry, each with a different constant key" in advice.claim
    assert "In `requests`, walk the request once and dispatch on the name" in \
           advice.recommendation


KEYS = "adrp x1, 0x30000; add x1, x1, #{i}0"


@pytest.mark.parametrize(("forward", "named"), [
    (["b 0x1000"], True),  # a tail call: the forwarder's callers are the lookup's callers
    (["bl 0x1000", "ret"], False),  # a call: the forwarder is the caller, with no constant key
])  # fmt: skip
def test_callers_reaching_the_lookup_through_a_tail_call_are_named(tmp_path, forward, named):
    # `direct` makes 500 lookups with 4 constant keys; `requests` 500 with 4 other keys
    # through `forwarder`, which ends in a jump to the lookup
    m = libc_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
        ("strcmp", 0x5000, 1000, LONG_STRCMP), ("forwarder", 0x6000, 500, forward),
        ("direct", 0x3000, ENTRIES, keyed_calls(KEYS, 4) + ["ret"]),
        ("requests", 0x7000, ENTRIES, keyed_calls(KEYS, 4, to=0x6000) + ["ret"])])
    assert any(c.endswith(": direct") for c in m.checks)
    more = [c for c in m.checks if c.startswith(MORE_CHECK)]
    assert (more == [f"{MORE_CHECK}requests (4 keys, 4.00 lookups per entry, entered 125 "
                     f"times, through forwarder, which tail-calls it)"]) is named


@pytest.mark.parametrize(("other", "named"), [
    ([], True),  # the lookup's stub runs as often as the lookup is entered: the way in
    # another function is entered as often too: which one the stub leads to is not known
    ([("other", 0x8000, 1000, ["ret"])], False),
])  # fmt: skip
def test_callers_reaching_the_lookup_through_its_stub_are_named_when_the_count_tells(
        tmp_path, other, named):
    # `requests` makes the lookup's 1,000 entries with 8 constant keys through the stub at
    # 0x4020; the lookup itself compares 1,200 names through strcmp's stub at 0x4010
    m = libc_of(tmp_path, [*found_lookup("cbz w0, 0x1028"), ("plt", 0x4020, 1000, STUB),
                           ("requests", 0x3000, ENTRIES, keyed_calls(KEYS, to=0x4020) + ["ret"]),
                           *other])
    assert any(c.endswith(": requests") for c in m.checks) is named


def test_lookups_of_a_per_operation_tree_link_both_ideas(tmp_path):
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of
    from tests.test_call_cohorts import tree

    # `requests` (8 keys) runs twice per operation of a tree of small functions; the same
    # caller entered 3 % more often than twice per operation is no member and no link
    def table(entries: int):
        calls = 8 * entries
        return mechanisms_of(tmp_path, [
            *tree([2000] * 8),
            ("lookup", 0x100000, calls, lookup(0x100000)), ("plt", 0x4000, calls, STUB),
            ("strcmp", 0x5000, calls, LONG_STRCMP),
            ("requests", 0x3000, entries, keyed_calls(KEYS, 8, to=0x100000) + ["ret"])])[1]

    found = table(4000)
    (tree_m,) = [m for m in found if m.kind == "per-operation"]
    (libc,) = [m for m in found if m.kind == "libc-routine"]
    assert f"{TREE_CHECK}16.0 by requests (2.0× per operation, 8 keys), counted in " \
           f"`{libc.id}`" in tree_m.checks
    assert f"{LOOKUP_CHECK}16.0 constant-key lookups in each of the 2,000 operations of `{tree_m.id}`, by " \
           f"requests" in libc.checks
    advice = advise(builtins_of(tree_m), "executions", None)
    assert "Constant-key lookups per operation: 16.0 by requests" in advice.claim
    assert f"`{tree_m.id}`" in advise(builtins_of(libc), "executions", None).claim
    quiet = table(4120)
    assert not any(c.startswith((TREE_CHECK, LOOKUP_CHECK)) for m in quiet for c in m.checks)


def test_the_upside_is_the_lookups_one_walk_per_entry_deletes(tmp_path):
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of

    # `direct` makes 500 lookups (4 keys, 125 entries), `requests` 500 through a
    # forwarder: one walk per entry each leaves 250 of the 1,000 lookups
    m = libc_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
        ("strcmp", 0x5000, 1000, LONG_STRCMP), ("forwarder", 0x6000, 500, ["b 0x1000"]),
        ("direct", 0x3000, ENTRIES, keyed_calls(KEYS, 4) + ["ret"]),
        ("requests", 0x7000, ENTRIES, keyed_calls(KEYS, 4, to=0x6000) + ["ret"])])
    assert {x.name: x.value for x in m.metrics}["lookups one walk per entry deletes"] == 75.0
    advice = advise(builtins_of(m), "executions", None)
    assert advice.removes == 0.75
    assert "In `direct` and `requests`, walk the request once and dispatch on the name" in \
        advice.recommendation
    assert "deletes 75% of the lookups" in advice.recommendation


def test_a_lookup_without_constant_key_callers_has_no_modelled_upside(tmp_path):
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of

    m = libc_of(tmp_path, table_with([
        (0x3000, ENTRIES, keyed_calls("ldr x1, [x22, #{i}8]") + ["ret"])]))
    assert advise(builtins_of(m), "executions", None).removes is None


COMPARE = [("plt", 0x4000, 10, STUB), ("plt", 0x4010, 1200, STUB),
           ("strcmp", 0x5000, 1200, LONG_STRCMP)]  # the compare the lookups call


def found_lookup(test: str) -> list:
    """A lookup entered 1,000 times comparing 1,200 names: the compare's result is tested
    by ``test`` right after the call; 300 lookups end at the zero result (a hit)."""
    return [("lookup", 0x1000, 1000, ["stp x29, x30, [sp, #-0x20]!", "mov x19, x0",
                                      "ldr x1, [x19]"]),
            ("lookup", 0x100c, 1200, ["mov x0, x20", "bl 0x4010", test]),
            ("lookup", 0x1018, 900, ["ldr x1, [x19, #0x28]!", "cbnz x1, 0x100c"]),
            ("lookup", 0x1020, 700, ["movz x0, #0", "b 0x102c"]),
            ("lookup", 0x1028, 300, ["mov x0, x19"]),
            ("lookup", 0x102c, 1000, ["ldp x29, x30, [sp], #0x20", "ret"]),
            *COMPARE]


def found_lookup_on_nonzero() -> list:
    """The same lookup with its test the other way round: a non-zero result branches on to
    the next name (``cbnz``, taken 900 of 1,200 times) and the zero result falls through to
    the hit, again in 300 lookups (read as ``cbz`` the branch would give 900 hits)."""
    return [("lookup", 0x1000, 1000, ["stp x29, x30, [sp, #-0x20]!", "mov x19, x0",
                                      "ldr x1, [x19]"]),
            ("lookup", 0x100c, 1200, ["mov x0, x20", "bl 0x4010", "cbnz w0, 0x1020"]),
            ("lookup", 0x1018, 300, ["mov x0, x19", "b 0x102c"]),
            ("lookup", 0x1020, 900, ["ldr x1, [x19, #0x28]!", "cbnz x1, 0x100c"]),
            ("lookup", 0x1028, 700, ["movz x0, #0"]),
            ("lookup", 0x102c, 1000, ["ldp x29, x30, [sp], #0x20", "ret"]),
            *COMPARE]


@pytest.mark.parametrize(("blocks", "hits"), [
    (found_lookup("cbz w0, 0x1028"), 30.0),  # a zero result jumps to the hit: 300 of 1,000
    (found_lookup_on_nonzero(), 30.0),  # a non-zero one jumps past it: the same 300
    (found_lookup("cmp w0, #0"), None),  # no branch on the result right after the call
], ids=["cbz", "cbnz", "no-branch"])  # fmt: skip
def test_the_hit_rate_of_a_lookup_is_read_from_the_test_of_the_compare(tmp_path, blocks,
                                                                        hits):
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of

    m = libc_of(tmp_path, blocks)
    assert {x.name: x.value for x in m.metrics}.get("lookups finding their key") == hits
    claim = advise(builtins_of(m), "executions", None).claim
    assert ("a lookup compares 1.20 names on average" in claim) is (hits is not None)
    assert ("30% of the lookups find their key (a zero result ends the walk): most lookups "
            "search a short array for a key it does not hold" in claim) is (hits is not None)


def test_callers_making_under_one_percent_of_the_calls_are_not_named(tmp_path):
    # `lookup` makes 1,000 calls, `rare` 5 (0.5 %): only the first is a caller to name
    m = libc_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1005, STUB),
        ("strcmp", 0x5000, 1005, LONG_STRCMP),
        ("rare", 0x7000, 5, ["mov x0, x1", "bl 0x4000", "ret"])])
    assert "rare" not in m.functions and "lookup" in m.functions
    assert any(c.endswith("its callers: lookup (1,000), 1 more (0.50% of the calls)")
               for c in m.checks)


def test_a_reopened_index_gives_the_advice_every_constant_key_caller(tmp_path):
    # a C++ caller carries its parameters, a comma among them, in its name: named whole
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of
    from pcscope.index.store import open_workload

    router = "Router::dispatch(Request&, int)"
    libc_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
        ("strcmp", 0x5000, 1000, LONG_STRCMP), ("forwarder", 0x6000, 500, ["b 0x1000"]),
        (router, 0x3000, ENTRIES, keyed_calls(KEYS, 4) + ["ret"]),
        ("requests", 0x7000, ENTRIES, keyed_calls(KEYS, 4, to=0x6000) + ["ret"])])
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = [m for m in reopened if m.kind == "libc-routine"]
    assert (m.value(LookupValues) or LookupValues()).callers == (router, "requests")
    advice = advise(builtins_of(m), "executions", None)
    assert f"`{router}` (entered 125 times) calls `lookup` from 4 call sites" in advice.claim
    assert f"In `{router}` and `requests`, walk the request once and dispatch on the name" \
        in advice.recommendation
