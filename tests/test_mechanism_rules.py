"""Mechanism grouping rules on hand-written assembly, each with a look-alike that must stay
apart: copies of one loop, a dispatch site's sequence, a C-library routine with its one
caller, and what the coverage table says of code without an idea."""

from __future__ import annotations

import csv

import pytest

from pcscope.core import code_character
from pcscope.core.backends.advice import advise
from pcscope.core.chase_values import ChaseValues
from pcscope.core.mechanism_data import builtins_of
from pcscope.core.mechanism_finder import RELINKS, find_mechanisms
from pcscope.core.patterns import code_facts, find_patterns
from pcscope.core.readers.profile_csv import read_profile


def mechanisms_of(tmp_path, blocks):
    """blocks: (function, first pc, count, asm lines); one window per function."""
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for function, at, count, lines in blocks:
            for i, asm in enumerate(lines):
                out.writerow([function, function, hex(at + 4 * i), count, asm])
    profile = read_profile(path)
    facts = code_facts(profile)
    return profile, find_mechanisms(profile, find_patterns(profile, facts), facts)


def walk(at: int, next_offset: int = 8, swap: bool = False, r: tuple = (0, 9, 5, 6)) -> list:
    """A list walk of 9 instructions: key compare, some work, then the next pointer."""
    node, key, acc, tmp = (f"x{n}" for n in r)
    work = [f"eor {acc}, {acc}, {key}", f"and {tmp}, {acc}, #0xff"]
    return [f"ldr {key}, [{node}, #0x18]", "add x1, x1, #1", f"cmp {key}, x2",
            f"b.eq {hex(at + 0x40)}", *(work[::-1] if swap else work), f"str {tmp}, [x3]",
            f"ldr {node}, [{node}, #{next_offset}]", f"cbnz {node}, {hex(at)}"]


def test_copies_of_one_loop_are_one_mechanism(tmp_path):
    """The same walk inlined in two functions, other registers and schedule: one
    mechanism with both sites, sized by the sum. A walk over another field (+16) is
    another structure and stays apart."""
    profile, table = mechanisms_of(tmp_path, [
        ("find", 0x1000, 3000, walk(0x1000)),
        ("skip", 0x2000, 1000, walk(0x2000, swap=True, r=(4, 11, 7, 12))),
        ("other", 0x3000, 500, walk(0x3000, next_offset=16)),
    ])
    chases = [m for m in table if m.kind == "pointer-chase"]
    assert len(chases) == 2
    one = next(m for m in chases if "find" in m.functions)
    assert set(one.functions) == {"find", "skip"} and len(one.sites) == 2
    assert one.share == pytest.approx(sum(s.share for s in one.sites))
    assert one.share == pytest.approx(9 * 4000 / profile.total)
    assert any("same loop code" in c for c in one.checks)
    figures = {x.name: x.value for x in one.metrics}
    assert figures["chain steps"] == 4000
    other = next(m for m in chases if m is not one)
    assert other.functions == ("other",) and not any("same loop" in c for c in other.checks)


def handler(at: int, *, flag_after_branch: bool = False) -> list:
    """One threaded handler: some work, then its own dispatch with a flag merged into the
    opcode. The opcode pointer's step and the oparg are not part of the target."""
    flag = "ldrb w1, [sp, #0x100]"
    body = ["add x19, x19, #1"]
    body += [flag, f"cbz w5, {hex(at + 0x40)}"] if flag_after_branch else [flag]
    return [*body, "ldrh w0, [x23, #2]", "add x23, x23, #2", "lsr w22, w0, #8",
            "orr w2, w0, w1", "and x2, x2, #0xff", "ldr x3, [x20, x2, lsl #3]", "br x3"]


