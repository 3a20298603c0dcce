"""The advice reads its lists from the mechanism's typed values (pcscope.core.mechanisms.Values),
not back from its check sentences: without the checks that list them (reworded, say) the
claim and the recommendation say the same."""

from __future__ import annotations

from dataclasses import replace

from pcscope.core import chain_walk, gather_partition, invariant_work, memory_state
from pcscope.core.backends.advice import advise
from pcscope.core.call_cohorts import SHARED_CHECK
from pcscope.core.fixed_trip_sums import VARIES
from pcscope.core.hand_written import CHECK as HAND_WRITTEN
from pcscope.core.keyed_lookups import LOOKUP_CHECK, TREE_CHECK
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanisms import Mechanism
from pcscope.core.struct_relaxation import FIXED_BASE
from tests.test_call_cohorts import allocator, calling, operations, small, tree, vector
from tests.test_chain_walk import chase, search
from tests.test_hand_written import CLEANSE
from tests.test_hand_written import store_loop as hand_written_loop
from tests.test_keyed_lookups import ENTRIES, KEYS, LONG_STRCMP, keyed_calls, libc_of
from tests.test_loop_nests import priced_relaxation
from tests.test_loop_shapes import (
    WORK,
    bucket_copy,
    mechanisms_of,
    of_kind,
    price_loop,
    relaxation,
    three_way,
)
from tests.test_mechanism_rules import STUB, interpreter, lookup, module_mechanisms
from tests.test_mechanism_rules import mechanisms_of as blocks_of
from tests.test_memory_state import AT, coder, memory_states, stream_loop
from tests.test_table_crc import REFLECTED as REFLECTED_CRC
from tests.test_table_crc import crcs


def texts(m: Mechanism, *dropped: str) -> tuple[tuple[str, str], tuple[str, str]]:
    """The claim and recommendation of ``m``, and of ``m`` without the checks starting with
    any of ``dropped`` (some check must go: prefixes that match none would compare the
    text with itself)."""
    assert any(c.startswith(dropped) for c in m.checks), m.checks
    said = advise(builtins_of(m), "executions", None)
    unsaid = advise(builtins_of(replace(m, checks=tuple(c for c in m.checks
                                                       if not c.startswith(dropped)))),
                    "executions", None)
    assert said is not None and unsaid is not None
    return (said.claim, said.recommendation), (unsaid.claim, unsaid.recommendation)


def test_a_struct_relaxation_names_its_loads_from_its_values(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                priced_relaxation(advances=2000)), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    said, unsaid = texts(m, "a table entry", "one field of a")
    assert "contiguous table entry (`ldr" in said[0] and "one field (`ldr" in said[0]
    assert unsaid == said


def test_a_fixed_trip_loop_names_its_loops_from_its_values(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("literal_price", 0x1000, price_loop())])
    (m,) = of_kind(table, "fixed-trip-sum")
    said, unsaid = texts(m, "loops whose head count", "loaded values summed")
    assert " trips × " in said[0] and "lookup into one register (`add" in said[0]
    assert unsaid == said


def test_a_lookup_names_its_further_constant_key_callers_from_its_values(tmp_path):
    m = libc_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
        ("strcmp", 0x5000, 1000, LONG_STRCMP),
        ("router", 0x3000, ENTRIES, keyed_calls(KEYS, 4) + ["ret"]),
        ("requests", 0x7000, ENTRIES, keyed_calls(KEYS, 4) + ["ret"])])
    said, unsaid = texts(m, "more callers passing a constant key")
    assert "More callers pass a different constant key at each call site: " in said[0]
    assert unsaid == said


def test_a_tree_names_its_members_set_up_and_callers_from_its_values(tmp_path):
    blocks = allocator(("gf::init(key const*, int)", 0x720000, 2000, vector(100)),
                       ("initkey", 0x740000, 2000, calling(0x720000, after=6)))
    _profile, (m,) = operations(tmp_path, blocks)
    said, unsaid = texts(m, "heaviest", "C allocator calls per operation",
                         "vector or crypto code entered exactly once per operation",
                         "members calling the set-up on every entry",
                         "entered from outside the tree by")
    assert "Heaviest, by the instructions counted here: " in said[0]
    assert "The C allocator per operation: 2 malloc + 2 free" in said[0]
    assert "gf::init(key const*, int) (" in said[0] and "initkey (" in said[0]
    assert unsaid == said


