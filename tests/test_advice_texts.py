"""The offline analyst's advice per mechanism says nothing the mechanism's own figures and
checks contradict (from a review of the real corpus by an Arm performance engineer)."""

from __future__ import annotations

import msgspec

from pcscope.core.backends.advice import advise
from pcscope.core.chase_values import ChaseValues
from pcscope.core.dispatch_state_values import DispatchStateValues
from pcscope.core.mechanism_data import MechanismData
from pcscope.core.mechanism_values import Values
from pcscope.core.mechanisms import Metric
from pcscope.core.plt_values import PltValues


def mech(kind: str, metrics: dict[str, float], checks: list[str],
         functions: tuple[str, ...] = ("f",), values: Values | None = None) -> dict:
    """The tools' data of a mechanism of ``kind`` with these figures, checks and values."""
    data = MechanismData(f"mech:{kind}:0x10", kind, "other", 0.2, 1, functions, ((0x10,),),
                         tuple(Metric(k, v, "", "") for k, v in metrics.items()),
                         tuple(checks), (values,) if values else ())
    return msgspec.to_builtins(data)


def test_threaded_dispatch_keeps_only_what_the_sites_leave_to_do() -> None:
    """Many separate `br` sites are already apart: no -fno-crossjumping, no opcode-set
    redesign; the reloads merged into each dispatch and the mispredict measurement stay."""
    m = mech("dispatch", {"dispatch sites": 162, "dispatches": 1e7,
                          "instructions per dispatch": 37.8, "dispatch sequence": 11,
                          "stack reloads in the sequence": 1.2, "merged into the opcode": 7},
             ["threaded: every handler ends in its own ldr+br"])
    advice = advise(m, "executions", None)
    rec = advice.recommendation
    assert "crossjumping" not in rec and "super-instruction" not in rec
    assert "specialised opcodes" not in rec
    assert "162 separate" in rec and "BR_MIS_PRED_RETIRED" in rec
    assert "7 of the 11 instructions" in rec and "reloaded from the stack" in rec
    # the upside is the merging it deletes, not a mispredict penalty it ruled out
    assert advice.removes == round(7 / 11, 3)


def test_dispatch_that_merges_nothing_keeps_the_category_penalty() -> None:
    """A lean threaded dispatch (opcode fetch, table load, br) has nothing to delete: no
    flag advice, no removed fraction; a switch dispatch gets the threading advice."""
    lean = mech("dispatch", {"dispatch sites": 40, "dispatches": 1e7,
                             "instructions per dispatch": 20, "dispatch sequence": 3,
                             "merged into the opcode": 0},
                ["threaded: every handler ends in its own ldr+br"])
    advice = advise(lean, "executions", None)
    assert advice.removes is None and "Those instructions are the lever" not in \
        advice.recommendation
    switch = mech("dispatch", {"dispatch sites": 1, "dispatches": 1e7,
                               "instructions per dispatch": 20, "dispatch sequence": 9,
                               "merged into the opcode": 4}, ["one shared dispatch jump"])
    assert advise(switch, "executions", None).removes is None


def test_threaded_dispatch_is_told_by_its_sites_not_by_a_checks_wording() -> None:
    """Threaded dispatch is the finder's rule on the sites (pcscope.core.shapes.DISPATCH_SITES
    in one function), read from the figure: a check worded otherwise, or one that happens to
    say "threaded" of one shared jump, does not change it."""
    figures = {"dispatches": 1e7, "instructions per dispatch": 37.8, "dispatch sequence": 11,
               "merged into the opcode": 7}
    many = mech("dispatch", {"dispatch sites": 162, **figures}, ["each handler has its own br"])
    assert advise(many, "executions", None).removes == round(7 / 11, 3)
    one = mech("dispatch", {"dispatch sites": 1, **figures},
               ["one shared jump, not threaded code"])
    assert advise(one, "executions", None).removes is None


def test_a_short_walk_is_not_capped_but_its_misses_are_hidden() -> None:
    """6.64 steps per call: a budget of tens of steps rarely ends the walk, so lowering it is
    not advised; the next walk's head is prefetched. Overlapping walks is a condition."""
    m = mech("pointer-chase", {"chain steps": 5e7, "steps per call": 6.64}, ["in a loop"],
             values=ChaseValues("w14", None, None, None, False))
    rec = advise(m, "executions", None).recommendation
    assert "lower the step budget" not in rec and "rarely ends it" in rec
    assert "prefetch the head of the next walk" in rec
    assert "only if several independent walks are pending" in rec
    assert "walk several independent chains" not in rec and "walk order" not in rec
    assert "only a shorter walk helps" not in rec


def test_lowering_a_long_walks_budget_says_what_it_costs() -> None:
    m = mech("pointer-chase", {"chain steps": 5e7, "steps per call": 23.05}, ["in a loop"],
             values=ChaseValues("w6", None, None, None, False))
    rec = advise(m, "executions", None).recommendation
    assert "lower the step budget the loop already has (w6" in rec
    assert "trades the search's result (e.g. compression ratio) for speed" in rec
    assert "only if several independent walks are pending" in rec and "walk order" not in rec