def test_dispatch_site_counts_its_sequence(tmp_path):
    """Each dispatch site counts the instructions of its block its target depends on
    (opcode fetch, merged flag, mask, table load); the handler's work, the pointer step
    and the oparg do not count, nor does a flag loaded before a branch (another block)."""
    blocks = [("interp", 0x1000 + 0x100 * k, 1000, handler(0x1000 + 0x100 * k,
                                                            flag_after_branch=k == 3))
              for k in range(4)]
    profile, table = mechanisms_of(tmp_path, blocks)
    (dispatch,) = [m for m in table if m.kind == "dispatch"]
    by_pc = {s.pc: s for s in dispatch.sites}
    first = by_pc[0x1000 + 4 * 8]  # the br of handler 0
    asm = {profile.asm(profile.row_of(pc)) for pc in first.pcs}
    assert asm == {"br x3", "ldr x3, [x20, x2, lsl #3]", "and x2, x2, #0xff",
                   "orr w2, w0, w1", "ldrh w0, [x23, #2]", "ldrb w1, [sp, #0x100]"}
    late = by_pc[0x1300 + 4 * 9]  # handler 3: the flag load sits before a branch
    assert len(late.pcs) == 5
    figures = {x.name: x.value for x in dispatch.metrics}
    assert figures["dispatch sequence"] == pytest.approx((6 * 3 + 5) / 4, abs=0.05)
    assert figures["stack reloads in the sequence"] == pytest.approx(0.75, abs=0.06)


STUB = ["adrp x16, 0x20000", "ldr x17, [x16, #0x10]", "add x16, x16, #0x10", "br x17"]
STRCMP = ["ldrb w2, [x0], #1", "ldrb w3, [x1], #1", "cmp w2, #1", "ccmp w2, w3, #0, cs",
          "b.eq 0x5000", "sub w0, w2, w3", "ret"]


def lookup(at: int) -> list:
    """A small lookup: walk a table of named entries, strcmp through the stub each step."""
    return ["stp x29, x30, [sp, #-0x20]!", "mov x19, x0", "ldr x1, [x19]", "mov x0, x20",
            "bl 0x4000", f"cbz w0, {hex(at + 0x30)}", "ldr x1, [x19, #0x28]!",
            f"cbnz x1, {hex(at + 12)}", "ldp x29, x30, [sp], #0x20", "ret"]


def test_routine_with_its_one_caller_is_one_mechanism(tmp_path):
    """strcmp called (through its stub) only from a small lookup function: the lookup and
    the stub run per call, so they are part of the mechanism."""
    _profile, table = mechanisms_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)),
        ("plt", 0x4000, 1000, STUB), ("strcmp", 0x5000, 1000, STRCMP)])
    (m,) = [m for m in table if m.kind == "libc-routine"]
    assert {s.function for s in m.sites} == {"strcmp", "lookup"}
    figures = {x.name: x.value for x in m.metrics}
    assert figures["calls from the top caller"] == 100.0
    assert figures["calls per caller entry"] == 1.0 and figures["caller entries"] == 1000
    assert len(m.pcs) == len(STRCMP) + len(STUB) + 10
    # a stub belongs to one mechanism: the routine's, so no PLT mechanism is left
    assert not [m for m in table if m.kind == "plt"]


@pytest.mark.parametrize("padding", [0, 30])  # the routine lighter, heavier than the caller
def test_routine_idea_names_the_routine_not_its_heavier_caller(tmp_path, padding):
    """The caller's code outweighs the routine (or not): the idea still names the routine
    as the routine and the caller as its caller; another variant of the routine is not a
    caller."""
    _profile, table = mechanisms_of(tmp_path, [
        ("lookup", 0x1000, 1000, lookup(0x1000)), ("plt", 0x4000, 1000, STUB),
        ("__strcmp_generic", 0x5000, 1000, ["nop"] * padding + STRCMP),
        ("__strcmp_aarch64", 0x6000, 1, STRCMP)])
    (m,) = [m for m in table if m.kind == "libc-routine"]
    advice = advise(builtins_of(m), "executions", None)
    assert advice.title == "Lookups by name: __strcmp_generic called from lookup"
    assert "its callers making at least 1% of the calls (through the PLT stub run as often): " \
           "`lookup`." in advice.claim