def test_plt_stubs_name_where_they_lead_from_their_values(tmp_path):
    user = ["stp x29, x30, [sp, #-0x10]!", "bl 0x4000", "ldp x29, x30, [sp], #0x10", "ret"]
    rows = [*[("user", "app", 0x1000 + 4 * i, 1000, a) for i, a in enumerate(user)],
            *[("plt", "app", 0x4000 + 4 * i, 1000, a) for i, a in enumerate(STUB)],
            *[("malloc", "libc.so.6", 0x90000 + 4 * i, 1000, a)
              for i, a in enumerate(["mov x1, x0", "ret"])]]
    (m,) = [m for m in module_mechanisms(tmp_path, rows) if m.kind == "plt"]
    said, unsaid = texts(m, "stubs leading to")
    assert "go into other modules (malloc in libc.so.6 (1,000))" in said[0]
    assert unsaid == said


def test_a_dispatch_names_the_fixed_state_it_tests_from_its_values(tmp_path):
    _profile, table = blocks_of(tmp_path, interpreter())
    (m,) = of_kind(table, "dispatch")
    said, unsaid = texts(m, "a value at a fixed address", "a frame field stored once",
                         "tested as a 16-bit value")
    assert "compare it with zero and turn it into an all-ones mask on every dispatch: " \
           "page 0x5000 + 0xb34 at 4 of 4 sites" in said[1]
    assert "reload a frame field stored once per entry and merge it in: [sp, #0x100] at " \
           "4 of 4 sites" in said[1]
    assert unsaid == said


def test_hoisting_names_where_the_inputs_change_and_the_blocking_stores_from_its_values(
        tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000,
                                                priced_relaxation(advances=2000)), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    said, unsaid = texts(m, invariant_work.CHANGED, invariant_work.BLOCKED)
    assert "where those values change (`mov w2, w14` at 0x105c (2,000 times))" in said[1]
    assert "The loop's stores (`str w5, [x0, #0xedc]` at 0x1048" in said[1]
    assert unsaid == said


def test_a_walk_names_its_first_and_paired_rejects_from_its_values(tmp_path):
    m = chase(tmp_path, search())
    said, unsaid = texts(m, chain_walk.REJECT, chain_walk.PAIRED)
    assert "end at the first compare (`cmp w5, w10` at 0x1030)" in said[1]
    assert "The next reject (`cmp w3, w15` at 0x1040) tests the adjacent byte" in said[1]
    assert unsaid == said


def test_a_gather_names_its_partition_three_ways_scatters_and_loops_from_its_values(tmp_path):
    quoted = (gather_partition.PARTITION, gather_partition.THREE_WAY,
              gather_partition.SCATTERS, gather_partition.LOOPS)
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    _profile, table = mechanisms_of(tmp_path / "one", [("qsort3", 0x1000, three_way()), WORK])
    (m,) = of_kind(table, "gather-branch")
    said, unsaid = texts(m, *quoted)
    assert " (by head: 0x1000 (" in said[0] and "It stores index values back" in said[0]
    assert "testing it for equality and for order (`cbz w1, #0x1020` at 0x1010 then" in said[0]
    assert unsaid == said
    _profile, table = mechanisms_of(tmp_path / "two", [
        ("sort", 0x1000, three_way()), ("sort", 0x2000, bucket_copy(at=0x2000, n=5000)), WORK])
    (m,) = of_kind(table, "gather-branch")
    said, unsaid = texts(m, *quoted)
    assert "(each by head in the checks)" in said[0]
    assert "The loops storing each index at a place its key names (`str" in said[0]
    assert unsaid == said


def test_a_loop_in_memory_names_its_aliasing_byte_store_and_reloads_from_its_values(tmp_path):
    quoted = (memory_state.BYTE_STORE, memory_state.RELOADED)
    (tmp_path / "store").mkdir()
    (tmp_path / "reload").mkdir()
    _profile, (m,) = memory_states(tmp_path / "store", stream_loop())
    said, unsaid = texts(m, *quoted)
    assert "through another pointer: `strb w9, [x4, x5]` at 0x1028, 1× per iteration" \
        in said[0]
    assert unsaid == said
    _profile, (m,) = memory_states(tmp_path / "reload", coder(back=f"b.ne {hex(AT)}"))
    said, unsaid = texts(m, *quoted)
    assert "from the first load ([x0, #0x10] at 0x1000, again at 0x1014 (at least" in said[0]
    assert unsaid == said


