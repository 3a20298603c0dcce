"""Loop state kept in memory (pcscope.core.memory_state): a loop that reloads and stores back
fields of a structure every iteration is one mechanism, sized by those loads and stores;
look-alikes that walk or advance their base, spill to the stack, or call out on every
iteration stay quiet."""

from __future__ import annotations

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.memory_state import RELOADED
from pcscope.core.memory_values import FieldUse, MemoryValues
from tests.test_mechanism_rules import mechanisms_of

AT = 0x1000


def stream_loop(base_step: str = "nop", extra: str = "nop") -> list[str]:
    """Per byte: reload the stream and its pointer/count fields, copy one byte, store the
    fields back; the CRC-like state at [x19, #0x288] is read, updated and stored back."""
    return [
        "ldr x0, [x19]",  # s->strm (a pointer kept in the state, not stored in the loop)
        "ldr w1, [x0, #8]",  # strm->avail_in
        f"cbz w1, {hex(AT + 0x80)}",
        "ldr x2, [x0]",  # strm->next_in (advanced and stored back: data, not a structure)
        "ldrb w9, [x2]",
        "ldr w3, [x19, #0x288]",
        "eor w3, w3, w9",
        "lsl w3, w3, #1",
        "str w3, [x19, #0x288]",  # the state, computed from its own load
        "ldr x4, [x19, #0x40]",
        "strb w9, [x4, x5]",  # a byte store through another pointer
        "add x2, x2, #1",
        "sub w1, w1, #1",
        "str x2, [x0]",
        "str w1, [x0, #8]",
        base_step,
        extra,
        f"b {hex(AT)}",
    ]


def memory_states(tmp_path, lines, count=1000):
    profile, table = mechanisms_of(tmp_path, [("copy", AT, count, lines)])
    return profile, [m for m in table if m.kind == "memory-state"]


def test_fields_reloaded_and_stored_back_are_one_mechanism(tmp_path):
    profile, (m,) = memory_states(tmp_path, stream_loop())
    figures = {x.name: x.value for x in m.metrics}
    # loads [x19], [x0,#8], [x0], [x19,#0x288], [x19,#0x40]; stores [x19,#0x288], [x0], [x0,#8]
    assert figures["field accesses per iteration"] == 8
    assert figures["fields stored back"] == 3
    assert m.share == pytest.approx(8 * 1000 / profile.total)
    checks = " ".join(m.checks)
    assert "[x19, #0x288]" in checks and "recurrence through memory" in checks
    assert "byte store(s) through other addresses" in checks
    # the byte read through the advanced pointer is the loop's work, not a field
    assert profile.row_of(AT + 4 * 4) not in {profile.row_of(pc) for pc in m.pcs}
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None and advice.rule == "memory-state"
    assert "local variables" in advice.recommendation and "forwarding" in advice.recommendation


def test_advancing_base_is_an_array_walk_not_state(tmp_path):
    """The same loop over an array of structures (its base steps by the structure size
    every iteration) updates a different element each time: quiet."""
    lines = [line.replace("x19", "x21") for line in stream_loop("add x21, x21, #0x300")]
    _profile, found = memory_states(tmp_path, lines)
    assert found == []


def test_list_walk_updating_nodes_is_quiet(tmp_path):
    """node->count++ on each node of a list: the base is loaded from itself."""
    lines = ["ldr w1, [x0, #8]", "add w1, w1, #1", "str w1, [x0, #8]",
             "ldr w2, [x0, #12]", "add w2, w2, w1", "str w2, [x0, #12]",
             "ldr x0, [x0]", f"cbnz x0, {hex(AT)}"]
    _profile, found = memory_states(tmp_path, lines)
    assert found == []


def test_call_on_every_iteration_forces_the_reloads(tmp_path):
    _profile, found = memory_states(tmp_path, stream_loop(extra="bl 0x9000"))
    assert found == []


def test_stack_spills_are_not_fields(tmp_path):
    lines = [line.replace("x19", "sp") for line in stream_loop()]
    lines = [line.replace("[x0", "[sp") for line in lines]
    _profile, found = memory_states(tmp_path, lines)
    assert found == []


def test_a_halfword_store_is_not_named_as_the_alias(tmp_path):
    """Only a character-type store may alias a field of any type: a `strh` into a 16-bit
    table (a hash chain's prev[]) does not explain why 32- and 64-bit fields are reloaded."""
    lines = [("strh w9, [x4, x5]" if line.startswith("strb") else line) for line in stream_loop()]
    _profile, (m,) = memory_states(tmp_path, lines)
    assert not [c for c in m.checks if "through other addresses" in c]
    advice = advise(builtins_of(m), "executions", None)
    assert "`char` store may alias" not in advice.claim