def test_a_walk_that_rewrites_its_structure_gets_no_jump_pointers_or_interleaving() -> None:
    """A walk that stores the links it loads back into the structure (a tree insert) makes
    jump pointers stale and cannot run beside another walk: both levers are ruled out, with
    the store named. Without that store both stay, as conditions only."""
    m = mech("pointer-chase", {"chain steps": 5e7, "steps per call": 6.64}, ["in a loop"],
             values=ChaseValues(None, "`str w3, [x30]` at 0x5208", None, None,
                                    False))
    rec = advise(m, "executions", None).recommendation
    assert "jump pointers to prefetch several hops ahead do not fit" in rec
    assert "(`str w3, [x30]` at 0x5208), so they would go stale on every insert" in rec
    assert "walks cannot be interleaved" in rec and "only if several" not in rec
    plain = advise(mech("pointer-chase", {"chain steps": 5e7, "steps per call": 6.64},
                        ["in a loop"]), "executions", None).recommendation
    assert "do not fit" not in plain and "cannot be interleaved" not in plain
    assert "pay only for a structure read far more often than it changes" in plain


def test_plt_advice_splits_own_calls_from_c_library_calls() -> None:
    """-Bsymbolic-functions only binds the library's own functions: calls into other modules
    need -fno-plt or fewer calls; the stubs a routine's idea counts are named, not counted."""
    m = mech("plt", {"stubs": 442, "calls through stubs": 5.7e7,
                     "calls into other modules": 7.1e6,
                     "calls counted with C-library routines": 7.9e6},
             ["adrp x16; ldr x17"], functions=("OSSL_PARAM_locate",),
             values=PltValues(("malloc in libc.so.6 (1,943,128)", "free in libc.so.6 (1,943,325)"),
                             ("strcmp (7,875,654)",)))
    advice = advise(m, "executions", None)
    assert "7,100,000 of the calls (12%) go into other modules (malloc in libc.so.6" \
        in advice.claim
    assert "(strcmp (7,875,654)) are counted with those routines' ideas, not here" in advice.claim
    assert "do nothing for calls into other libraries (7,100,000 of these calls, 12%)" \
        in advice.recommendation
    assert "`-fno-plt`" in advice.recommendation and "fewer such calls" in advice.recommendation


def test_a_c_library_routine_is_not_called_tuned_for_the_core() -> None:
    m = mech("libc-routine", {"calls": 7.9e6}, ["C-library strcmp routine (by symbol name)"],
             functions=("strcmp", "OSSL_PARAM_locate"))
    assert "tuned" not in advise(m, "executions", None).claim


def test_wide_compare_advice_covers_interleaved_halfword_steps() -> None:
    """A compare chain mixing byte and halfword steps (bzip2's block and quadrant arrays)
    needs both streams widened, in the original order; a byte-only chain says nothing."""
    mixed = mech("byte-compare", {"compare steps": 26, "bytes compared per entry": 11.35,
                                  "halfword steps": 8}, ["26 steps"])
    only = mech("byte-compare", {"compare steps": 26, "bytes compared per entry": 11.35,
                                 "halfword steps": 0}, ["26 steps"])
    rec = advise(mixed, "executions", None).recommendation
    assert "8 of the 26 steps compare 16-bit values" in rec and "`ldr q`" in rec
    assert "16-bit" not in advise(only, "executions", None).recommendation


def test_the_checks_leave_the_claim_for_their_own_field() -> None:
    """The checks are the idea's supporting detail, kept whole beside the claim rather
    than appended to it (where the claim's length cut them and what followed)."""
    m = mech("memory-state", {"field accesses per iteration": 8.4, "iterations": 1e6},
             ["loads and stores of [base, #offset] fields, not stack slots",
              "1 byte store(s) through other addresses in the loop"])
    advice = advise(m, "executions", None)
    assert advice is not None
    assert "Checks passed" not in advice.claim and "not stack slots" not in advice.claim
    assert advice.checks == tuple(m["checks"])


def test_dispatch_names_the_fixed_state_and_what_removes_each() -> None:
    """The fixed-address halfword tested into a mask and the frame field stored once per
    entry are named with their own figures; the probe-semaphore reading is a hedged
    sentence, and only for a 16-bit value compared with zero and masked."""
    fixed = ("page 0x5000 + 0xb34 at 4 of 4 sites, e.g. 0x1104–0x1110: "
             "`ldrh w2, [x20, #0xb34]`, `cmp w2, #0`, `csetm w2, ne`")
    frame = "[sp, #0x100] at 4 of 4 sites, e.g. 0x1114: `ldrb w1, [sp, #0x100]`"
    checks = ["threaded: every handler ends in its own ldr+br",
              "a value at a fixed address is tested on every dispatch: " + fixed,
              "a frame field stored once per entry is tested on every dispatch: " + frame]
    figures = {"dispatch sites": 162, "dispatches": 1e7, "instructions per dispatch": 37.8,
               "dispatch sequence": 11, "merged into the opcode": 6,
               "fixed-address test per dispatch": 3.1, "fixed-address test share": 3.78,
               "frame-field test per dispatch": 1.0, "frame-field test share": 1.21}
    masked = mech("dispatch", figures,
                  [*checks, "tested as a 16-bit value compared with zero and turned into a "
                            "mask: page 0x5000 + 0xb34"],
                  values=DispatchStateValues(fixed, frame, masked=True))
    rec = advise(masked, "executions", None).recommendation
    assert "3.1 instructions per dispatch (3.78% of the total) load a halfword at a fixed " \
           "address, compare it with zero and turn it into an all-ones mask on every " \
           "dispatch: page 0x5000 + 0xb34" in rec
    assert "if it is one, a build without those probes removes these rows" in rec
    assert "1 per dispatch (1.21%) reload a frame field stored once per entry and merge " \
           "it in: [sp, #0x100]" in rec
    assert "Test it where it can change (on entry and after the calls" in rec
    plain = advise(mech("dispatch", figures, checks, values=DispatchStateValues(fixed, frame)),
                   "executions", None).recommendation
    assert "semaphore" not in plain and "halfword" not in plain
    assert "test a value at a fixed address: page 0x5000" in plain