def test_routine_with_many_callers_stays_the_routine(tmp_path):
    """Two callers with half the calls each: no caller's code joins the routine (its stub
    does: the stub belongs to the routine, not to a PLT mechanism)."""
    _profile, table = mechanisms_of(tmp_path, [
        ("lookup", 0x1000, 500, lookup(0x1000)), ("scan", 0x2000, 500, lookup(0x2000)),
        ("plt", 0x4000, 1000, STUB), ("strcmp", 0x5000, 1000, STRCMP)])
    (m,) = [m for m in table if m.kind == "libc-routine"]
    assert {s.function for s in m.sites} == {"strcmp", "plt"}
    assert not [m for m in table if m.kind == "plt"]
    assert "calls per caller entry" not in {x.name for x in m.metrics}


def test_stub_leads_to_the_other_module_function_not_the_wrapper(tmp_path):
    """A wrapper (`xmalloc`) calls `malloc` of another module once per call, so both are
    entered as often as the stub runs: the wrapper that calls the stub is not its target.
    A stub leading to the module's own function (`helper`) is no call into another module."""
    wrapper = ["stp x29, x30, [sp, #-0x10]!", "bl 0x4000", "ldp x29, x30, [sp], #0x10", "ret"]
    user = ["stp x29, x30, [sp, #-0x10]!", "bl 0x4010", "ldp x29, x30, [sp], #0x10", "ret"]
    rows = [*[("xmalloc", "app", 0x1000 + 4 * i, 1000, a) for i, a in enumerate(wrapper)],
            *[("user", "app", 0x2000 + 4 * i, 300, a) for i, a in enumerate(user)],
            *[("helper", "app", 0x3000 + 4 * i, 300, a) for i, a in enumerate(["ret"])],
            *[("plt", "app", 0x4000 + 4 * i, 1000, a) for i, a in enumerate(STUB)],
            *[("plt", "app", 0x4010 + 4 * i, 300, a) for i, a in enumerate(STUB)],
            *[("malloc", "libc.so.6", 0x90000 + 4 * i, 1001, a)
              for i, a in enumerate(["mov x1, x0", "ret"])]]
    (plt,) = [m for m in module_mechanisms(tmp_path, rows) if m.kind == "plt"]
    figures = {x.name: x.value for x in plt.metrics}
    assert figures["calls through stubs"] == 1300
    assert figures["calls into other modules"] == 1000
    assert any(c.endswith(": malloc in libc.so.6 (1,000)") for c in plt.checks)



def module_mechanisms(tmp_path, rows: list[tuple[str, str, int, int, str]]) -> list:
    """The mechanisms of rows (function, module, pc, count, asm), each function its window."""
    path = tmp_path / "p.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "module", "window", "pc", "samples", "asm"])
        for fn, module, pc, count, asm in rows:
            out.writerow([fn, module, fn, hex(pc), count, asm])
    profile = read_profile(path)
    facts = code_facts(profile)
    return find_mechanisms(profile, find_patterns(profile, facts), facts)

# -- what the coverage table says of code without an idea --------------------------------
@pytest.mark.parametrize(("code", "says"), [
    ([("sha256h q0, q1, v2.4s", 10), ("sha256su0 v3.4s, v4.4s", 10), ("add x0, x0, #1", 30)],
     "crypto extensions (sha256h/sha256su0"),
    ([("aese v0.16b, v1.16b", 5), ("aesmc v0.16b, v0.16b", 5), ("ldr x1, [x2]", 40)],
     "crypto extensions (aese/aesmc"),
    ([("ld1 {v0.16b}, [x1], #16", 10), ("add v1.4s, v1.4s, v0.4s", 10), ("subs x2, x2, #1", 5),
      ("b.ne 0x1000", 5)], "already vectorised"),
    ([("fmadd d0, d1, d2, d0", 30), ("ldr d1, [x0], #8", 30), ("subs x2, x2, #1", 20),
      ("b.ne 0x1000", 20)], "scalar floating-point"),
    ([("ldr w1, [x0]", 20), ("cmp w1, w2", 20), ("b.lt 0x1000", 20), ("add w3, w3, #1", 40)],
     "branchy scalar integer code (20% conditional branches"),
    ([("ldr x1, [x0], #8", 40), ("str x1, [x2], #8", 40), ("add x3, x3, #1", 15),
      ("cbnz x3, 0x1000", 5)], "memory-heavy"),
    ([("ror w1, w1, #6", 30), ("eor w2, w2, w1", 30), ("add w3, w3, w2", 35),
      ("cbnz x4, 0x1000", 5)], "scalar integer code (5% conditional branches"),
    # a zeroing loop (one 8-byte store per four instructions, a short entry check) is a
    # store loop, not branchy code
    ([("cbz x1, 0x1c", 3), ("cmp x1, #0xf", 3), ("b.hi 0x20", 3), ("tst x0, #7", 3),
      ("b.eq 0x40", 3), ("str xzr, [x0], #8", 30), ("sub x1, x1, #8", 30),
      ("tst x1, #0xfffffffffffffff8", 30), ("b.ne 0x40", 30), ("ret", 3)],
     "store loop: 22% of its executions are stores, mostly 8-byte ones"),
    ([("strb wzr, [x0], #1", 25), ("subs x1, x1, #1", 25), ("b.ne 0x0", 25),
      ("add x2, x2, #1", 25)], "mostly 1-byte ones"),
])  # fmt: skip
def test_code_character(code, says):
    assert says in code_character.describe(code).what