def coder(between: str = "add x5, x4, #0xc", back: str = f"b {hex(AT)}",
          late: str = "cmp x4, x9") -> list[str]:
    """A range-coder step: the range field is loaded at the head, tested, then loaded again
    for the update and stored back; the position field is incremented in memory."""
    return ["ldr w4, [x0, #0x10]", "cmp w4, w8", f"b.ls {hex(AT + 0x80)}",
            "ldr x4, [x0, #0x28]", between, "ldr w6, [x0, #0x10]", "lsr w5, w6, #0xb",
            "mul w5, w5, w10", "sub w6, w6, w5", "str w6, [x0, #0x10]", "add x4, x4, #1",
            "str x4, [x0, #0x28]", late, back, f"b {hex(AT + 0x80)}"]


def test_a_reload_with_no_store_between_is_a_missed_cse(tmp_path):
    """The second load of [x0, #0x10] follows the first on a straight path with no store:
    nothing can have changed it, so the idea says so, with both PCs."""
    _profile, (m,) = memory_states(tmp_path, coder(back=f"b.ne {hex(AT)}"))
    said = [c for c in m.checks if c.startswith(RELOADED)]
    assert said == [f"{RELOADED}[x0, #0x10] at {AT:#x}, again at {AT + 20:#x} "
                    f"(at least 1,000 of 1,000 runs, 100% of iterations)"]
    claim = advise(builtins_of(m), "executions", None).claim
    assert "[x0, #0x10] is loaded again with no store of any kind between" in claim
    assert "missed common subexpression" in claim


@pytest.mark.parametrize("lines", [
    coder(between="strh w12, [x11]", back=f"b.ne {hex(AT)}"),  # a store between the loads
    coder(late=f"cbz x4, {hex(AT + 12)}", back=f"b.ne {hex(AT)}"),  # a way in after the store
])  # fmt: skip
def test_a_reload_after_a_store_or_a_join_is_not_called_a_missed_cse(tmp_path, lines):
    _profile, (m,) = memory_states(tmp_path, lines)
    assert not [c for c in m.checks if c.startswith(RELOADED)]
    assert "missed common subexpression" not in advise(builtins_of(m), "executions",
                                                       None).claim


def switch_coder(arm: str = "nop", normalised: int = 100) -> list[tuple[str, int, int, list[str]]]:
    """A range-coder step over 1,000 iterations: [x0, #0x10] loaded at the head, then a
    switch on a symbol whose three arms (500, 300 and 200 runs) each reload it (after
    ``arm``), update it and store it back; on ``normalised`` iterations a normalising path
    stores it (and a byte) before joining the switch."""
    tail, norm = AT + 0xc0, AT + 0x100
    step = ["ldr w6, [x0, #0x10]", "lsr w6, w6, #1", "str w6, [x0, #0x10]", f"b {hex(tail)}"]
    return [("enc", AT, 1000, [
        "ldr w4, [x0, #0x10]", "cmp w4, w8", f"b.ls {hex(norm)}", "ldr x4, [x0, #0x28]",
        "ldr w5, [x0, x4, lsl #2]", "cmp w5, #2", f"b.eq {hex(AT + 0x80)}",
        f"cbz w5, {hex(AT + 0x60)}"]),
        ("enc", AT + 0x20, 500, [arm, *step]),
        ("enc", AT + 0x60, 300, [arm, *step]),
        ("enc", AT + 0x80, 200, [arm, *step]),
        ("enc", tail, 1000, ["ldr x4, [x0, #0x28]", "add x4, x4, #1", "str x4, [x0, #0x28]",
                             "cmp x4, x9", f"b.lo {hex(AT)}"]),
        ("enc", tail + 20, 1, ["ret"]),
        ("enc", norm, normalised, ["ldr w7, [x0]", "strb w7, [x1, x5]", "lsl w4, w4, #8",
                                   "str w4, [x0, #0x10]", f"b {hex(AT + 12)}"])]


def test_a_reload_on_every_arm_of_a_switch_is_summed_over_the_arms(tmp_path):
    """Each arm reloads [x0, #0x10] with no store since the head's load: the missed CSE is
    every arm's reloads (1,000), less the 100 runs that joined after the normalising
    path's store, not one arm's."""
    _profile, table = mechanisms_of(tmp_path, switch_coder())
    (m,) = [m for m in table if m.kind == "memory-state"]
    said = [c for c in m.checks if c.startswith(RELOADED)]
    assert said == [f"{RELOADED}[x0, #0x10] at {AT:#x}, again at {AT + 0x24:#x}, "
                    f"{AT + 0x64:#x}, {AT + 0x84:#x} (at least 900 of 1,000 runs, 90% of "
                    f"iterations)"]
    claim = advise(builtins_of(m), "executions", None).claim
    assert "counted over every path from the first load" in claim


@pytest.mark.parametrize("blocks", [
    switch_coder(arm="strh w9, [x11]"),  # each arm stores before its reload
    switch_coder(normalised=1000),  # every run joins the switch after a store
])  # fmt: skip
def test_reloads_after_a_store_on_their_paths_are_not_a_missed_cse(tmp_path, blocks):
    _profile, table = mechanisms_of(tmp_path, blocks)
    (m,) = [m for m in table if m.kind == "memory-state"]
    assert not [c for c in m.checks if c.startswith(RELOADED)]