def test_a_tree_and_its_lookups_name_each_other_from_their_values(tmp_path):
    calls, entries = 8 * 4000, 4000
    _profile, found = blocks_of(tmp_path, [
        *tree([2000] * 8),
        ("lookup", 0x100000, calls, lookup(0x100000)), ("plt", 0x4000, calls, STUB),
        ("strcmp", 0x5000, calls, LONG_STRCMP),
        ("requests", 0x3000, entries, keyed_calls(KEYS, 8, to=0x100000) + ["ret"])])
    (tree_m,) = of_kind(found, "per-operation")
    (libc,) = of_kind(found, "libc-routine")
    said, unsaid = texts(tree_m, TREE_CHECK)
    assert "Constant-key lookups per operation: 16.0 by requests (2.0× per operation" in said[0]
    assert unsaid == said
    said, unsaid = texts(libc, LOOKUP_CHECK)
    assert f" Per operation: 16.0 constant-key lookups in each of the 2,000 operations of " \
           f"`{tree_m.id}`, by requests." in said[0]
    assert unsaid == said


def test_trees_name_the_callees_they_share_from_their_values(tmp_path):
    """A small function entered 3 × one tree's operations + 1 × the other's joins the first;
    both name it."""
    _profile, trees = operations(tmp_path, [
        *[(f"f{i}", 0x10000 * (i + 1), 2000, small(10)) for i in range(8)],
        *[(f"g{i}", 0x200000 + 0x10000 * i, 3100, small(10)) for i in range(8)],
        ("hidden", 0x700000, 3 * 2000 + 3100, small(4)),
        ("kernel", 0x900000, 2000, small(300)), ("main", 0x800000, 1, small(4))])
    (here,) = [m for m in trees if "f0" in m.functions]
    (there,) = [m for m in trees if "g0" in m.functions]
    said, unsaid = texts(here, SHARED_CHECK)
    assert "Callees shared with another tree (entries = k × these operations + k' × that " \
           f"tree's, instructions split by the fit): hidden (3× here, 1× in `{there.id}`). " \
           in said[0]
    assert unsaid == said
    said, unsaid = texts(there, SHARED_CHECK)
    assert f"Callees shared with another tree, counted there: hidden (1× here, in " \
           f"`{here.id}`). " in said[0]
    assert unsaid == said


def test_hand_written_assembly_is_told_from_its_value(tmp_path):
    m = hand_written_loop(tmp_path, CLEANSE)
    said, unsaid = texts(m, HAND_WRITTEN)
    assert "The loop is likely hand-written assembly (the evidence is in the checks)" in said[1]
    assert unsaid == said


def test_a_relaxation_over_a_fixed_base_is_told_from_its_values(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("optimum", 0x1000, relaxation()), WORK])
    (m,) = of_kind(table, "struct-relaxation")
    said, unsaid = texts(m, FIXED_BASE)
    assert "one `dup`" in said[1]
    assert unsaid == said


def test_a_fixed_trip_loop_whose_bound_may_vary_is_told_from_its_values(tmp_path):
    _profile, table = mechanisms_of(tmp_path, [("sum", 0x1000,
                                                price_loop(bound="cmp w5, w3"))])
    (m,) = of_kind(table, "fixed-trip-sum")
    assert any(VARIES in c for c in m.checks)
    said, unsaid = texts(m, "no call and no store in the loop")
    assert "(the bound is set before the loop and may differ between calls" in said[1]
    assert unsaid == said


def test_a_reflected_crc_is_told_from_its_values(tmp_path):
    _profile, (m,) = crcs(tmp_path, REFLECTED_CRC)
    said, unsaid = texts(m, "the function has no crc32* instruction")
    assert "reflected (the low byte indexes the table and the CRC shifts right)" in said[0]
    assert "zlib" in said[1]
    assert unsaid == said