@pytest.mark.parametrize(("code", "not_said"), [
    ([("ror w1, w1, #6", 30), ("eor w2, w2, w1", 60), ("add w3, w3, w2", 10)], "crypto"),
    ([("fmov d0, x1", 10), ("ldr q0, [x0]", 2), ("add x0, x0, #1", 88)], "vectorised"),
    ([("sha256h q0, q1, v2.4s", 1), ("add x0, x0, #1", 99)], "crypto"),
])  # fmt: skip
def test_code_character_look_alikes(code, not_said):
    """A software hash round (ror/eor/add) is not the crypto extensions; a stray q load is
    not vectorised code; one crypto instruction in a hundred does not make crypto code."""
    assert not_said not in code_character.describe(code).what


# -- advice follows the figures it prints ----------------------------------------------------
def mech(kind: str, **metrics: float) -> dict:
    return {"id": f"mech:{kind}:0x1000", "kind": kind, "category": "x", "share": 0.1,
            "sites": 1, "functions": ["f"], "site_pcs": [[0x1000]], "checks": [], "values": [],
            "metrics": [{"name": k.replace("_", " "), "value": v, "unit": "", "how": ""}
                        for k, v in metrics.items()]}


@pytest.mark.parametrize(("m", "says", "not_said"), [
    (mech("llsc", attempts_per_entry=1.4), "retries", "almost never retries"),
    (mech("llsc", attempts_per_entry=1.0), "almost never retries", "share it less"),
    (mech("outline-atomic", helpers=2, helper_calls=100, LSE_path=100.0), "pick LSE",
     "LL/SC path"),
    (mech("outline-atomic", helpers=2, helper_calls=100, LSE_path=0.0), "LL/SC path on 100%",
     "pick LSE on this core"),
    (mech("byte-compare", compare_steps=26, bytes_compared_per_entry=11.35),
     "11.35 bytes on average, about 2 8-byte steps", "saves little"),
    (mech("byte-compare", compare_steps=26, bytes_compared_per_entry=2.5),
     "within 2.5 bytes", "on average, about"),
    (mech("spin-wait", polls_per_exit=1.02), "almost never waits", "__never__"),
    (mech("spin-wait", polls_per_exit=40), "Wait instead of polling", "almost never waits"),
    (mech("byte-loop", iterations_per_entry=10), "gain per entry is small", "__never__"),
    (mech("byte-loop", iterations_per_entry=60), "Handle 8 or 16", "gain per entry is small"),
])  # fmt: skip
def test_advice_follows_the_printed_figures(m, says, not_said):
    from pcscope.core.backends.advice import advise

    advice = advise(m, "executions", None)
    assert advice is not None
    assert says in advice.recommendation and not_said not in advice.recommendation