def encoder(rare: int, later: int) -> list[tuple[str, int, int, list[str]]]:
    """A coder step updating [x0, #0x10] and [x0, #0x28] on each of 1,000 iterations; on
    ``rare`` of them a flush path updates [x0, #0x8] (twice on ``later`` of those, on the
    same path) and stores a byte of output."""
    tail = AT + 4 * 15
    return [("enc", AT, 1000, [
        "ldr w4, [x0, #0x10]", "ldr x5, [x0, #0x28]", "add x5, x5, #1", "str x5, [x0, #0x28]",
        "sub w4, w4, #1", "str w4, [x0, #0x10]", "cmp w4, w8", f"b.hi {hex(tail)}"]),
        ("enc", AT + 32, rare, [
            "ldr x6, [x0, #8]", "add x6, x6, #1", "str x6, [x0, #8]", "strb w6, [x1, x5]",
            f"cbz w6, {hex(tail)}"]),
        ("enc", AT + 52, later, ["add x6, x6, #2", "str x6, [x0, #8]"]),
        ("enc", tail, 1000, ["ldr x7, [x0, #0x20]", "cmp x5, x7", f"b.lo {hex(AT)}"]),
        ("enc", tail + 12, 1, ["ret"])]


def test_fields_on_a_rare_path_are_not_every_iteration(tmp_path):
    """[x0, #0x8] runs on 10 % of the iterations: listed with its part, not as every
    iteration; its two stores on one path count once (the first dominates the second);
    the aliasing byte store is named with its PC and runs per iteration."""
    profile, table = mechanisms_of(tmp_path, encoder(rare=100, later=50))
    (m,) = [m for m in table if m.kind == "memory-state"]
    claim = advise(builtins_of(m), "executions", None).claim
    assert "[x0, #0x10], [x0, #0x28] loaded and stored back every iteration" in claim
    assert "loaded and stored back on fewer iterations: [x0, #0x8] on 10.0% of iterations" \
        in claim
    assert f"`strb w6, [x1, x5]` at {AT + 44:#x}, 0.1× per iteration (100 of 1,000)" in claim
    assert "1 read-only field(s) reloaded every iteration, and" in claim


def test_a_path_taken_every_iteration_is_every_iteration(tmp_path):
    _profile, table = mechanisms_of(tmp_path, encoder(rare=1000, later=1000))
    (m,) = [m for m in table if m.kind == "memory-state"]
    claim = advise(builtins_of(m), "executions", None).claim
    assert "[x0, #0x8], [x0, #0x10], [x0, #0x28] loaded and stored back every iteration" \
        in claim
    assert "fewer iterations" not in claim
    assert f"at {AT + 44:#x}, 1× per iteration" in claim


@pytest.mark.parametrize(("blocks", "values", "says"), [
    ([("copy", AT, 1000, stream_loop())],
     MemoryValues(("[x0]", "[x0, #0x8]", "[x19, #0x288]"), (),
                  ("[x0]", "[x0, #0x8]", "[x19, #0x288]"), (),
                  byte_store=f"`strb w9, [x4, x5]` at {AT + 0x28:#x}, 1× per iteration "
                             "(1,000 of 1,000)"),
     ["Copy the fields the loop uses ([x0], [x0, #0x8], [x19, #0x288], and the ones",
      "; 3 of them are computed from their own load", "from every iteration's critical path"]),
    (encoder(rare=100, later=50),
     MemoryValues(("[x0, #0x10]", "[x0, #0x28]"), (FieldUse("[x0, #0x8]", 0.1, False),),
                  ("[x0, #0x8]", "[x0, #0x10]", "[x0, #0x28]"), (),
                  byte_store=f"`strb w6, [x1, x5]` at {AT + 0x2c:#x}, 0.1× per iteration "
                             "(100 of 1,000)"),
     ["loaded and stored back on fewer iterations: [x0, #0x8] on 10.0% of iterations",
      "; 2 of them are computed from their own load",
      "Copy the fields the loop uses ([x0, #0x10], [x0, #0x28], [x0, #0x8], and the ones"]),
    ([("copy", AT, 1000, coder(back=f"b.ne {hex(AT)}"))],
     MemoryValues(("[x0, #0x10]", "[x0, #0x28]"), (), ("[x0, #0x10]", "[x0, #0x28]"),
                  ("[x0, #0x10]",), (f"[x0, #0x10] at {AT:#x}, again at {AT + 20:#x} (at "
                                     "least 1,000 of 1,000 runs, 100% of iterations)",)),
     ["Stronger evidence: [x0, #0x10] is loaded again with no store of any kind between"]),
])  # fmt: skip
def test_a_reopened_index_gives_the_advice_the_fields(tmp_path, blocks, values, says):
    from pcscope.index.store import open_workload

    mechanisms_of(tmp_path, blocks)  # writes p.csv
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (m,) = [m for m in reopened if m.kind == "memory-state"]
    assert m.value(MemoryValues) == values
    advice = advise(builtins_of(m), "executions", None)
    text = advice.claim + " " + advice.recommendation
    assert all(s in text for s in says), text