@pytest.mark.parametrize(("store", "relink"), [
    (["str x0, [x7, #0x10]"], "`str x0, [x7, #0x10]` at 0x101c"),  # stores the link: an insert
    (["stp x0, x5, [x7]"], "`stp x0, x5, [x7]` at 0x101c"),
    (["str x0, [sp, #8]"], None),  # a spill of the link, not the structure
    (["str x5, [x0, #0x10]"], None),  # writes a field of the node, no link
    (["add x0, x0, #0x10", "str x0, [x7]"], None),  # stores an address, not the loaded link
])  # fmt: skip
def test_chase_names_a_store_that_rewrites_the_structure(tmp_path, store, relink):
    """A walk that stores a link it loaded into memory off the stack rewrites the structure
    it walks (the advice then drops jump pointers and interleaving); a spill of the link or
    a store of another value through it does not."""
    lines = walk(0x1000)
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, 100, [*lines[:-2], *store,
                                                                    *lines[-2:]])])
    (chase,) = [m for m in table if m.kind == "pointer-chase"]
    said = [c.split(": ", 1)[1] for c in chase.checks if c.startswith(RELINKS)]
    assert (said[0] if said else None) == relink
    assert (chase.value(ChaseValues) or ChaseValues()).relink == relink  # what the advice reads


@pytest.mark.parametrize(("step", "budget"), [
    (["subs w6, w6, #1", "b.eq 0x1100"], "w6"),  # counts down, exits at zero
    (["sub w14, w14, #1", "cmp w14, #0", "b.eq 0x1100"], "w14"),
    (["add w6, w6, #1", "cmp w6, w7", "b.eq 0x1100"], None),  # counts up to a bound: no
    (["sub w6, w6, #2", "cbz w6, 0x1100"], None),  # steps by two: not a step count
    (["sub w6, w6, #1", "str w6, [x3, #8]"], None),  # counts but never tested
])  # fmt: skip
def test_chase_step_budget(tmp_path, step, budget):
    """A walk that already stops on a step budget says so (the advice then lowers it
    rather than adding a cap); look-alikes without a down-counter tested at zero do not."""
    lines = walk(0x1000)
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, 100, [*lines[:-2], *step,
                                                                    *lines[-2:]])])
    (chase,) = [m for m in table if m.kind == "pointer-chase"]
    said = [c for c in chase.checks if "step budget" in c]
    assert (said[0].split(": ")[1].split()[0] if said else None) == budget
    assert (chase.value(ChaseValues) or ChaseValues()).budget == budget  # what the advice reads


def test_a_reopened_index_tells_the_advice_the_walk_already_prefetches(tmp_path):
    """A walk issuing `prfm` is told to check how far ahead it runs, not to add one; a walk
    without is not told it has one (a check's wording no longer decides it)."""
    from pcscope.core.backends.advice import advise
    from pcscope.core.mechanism_data import builtins_of
    from pcscope.index.store import open_workload

    for prefetch, told in ((["prfm pldl1keep, [x0, #0x40]"], True), ([], False)):
        lines = walk(0x1000)
        folder = tmp_path / str(told)
        folder.mkdir()
        mechanisms_of(folder, [("f", 0x1000, 100, [*lines[:-2], *prefetch, *lines[-2:]])])
        open_workload(folder / "p.csv", index_dir=folder / "idx").mechanisms  # noqa: B018
        reopened = open_workload(folder / "p.csv", index_dir=folder / "idx").mechanisms
        (chase,) = [m for m in reopened if m.kind == "pointer-chase"]
        assert (chase.value(ChaseValues) or ChaseValues()).prefetched is told
        rec = advise(builtins_of(chase), "executions", None).recommendation
        assert ("The loop already issues `prfm`" in rec) is told


def interpreter(handler_extra: tuple[str, ...] = ()) -> list:
    """An interpreter entered 10 times: its entry stores a frame byte once (and takes the
    frame's address), sets a page register; four threaded handlers then each run 1000
    times and merge a halfword at page+0xb34 (cmp/csetm) and the frame byte into the next
    opcode before their own ``br``."""
    entry = ("interp", 0x1000, 10, ["stp x29, x30, [sp, #-0x120]!", "add x7, sp, #0x100",
                                    "strb w5, [sp, #0x100]", "adrp x20, #0x5000",
                                    "b #0x1100"])
    handlers = [("interp", 0x1100 + 0x100 * k, 1000, [
        *handler_extra, "add x19, x19, #1", "ldrh w2, [x20, #0xb34]", "ldrh w4, [x23, #2]",
        "cmp w2, #0", "csetm w2, ne", "ldrb w1, [sp, #0x100]", "add x23, x23, #2",
        "orr w2, w2, w1", "orr w2, w2, w4", "and x2, x2, #0xff",
        "ldr x3, [x22, x2, lsl #3]", "br x3"]) for k in range(4)]
    return [entry, *handlers]


def test_dispatch_names_the_fixed_state_it_tests(tmp_path):
    """The halfword at a fixed address (3 rows: load, compare, mask) and the frame byte
    stored once per entry (1 row) are each counted per dispatch and sized; the frame
    byte's taken address is named (a callee may write it)."""
    _profile, table = mechanisms_of(tmp_path, interpreter())
    (dispatch,) = [m for m in table if m.kind == "dispatch"]
    figures = {x.name: x.value for x in dispatch.metrics}
    assert figures["merged into the opcode"] == 6
    assert figures["fixed-address test per dispatch"] == 3
    assert figures["frame-field test per dispatch"] == 1
    total = 10 * 5 + 4 * 1000 * 12
    assert figures["fixed-address test share"] == pytest.approx(100 * 3 * 4000 / total, abs=0.01)
    fixed = next(c for c in dispatch.checks if c.startswith("a value at a fixed address"))
    assert "page 0x5000 + 0xb34 at 4 of 4 sites" in fixed and "`csetm w2, ne`" in fixed
    assert "kept as the page in x20 (`adrp` at 0x100c)" in fixed
    assert any(c.startswith("tested as a 16-bit value") for c in dispatch.checks)
    frame = next(c for c in dispatch.checks if c.startswith("a frame field"))
    assert "only at 0x1008" in frame and "taken at 0x1004" in frame


def test_a_reopened_index_gives_the_advice_the_fixed_state(tmp_path):
    """The stored mechanism keeps the typed value the advice quotes: the hottest test of
    each kind as its check says it, and the halfword's mask."""
    from pcscope.core.dispatch_state import CHECK, FIXED, FRAME
    from pcscope.core.dispatch_state_values import DispatchStateValues
    from pcscope.index.store import open_workload

    _profile, table = mechanisms_of(tmp_path, interpreter())  # writes p.csv
    (built,) = [m for m in table if m.kind == "dispatch"]
    open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms  # noqa: B018
    reopened = open_workload(tmp_path / "p.csv", index_dir=tmp_path / "idx").mechanisms
    (dispatch,) = [m for m in reopened if m.kind == "dispatch"]
    said = dispatch.value(DispatchStateValues)
    assert said is not None and said == built.value(DispatchStateValues) and said.masked
    assert CHECK[FIXED] + said.fixed in dispatch.checks
    assert CHECK[FRAME] + said.frame in dispatch.checks


def test_state_the_loop_changes_is_not_called_fixed(tmp_path):
    """Look-alikes: the page register rewritten in a handler (a block before its dispatch's,
    so only the flow shows it reaches the dispatch), and the frame byte stored by every
    handler, are not fixed state: nothing is named."""
    _profile, table = mechanisms_of(tmp_path, interpreter(
        ("ldr x20, [x21, #8]", "strb w6, [sp, #0x100]", "cbz x9, #0x1000")))
    (dispatch,) = [m for m in table if m.kind == "dispatch"]
    names = {x.name for x in dispatch.metrics}
    assert "fixed-address test per dispatch" not in names
    assert "frame-field test per dispatch" not in names
    assert not any(c.startswith(("a value at a fixed", "a frame field")) for c in dispatch.checks)
    assert not dispatch.values  # nothing for the advice to quote either


def test_a_frame_field_is_not_hoistable_when_each_entry_dispatches_once(tmp_path):
    """Entered as often as it dispatches, the function has no dispatch loop to take the
    frame field's test out of: it is not named (the fixed-address value still is)."""
    blocks = interpreter()
    entry = blocks[0]
    _profile, table = mechanisms_of(tmp_path, [(entry[0], entry[1], 4000, entry[3]),
                                               *blocks[1:]])
    (dispatch,) = [m for m in table if m.kind == "dispatch"]
    names = {x.name for x in dispatch.metrics}
    assert "frame-field test per dispatch" not in names
    assert "fixed-address test per dispatch" in names
