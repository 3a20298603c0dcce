"""The offline analyst's ideas about mechanisms: what each kind means for this code, what to
try, what the code already does, and how sure a profile alone can be.

A mechanism (pcscope.core.mechanisms) arrives as the ``window`` tool's data: its kind, own
share, sites, functions, metrics and the code-shape checks that passed. The advice fits the
context: an interpreter gets dispatch advice, JIT code the JIT's own diagnostics, a C-library
routine its callers, an FP divide FP advice; nothing the checks say the code already does
(threaded dispatch, outline atomics, a prefetch in the loop) is recommended again.

Confidence (``confidence``) is documented here, not a constant per basis:
``ceiling(basis) × (1 − risk(kind)) × (0.6 + 0.4 × checks passed / checks expected)``.
``ceiling``: exact execution counts 0.6, sampled counts or cycles 0.5 (the pattern and its
counts are known, the cost per instruction is not). ``risk`` is the rule's known
false-positive rate on profile-only evidence (RISK below, from reviews of real programs).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pcscope.core import dispatch_state, invariant_work, loop_nests
from pcscope.core.backends.rules import MECHANISM_RULE
from pcscope.core.call_cohorts import (
    CALLER_PART,
    PLUMBING,
)
from pcscope.core.chase_values import (
    Beside,
    ChaseValues,
    PairedLinks,
    SecondReach,
    WrapBound,
    counts_down,
)
from pcscope.core.crc_values import CrcValues
from pcscope.core.dispatch_state_values import DispatchStateValues
from pcscope.core.fixed_trip_sums import LOOP_CONTROL
from pcscope.core.fixed_trip_values import FixedTripValues
from pcscope.core.gather_values import CALL, LONG_PATH, LOOP, GatherValues
from pcscope.core.hand_written_values import HandWrittenValues
from pcscope.core.lookup_values import LookupValues
from pcscope.core.mechanism_data import MechanismData, read
from pcscope.core.mechanism_finder import is_jit_module
from pcscope.core.mechanisms import number
from pcscope.core.memory_values import MemoryValues
from pcscope.core.nest_values import NestValues
from pcscope.core.patterns import libc_routine_name
from pcscope.core.plt_values import PltValues
from pcscope.core.recomputed_values import RecomputedValues
from pcscope.core.relaxation_values import RelaxationValues
from pcscope.core.return_zeroing import SMALL as ZEROING_SMALL
from pcscope.core.shapes import DISPATCH_SITES
from pcscope.core.store_loops import WIDE
from pcscope.core.tree_values import Caller, OneShot, PairedAllocation, TreeValues

MIN_SHARE = 0.005  # own share a profile-only mechanism needs to become an idea
MIN_SHARE_BY_KIND = {"spin-wait": 0.002, "libc-routine": 0.01, "store-loop": 0.01}
CEILING = {"executions": 0.6, "samples": 0.5, "cycles": 0.5}
# Known false-positive risk of each profile-only mechanism idea (what fraction of such ideas
# an experienced reviewer rejected or sent back on real programs; higher = less sure).
RISK = {
    "dispatch": 0.15,  # the shape is unambiguous; the cost (mispredicts) is not measured
    "plt": 0.1,  # stubs are certain; only the saving per call is unmeasured
    "libc-routine": 0.2,  # the routine is certain; whether callers can call less is not
    "pointer-chase": 0.35,  # loop-carried is certain; misses are not (may hit L1)
    "byte-loop": 0.35,  # trip count is counted; the gain depends on data and layout
    "byte-compare": 0.3,  # the unrolled steps are certain; the bytes per call are counted
    "spin-wait": 0.3,  # may be a short, rarely contended wait
    "llsc": 0.3,
    "outline-atomic": 0.4,
    "libc-lock": 0.35,
    "division": 0.4,  # the divide's latency may be hidden by other work
    "fp-division": 0.4,
    "indirect-call": 0.45,  # targets per site are unknown without a branch profile
    "jit": 0.3,
    "spill-block": 0.25,  # spills are certain; whether fewer registers are needed is not
    "return-zeroing": 0.15,  # the runs are certain; whether the flag may go is policy
    "table-crc": 0.2,  # the CRC step is unambiguous; the polynomial is not read (data)
    "per-operation": 0.3,  # the call tree is exact; how much of it can be set up once is not
    "memory-state": 0.3,  # the loads and stores are certain; that they can stay in registers
    #   is the compiler's call (a field a callee or another thread reads must stay in memory)
    "byte-swap-store": 0.1,  # the shifts and byte stores are certain; only the width is read
    "store-loop": 0.2,  # the loop is certain; the bytes per call decide what wider stores save
    "gather-branch": 0.35,  # the gather and the branches are certain; whether mispredicts or
    #   misses cost is not in the counts
    "struct-relaxation": 0.3,  # the strides and the rare update are certain; whether the
    #   layout may change (other code reads the struct) is not
    "fixed-trip-sum": 0.25,  # the constant trips are exact; the saving is the loop control
}
EXPECTED_CHECKS = {"pointer-chase": 3, "byte-loop": 4, "spin-wait": 3, "dispatch": 2,
                   "memory-state": 3, "table-crc": 3, "gather-branch": 4,
                   "struct-relaxation": 4, "fixed-trip-sum": 3}
NOUN = {"executions": "executions", "samples": "samples", "cycles": "cycles"}


@dataclass(frozen=True)
class Advice:
    rule: str
    title: str
    claim: str  # what the profile shows (without the label and the basis sentence)
    recommendation: str
    pcs: tuple[int, ...]  # the mechanism's hottest sites' PCs, key instruction first
    confidence: float
    removes: float | None = None  # of the own share the recommendation deletes outright
    # the checks that passed, less those the texts above state in full (the nest sentence
    # and the recomputed work the recommendation names)
    checks: tuple[str, ...] = ()


def count(n: float, noun: str) -> str:
    """A count in the profile's own unit: exact counts are times, sampled ones samples."""
    return f"{number(n)} times" if noun == "executions" else f"in {number(n)} {noun}"


def metric(m: MechanismData, name: str) -> float | None:
    return next((x.value for x in m.metrics if x.name == name), None)


def confidence(kind: str, basis: str, checks: int) -> float:
    expected = EXPECTED_CHECKS.get(kind, 1)
    passed = min(1.0, checks / expected)
    return round(CEILING.get(basis, 0.5) * (1.0 - RISK.get(kind, 0.4)) * (0.6 + 0.4 * passed), 3)


def advise(data: dict[str, Any], basis: str, module: str | None) -> Advice | None:
    """The idea about one mechanism (the tools' data of it, pcscope.core.mechanism_data), or
    None when it is too small or nothing is to be done."""
    m = read(data)  # typed once: every part of the idea reads this
    kind = m.kind
    if m.share < MIN_SHARE_BY_KIND.get(kind, MIN_SHARE) or kind not in _WRITERS:
        return None
    text = _WRITERS[kind](m, NOUN.get(basis, "samples"))
    if text is None:
        return None
    title, claim, recommendation = text
    removes = _REMOVES[kind](m) if kind in _REMOVES else None
    if m.value(HandWrittenValues) is not None:
        recommendation = _ASSEMBLY.get(kind, _assembly_note)(m, recommendation)
    if kind not in ("jit",) and _jit(module):
        recommendation, removes = _JIT_ADVICE, None
    recommendation = _hoist_first(m, recommendation)
    claim = _nest(m) + claim
    pcs = tuple(pc for site in m.site_pcs for pc in site)
    fn = ", ".join(f"`{f}`" for f in m.functions[:3])
    checks = tuple(c for c in m.checks
                   if not c.startswith(_SAID_ELSEWHERE) and not _said_in(c, recommendation))
    claim = (f"{claim} Own share {m.share:.2%} ({len(m.site_pcs)} of {m.sites} "
             f"site(s) cited) in {fn}.")
    evidence = [c for c in m.checks if not c.startswith(_NOT_EVIDENCE)]
    return Advice(MECHANISM_RULE[kind], title, claim, recommendation, pcs,
                  confidence(kind, basis, len(evidence)), removes, checks)


# checks that say where else to look, not why the mechanism is believed; and those the
# sentences below state in full
_RECOMPUTED = (invariant_work.CHECK, invariant_work.CHANGED, invariant_work.BLOCKED,
               invariant_work.COUNTED,
               invariant_work.CLAMPED, invariant_work.CLAMPED_WORK, invariant_work.STAYS,
               invariant_work.NOT_COUNTED)
_NOT_EVIDENCE = (loop_nests.INNER, loop_nests.OUTER, *_RECOMPUTED)
_SAID_ELSEWHERE = (loop_nests.INNER, loop_nests.OUTER)
_STATED = (*dispatch_state.CHECK.values(), dispatch_state.MASK)
LEADS = 3.0  # recomputed instructions per iteration from which hoisting is the first lever
SHOWN = 4  # recomputed instructions a recommendation names (the check lists them all)


def _said_in(check: str, recommendation: str) -> bool:
    """A recomputed-work or dispatch-state check the recommendation already states in
    full."""
    return any(check.startswith(prefix) and check.removeprefix(prefix) in recommendation
               for prefix in (*_RECOMPUTED, *_STATED))


def _nest(m: MechanismData) -> str:
    """The sentence naming the other loops of this loop nest (an empty string if none)."""
    nest = m.value(NestValues) or NestValues()
    parts = ([f"its inner loop is {_ids(nest.inner)}"] if nest.inner else []) + \
        ([f"its outer loop is {_ids(nest.outer)}"] if nest.outer else [])
    return f"One loop nest with other ideas: {'; '.join(parts)}. " if parts else ""


def _ids(ids: tuple[str, ...]) -> str:
    return " and ".join(f"`{i}`" for i in ids)


def _hoist_first(m: MechanismData, recommendation: str) -> str:
    """The recommendation led by hoisting the work the loop recomputes from rarely changing
    inputs, when that is several instructions per iteration: a scalar change that comes
    before any rewrite of the loop (a vector form needs those values fixed anyway)."""
    per = metric(m, invariant_work.PER_ITERATION)
    work = m.value(RecomputedValues)
    listed = work.instructions if work is not None else ()
    what = _with_more(*_named(listed, SHOWN)) if listed else None
    clamped = _clamped(m)
    if m.kind == "pointer-chase" or ((per is None or per < LEADS or what is None)
                                        and not clamped):
        return recommendation
    if per is None or per < LEADS or what is None:
        return f"First hoist {clamped} Then: {recommendation[:1].lower()}{recommendation[1:]}"
    changes = metric(m, invariant_work.INPUT_CHANGES) or 0
    blocked = work.blocked if work is not None else ""
    of = metric(m, invariant_work.LOOP_PER_ITERATION)
    share = metric(m, invariant_work.SHARE)
    # the rows the total counts by their span; which paths it leaves out is in the checks
    rows = work.span if work is not None else ""
    lead = (f"First hoist the work the loop recomputes: {number(per)} of "
            + (f"the {number(of or 0)} instructions per iteration at {rows}" if rows
               else f"its {number(of or 0)} instructions per iteration")
            + f" ({what}; {number(share or 0)}% of "
            f"the total) read only values that change on at most {number(changes)}% of the "
            f"iterations; compute them where those values change"
            + (f" ({work.changed})" if work is not None and work.changed else "")
            + " and keep the results in locals.")
    if blocked:
        lead += (f" The loop's stores ({blocked}) might write what those loads read, so the "
                 f"compiler cannot: copy the values into locals (or mark the pointers "
                 f"`restrict`) once you know they do not.")
    if clamped:
        lead += f" Hoist also {clamped}"
    return f"{lead} Then: {recommendation[:1].lower()}{recommendation[1:]}"


def _named(listed: tuple[str, ...], shown: int) -> tuple[str, int]:
    """``shown`` of the instructions ``listed`` (address order), the loads first (what the
    compiler may not move, so what the reader must), and how many are left out: the checks
    keep the whole list."""
    named = sorted(listed, key=lambda i: not i.startswith("`ld"))[:shown]  # stable
    return ", ".join(named), len(listed) - len(named)


def _with_more(named: str, more: int) -> str:
    return f"{named} (and {more} more)" if more else named


def _and_more(listed: tuple[str, ...]) -> str:
    """The first load of a check's list (or its first instruction) and how many more."""
    first, more = _named(listed, 1)
    return f"{first} and {more} more" if more else first


def _clamped(m: MechanismData) -> str:
    """The sentences on the work a clamp makes invariant once it saturates (the clamp, that
    work and its size, the part that stays, what the counts cannot tell), or "". Short: it
    follows the recomputed work's sentences, whose other inputs it shares; the checks keep
    the whole lists."""
    found = m.value(RecomputedValues)
    clamp = found.clamp if found is not None else None
    per = metric(m, invariant_work.CLAMPED_PER_ITERATION)
    if clamp is None or not clamp.work or per is None or per < LEADS:
        return ""
    stays, why, how = clamp.stays, clamp.picks, "; ".join(clamp.count)
    share = metric(m, invariant_work.CLAMPED_SHARE) or 0
    return (f"what the clamp {clamp.clamp} fixes once saturated ({clamp.saturates}): "
            f"{_and_more(clamp.work)}"
            f" ({number(per)} more per iteration, {number(share)}% at most): compute it where "
            f"its other inputs change"
            + (f"; only {_and_more(stays)} stay per "
               f"iteration" if stays else "")
            + f". Counts cannot tell how often it saturates ({why}): {how}.")


def _assembly_note(m: MechanismData, recommendation: str) -> str:
    """Advice about a function that is likely hand-written assembly: the same change, made
    in its assembly source."""
    return (f"{recommendation} The function is likely hand-written assembly (the evidence is "
            f"in the checks): make the change in its assembly source; compiler flags, "
            f"attributes and C rewrites do not reach it.")


def _store_loop_in_assembly(m: MechanismData, recommendation: str) -> str:
    """A fill loop written in assembly: the instruction edit, and no C-compiler caveats."""
    width = int(metric(m, "store width") or 0)
    store = {1: "strb wzr, [xN], #1", 2: "strh wzr, [xN], #2", 4: "str wzr, [xN], #4",
             8: "str xzr, [xN], #8"}.get(width, f"{width}-byte store")
    return (f"The loop is likely hand-written assembly (the evidence is in the checks), so the "
            f"change is an instruction edit, not C: replace the `{store}` loop by "
            f"`stp xzr, xzr, [xN], #16` ({WIDE} bytes per store; keep one narrow store for an "
            f"odd remainder), or `stp q` of a zeroed vector, or `dc zva` for whole zeroed "
            f"lines in long clears. Written in assembly, the clear is not removed by a "
            f"compiler, so it needs no `volatile`, `explicit_bzero` or `memset_explicit`. "
            f"Fewer bytes or calls (clear only what was written) help as much.")


# How a kind's advice reads when its function is likely hand-written assembly.
_ASSEMBLY = {"store-loop": _store_loop_in_assembly}


def recommendation_for(rule, module: str | None) -> str:
    """A catalog rule's advice, unless the code is JIT-generated and the advice is a host
    compiler's (flags cannot reach JIT code)."""
    return _JIT_ADVICE if rule.target == "compiler" and _jit(module) else rule.recommendation


def _jit(module: str | None) -> bool:
    return module is not None and is_jit_module(module)


_JIT_ADVICE = (
    "This is JIT-generated code: host compiler flags do not reach it. Use the JIT's own "
    "diagnostics (e.g. V8 `--print-opt-code`/`--trace-deopt`, HotSpot "
    "`-XX:+PrintCompilation`/`-XX:+UnlockDiagnosticVMOptions -XX:+PrintAssembly`, LuaJIT "
    "`-jv`/`-jdump`) to see why this code is generated this way, and change the source so "
    "the JIT can specialise it (stable types/shapes, no megamorphic call sites, fewer "
    "deoptimisations).")


def _dispatch(m: MechanismData, noun: str) -> tuple[str, str, str]:
    sites = int(metric(m, "dispatch sites") or 0)
    runs = metric(m, "dispatches") or 0
    per = metric(m, "instructions per dispatch")
    fn = m.functions[0]
    threaded = _threaded(m)
    claim = (f"Interpreter dispatch in `{fn}`: {sites} table-fed `br` sites dispatched "
             f"{count(runs, noun)}, one per {number(per or 0)} instructions of the function, so "
             f"every bytecode pays a table load and an indirect branch whose target the "
             f"predictor must guess from history.")
    sequence = metric(m, "dispatch sequence")
    reloads = metric(m, "stack reloads in the sequence") or 0
    if sequence:
        claim += (f" Each dispatch runs {number(sequence)} instructions to compute its target "
                  f"(opcode fetch, table load and what is merged into the index"
                  + (f", including {number(reloads)} reload(s) of spilled state from the "
                     f"stack" if reloads else "") + "); the own share counts them.")
    if threaded:
        rec = (f"The dispatch is already threaded ({sites} separate `ldr`+`br` sites: each "
               "handler ends in its own), so a switch rewrite or keeping the dispatch tails "
               "apart changes nothing. Measure the mispredict rate of the hottest `br` sites "
               "(BR_MIS_PRED_RETIRED via `perf record -e`, or SPE) before changing the "
               "interpreter: a well-predicted dispatch costs only its own instructions.")
        merged = metric(m, "merged into the opcode") or 0
        fixed = _fixed_state(m)
        if merged and fixed:
            rec += (f" Those instructions are the lever: {number(merged)} of the "
                    f"{number(sequence or 0)} instructions of every dispatch only merge other "
                    f"state into the opcode before the `br`." + fixed)
        elif merged:
            rec += (f" Those instructions are the lever: {number(merged)} of the "
                    f"{number(sequence or 0)} instructions of every dispatch only merge other "
                    f"state into the opcode before the `br` ("
                    + ("reloaded from the stack: the sites' `ldr …, [sp, …]`, " if reloads
                       else "")
                    + "tested and `orr`ed in): test such flags only where they can change "
                      "(backward jumps, calls) or keep them in a register, which removes "
                      "those instructions from every dispatch.")
    else:
        rec = ("Use threaded dispatch (computed goto: a label table and `goto *table[op]` at the "
               "end of every handler) so each handler has its own `br` and its own history; "
               "keep the tails apart (`-fno-crossjumping`); add super-instructions for the "
               "hottest opcode pairs to cut dispatches.")
    return f"Bytecode dispatch in {fn}: {sites} table-fed br sites", claim, rec


def _fixed_state(m: MechanismData) -> str:
    """The sentences on the state a dispatch tests although the loop never changes it: what
    the instructions show, the remedy for each kind, and (hedged) what a 16-bit value at a
    fixed address tested into a mask usually is."""
    out = ""
    state = m.value(DispatchStateValues) or DispatchStateValues()
    fixed, frame = state.fixed, state.frame
    per, share = (metric(m, dispatch_state.PER_DISPATCH[dispatch_state.FIXED]),
                  metric(m, dispatch_state.SHARE[dispatch_state.FIXED]))
    if fixed and per:
        out += (f" {number(per)} instructions per dispatch ({number(share or 0)}% of the total) "
                + ("load a halfword at a fixed address, compare it with zero and turn it into "
                   f"an all-ones mask on every dispatch: {fixed}. That is the shape of a "
                   "tracing-probe semaphore (USDT/SDT probes keep a 16-bit counter at a fixed "
                   "address that a tracer raises when it attaches); if it is one, a build "
                   "without those probes removes these rows and the `orr` merging them."
                   if state.masked else
                   f"test a value at a fixed address: {fixed}. Test it where it is stored, "
                   "not on every dispatch."))
    per, share = (metric(m, dispatch_state.PER_DISPATCH[dispatch_state.FRAME]),
                  metric(m, dispatch_state.SHARE[dispatch_state.FRAME]))
    if frame and per:
        out += (f" {number(per)} per dispatch ({number(share or 0)}%) reload a frame field "
                f"stored once per entry and merge it in: {frame}. Test it where it can "
                "change (on entry "
                "and after the calls that may write it) and leave the dispatch path from "
                "there, rather than merging it into every opcode.")
    return out


def _indirect_call(m: MechanismData, noun: str) -> tuple[str, str, str]:
    calls = metric(m, "calls") or 0
    fn = m.functions[0]
    claim = (f"{int(metric(m, 'call sites') or 0)} `blr` site(s) in `{fn}` call through "
             f"function pointers or vtable slots loaded from memory, {count(calls, noun)}.")
    rec = ("If one target dominates a site, call it directly behind a guard (PGO indirect-call "
           "promotion: `-fprofile-use`; or `if (fp == likely) likely(); else fp();`); mark "
           "classes/methods `final` or use LTO with whole-program visibility so the compiler "
           "can devirtualise. Confirm with the site's mispredict rate (SPE or "
           "BR_MIS_PRED_RETIRED).")
    return f"Function-pointer calls in {fn}", claim, rec


def _plt(m: MechanismData, noun: str) -> tuple[str, str, str]:
    stubs = int(metric(m, "stubs") or 0)
    calls = metric(m, "calls through stubs") or 0
    out = metric(m, "calls into other modules") or 0
    callers = [f for f in m.functions if not f.startswith("<unknown")][:4]
    who = f" (direct callers include {', '.join(f'`{c}`' for c in callers)})" if callers else ""
    claim = (f"Calls went through {stubs} PLT stub(s) of one module {count(calls, noun)}{who}: each "
             f"adds `adrp`, a GOT load and an indirect `br` to the call.")
    leading = m.value(PltValues) or PltValues()
    into = ", ".join(leading.other_modules)
    if out and into:
        claim += (f" {number(out)} of the calls ({out / calls:.0%}) go into other modules "
                  f"({into}); the rest are not matched by count to another module's function "
                  f"(the module's own exported functions are among them).")
    routines = ", ".join(leading.libc_routines)
    if routines:
        claim += (f" The stubs to C-library string and memory routines ({routines}) are "
                  f"counted with those routines' ideas, not here.")
    rec = ("Which fix applies depends on the callee. Calls to the library's own exported "
           "functions become direct `bl` with `-Wl,-Bsymbolic-functions`, or "
           "`-fvisibility=hidden` (export only the API) plus `-fno-semantic-interposition`; "
           "these do nothing for calls into other libraries"
           + (f" ({number(out)} of these calls, {out / calls:.0%})" if out and into else
              ", such as the C library's `malloc`, `free` or `memcpy`")
           + ": for those `-fno-plt` loads the GOT entry at the call site (the call stays "
           "indirect, only the stub's `adrp`/`add` go), so the larger saving is making fewer "
           "such calls (allocate or look up once per context, not once per operation). Check "
           "the stub count per call site with `perf annotate` on the `.plt` section afterwards.")
    return f"Calls through {stubs} PLT stubs ({number(calls)} calls)", claim, rec


def _chase(m: MechanismData, noun: str) -> tuple[str, str, str]:
    steps = metric(m, "chain steps") or 0
    per_call = metric(m, "steps per call")
    fn = m.functions[0]
    where, of = _loop_where(m)
    claim = (f"{where} loads its next address from the value it loaded in the "
             f"previous iteration, so each step waits for the previous load to complete; "
             f"the chain stepped {count(steps, noun)}"
             + (f", {number(per_call)} per call of {of}." if per_call else "."))
    chase = m.value(ChaseValues) or ChaseValues()
    claim += _second_access(chase)
    budget, relink, wrap = chase.budget, chase.relink, chase.wrap
    prefetched = chase.prefetched
    bound = min((b for b in (metric(m, "table size"), metric(m, WRAPPED_SIZE),
                             metric(m, "table bound")) if b is not None), default=None)
    window = chase.reach.span if chase.reach else None
    cached = bound is not None and bound <= L2_BYTES and (window is None or window <= L2_BYTES)
    rec = _chase_levers(per_call, budget, relink, cached)
    step = _step_levers(m)
    if cached:
        rec += (" The table fits in L2 (below), so prefetching the next node or several "
                "hops ahead (jump pointers) has little latency to hide.")
    elif prefetched:
        rec += (" The loop already issues `prfm`: check that it runs several hops ahead of "
                "the walk, not one.")
    elif relink:
        rec += (f" Prefetching only the next node rarely helps (its address arrives with the "
                f"load it would hide), and jump pointers to prefetch several hops ahead do not "
                f"fit: the walk stores links into the structure as it goes ({relink}), so "
                f"they would go stale on every insert.")
    else:
        rec += (" Prefetching only the next node rarely helps (its address arrives with the "
                "load it would hide); jump pointers to prefetch several hops ahead pay only "
                "for a structure read far more often than it changes, since every insert "
                "must update them.")
    claim += _second_footprint(chase.reach, wrap, m)
    rec += step + _footprint(m, wrap, chase.mask) + _paired(chase.pair)
    short = per_call is not None and per_call < LONG_WALK
    if wrap and bound is None:  # sized at run time: whether it misses is the question
        held, entry = wrap.register, number(metric(m, WRAPPED_ENTRY) or 0)
        rec += (f" Measure the value of {held} at run time (a breakpoint on the walk, or the "
                f"setting the program derives it from) and the load's L1D/L2 miss rate and "
                f"latency (SPE, or the simulator) to confirm: {entry} × {held} bytes beyond "
                f"the L2 means most steps miss.")
        return f"Loop-carried load chain in {fn}", claim, rec
    rec += (" Measure the load's L1D/L2 miss rate and latency (SPE, or the simulator) first: "
            "if it hits L1, the chain costs ~4 cycles per step"
            + (", and a walk this short leaves little to gain." if short else
               " and only a shorter walk or cheaper steps help." if step else
               " and only a shorter walk helps."))
    return f"Loop-carried load chain in {fn}", claim, rec


WRAPPED_ENTRY, WRAPPED_SIZE = "wrapped entry bytes", "wrapped table size"


def _second_access(chase: ChaseValues) -> str:
    """The claim's words on a load each step addresses with the link it just loaded
    (pcscope.core.chain_walk): a second structure read at random, and where the other loads
    addressed the same way read against it."""
    second = chase.second
    if second is None:
        return ""
    load, key, branch, more = second.load, second.key, second.branch, len(second.also)
    through, others = ", ".join(second.through), ", ".join(second.others)
    return (f" Each step also makes a second random access: {load} takes its address from "
            f"the link {key} loaded in the same step" + (f" (through {through})" if through
                                                         else "")
            + (f" or, on other paths, from {others}" if others else "")
            + ", with a base no link's address uses, so it reads another structure at a place "
              "the link picks"
            + (f" ({more} more load(s) addressed the same way are in the checks"
               + _beside_words(chase.beside, more) + ")" if more else "")
            + "; a step can miss in either, so measure both loads' misses"
            + (f", and the branch on its value ({branch}) resolves only when "
               f"it arrives." if branch else "."))


def _beside_words(beside: tuple[Beside, ...], more: int) -> str:
    """Where the loads beside the second access read against it: a constant away is the same
    or the next line; a rarely changed register away is near while that register is small."""
    def far(n: int) -> str:
        return f"{n} byte{'s' if n != 1 else ''}"
    near = [f"`{b.load}` " + ("at the same address" if not b.offset else
                              f"{far(abs(b.offset))} {'before' if b.offset < 0 else 'after'} it")
            for b in beside if not b.register]
    regs = list(dict.fromkeys(b.register for b in beside if b.register))
    moved = [f"`{b.load}` {b.register}"
             + (f" {'+' if b.sign * b.offset > 0 else '−'} {abs(b.offset)}" if b.offset else "")
             + f" bytes {'before' if b.sign < 0 else 'after'} it" for b in beside if b.register]
    words = ([", ".join(near) + ", in the same or an adjacent 64-byte line"] if near else []) + \
        ([", ".join(moved) + f", in the same or a nearby line unless {', '.join(regs)} is large"]
         if moved else [])
    if not words:
        return ""
    lead = "all" if len(beside) == more else f"{len(beside)} of them"
    return f", {lead} near it: " + "; ".join(words)


def _second_footprint(reach: SecondReach | None, wrap: WrapBound | None,
                      m: MechanismData) -> str:
    """How far the second access reaches (pcscope.core.chain_walk): bounded by the link's
    width, or by the register the walk leaves at (with its ratio to the wrapped table when
    the table wraps at the same register)."""
    if reach is None:
        return ""
    plus = f" (plus the offset {', '.join(reach.offsets)})" if reach.offsets else ""
    back = " behind its base" if reach.stride < 0 else ""
    if reach.span is not None:
        where = ("within every Neoverse L2 (512 KiB or more)" if reach.span <= L2_BYTES else
                 "more than some L2s hold, so those steps can miss")
        return (f" That access is indexed by the same {reach.bits}-bit link, so it spans at "
                f"most {_bytes(reach.span)}{back}{plus}: {where}.")
    step = abs(reach.stride)
    size = f"{number(step)} × {reach.bound}" if step != 1 else reach.bound
    said = (f" That access moves with {reach.register} (`{reach.value}`), and the walk leaves "
            f"once {reach.register} reaches {reach.bound} (`{reach.compare}`), so it spans at "
            f"most {size} bytes{back}{plus}")
    entry = metric(m, WRAPPED_ENTRY) or 0
    if wrap is None or wrap.register != reach.bound or not entry or entry <= step:
        return said + "."
    ratio = entry / step
    return (said + f", {_PARTS.get(ratio, f'1/{number(ratio)}')} of the table's "
                   f"{number(entry)} × {reach.bound} bytes (below): the table outgrows each "
                   f"cache level first.")


_PARTS: dict[float, str] = {2: "one half", 4: "one quarter", 8: "one eighth", 16: "one sixteenth"}


def _paired(pair: PairedLinks | None) -> str:
    """One wide load for two links read as the halves of one pair (pcscope.core.chain_walk)."""
    if pair is None:
        return ""
    # Not a second miss saved: both halves share the pair's line, fetched once the link is
    # known whichever way the branch goes (review 13). What a branch-free form changes is
    # the mispredict, at the price of waiting for the second access on every step.
    a, b = pair.halves
    return (f" Both link loads read halves of one {pair.size}-byte pair (`{a}`, `{b}`): its "
            f"line is fetched once the link is known, whichever way `{pair.branch}` goes. "
            f"Going branch-free (`ldp` of the pair, `csel` for the half and all else the "
            f"branch picks) trades its mispredicts for the second access's latency every "
            f"step: weigh BR_MIS_PRED_RETIRED there against that latency (SPE).")


L1_BYTES = 64 * 1024  # L1D of Neoverse N1/V1/N2/V2
L2_BYTES = 512 * 1024  # the smallest L2 of those cores (512 KiB to 2 MiB)


def _step_levers(m: MechanismData) -> str:
    """What makes each step cheaper, from the loop's own instructions
    (pcscope.core.chain_walk): the first reject, a value recomputed on every run, and the
    unrolled byte-by-byte extension."""
    out = ""
    rejected = metric(m, "rejected at the first compare")
    chase = m.value(ChaseValues) or ChaseValues()
    first, paired = chase.reject, chase.paired
    if rejected and first:
        out += f" {number(rejected)}% of the steps end at the first compare ({first}), on one loaded byte."
        if paired:
            out += (f" The next reject ({paired}) tests the adjacent byte against another "
                    f"fixed value: load both with one `ldrh` and compare once against a "
                    f"halfword built before the walk, so the {number(round(100 - rejected, 1))}% "
                    f"that pass the first byte save a load, a compare and a branch.")
    work = m.value(RecomputedValues)
    if work is not None and work.instructions:
        first_one, *rest = work.instructions
        out += (f" {first_one}{' (and more, in the checks)' if rest else ''} is recomputed "
                f"from inputs that rarely change: compute it where they change (usually an "
                f"address: a base plus a rarely changing offset) so the step indexes it with "
                f"the link.")
    steps = metric(m, "extension steps")
    if steps:
        per = metric(m, "extension bytes per entry") or 0
        out += (f" Candidates that pass are extended byte by byte ({number(steps)} unrolled "
                f"compares with per-step exits, {number(per)} bytes per extension, "
                f"{number(metric(m, 'extension share') or 0)}% of the run): compare 8 bytes "
                f"per step (`ldr x` from both, `eor`, `rev` + `clz` on a non-zero result)"
                + (f", one step instead of about {number(round(per))}." if per <= 8 else "."))
    return out


def _footprint(m: MechanismData, wrap: WrapBound | None, masked: str | None) -> str:
    """What the link's wrap, mask or width says of the table's size
    (pcscope.core.chain_walk): the mask gives the size when a constant sets it; the width
    only bounds it."""
    bits, bound = metric(m, "link bits"), metric(m, "table bound")
    if wrap:
        return _wrap_footprint(m, wrap, bound)
    size = metric(m, "table size")
    if size is not None:
        return f" The link is masked ({masked}): mask + 1 entries, {_bytes(size)}, {_where(size)}"
    if bits is None or bound is None:
        return (f" The link is masked ({masked}): mask + 1 entries, a number nothing in the "
                f"code bounds" if masked else
                " Nothing in the code bounds the structure's size (32-bit or wider links)") \
            + (": if it is many MiB at run time, the steps miss in cache and that latency is "
               "the cost to hide.")
    entries = f"{number(2 ** bits)} entries of {number(bound / 2 ** bits)} byte(s)"
    if masked:
        return (f" The link is masked ({masked}): mask + 1 entries, at most {entries} "
                f"({_bytes(bound)}, the link width's bound), {_where(bound)}")
    return f" {number(bits)}-bit links bound the table to {entries} ({_bytes(bound)}), {_where(bound)}"


def _wrap_footprint(m: MechanismData, wrap: WrapBound, width_bound: float | None) -> str:
    """An index wrapped at a register R (pcscope.core.chain_walk): at most R entries, sized
    when a constant sets R, otherwise a run-time size the steps miss beyond the caches."""
    held = wrap.register
    how = ", ".join(dict.fromkeys(f"`{text}`" for text in wrap.wraps))
    cmps = ", ".join(dict.fromkeys(f"`{text}`" for text in wrap.compares))
    entry, size = metric(m, WRAPPED_ENTRY) or 0, metric(m, WRAPPED_SIZE)
    lead = (f" The link's index wraps at {held} ({how}; the walk compares {held} with "
            f"{cmps}): ")
    if size is not None:
        return (lead + f"at most {number(size / entry)} entries of {number(entry)} bytes "
                       f"({_bytes(size)}), {_where(size)}")
    origin = ("passed in as an argument" if wrap.argument else
              f"set before the walk by `{wrap.setter}`" if wrap.setter else
              "set outside the rows read")
    held_size = (f"the table holds at most {held} entries of {number(entry)} bytes "
                 f"({number(entry)} × {held} bytes), a run-time size held in {held} ({origin}, "
                 f"its value not in the code)")
    if width_bound is not None and width_bound <= L2_BYTES:  # the width bounds it closer
        return (lead + held_size + f"; the link's width bounds it to {_bytes(width_bound)}, "
                f"{_where(width_bound)}")
    return (lead + held_size + ". The steps miss once that exceeds the "
            f"caches: past {number(L1_BYTES / entry)} entries it leaves L1D (64 KiB), past "
            f"{number(L2_BYTES / entry)} some L2s (512 KiB), and past the last-level cache "
            f"(a few to tens of MiB) most steps wait for DRAM; then hiding the next walk's "
            f"first miss (the prefetch above) or a shorter chain is the lever, not a cheaper "
            f"step.")


def _bytes(size: float) -> str:
    return f"{number(size / 1024)} KiB" if size < 1 << 20 else f"{number(size / (1 << 20))} MiB"


def _where(size: float) -> str:
    """Which cache level a table of ``size`` bytes fits, and what a step then costs."""
    return ("within L1D (64 KiB on Neoverse N1/V1)" if size <= L1_BYTES else
            "within every Neoverse L2 (512 KiB or more)" if size <= L2_BYTES
            else "more than some L2s hold: steps can miss") + \
        ("; expect the load-to-use latency (4 to 11 cycles) per step, not DRAM misses."
         if size <= L2_BYTES else ".")


def _loop_where(m: MechanismData) -> tuple[str, str]:
    """``A loop in `f``` — or, for one loop compiled into several functions, all of them —
    and how to name the functions whose calls the per-call figures count."""
    names = m.functions[:4]
    if m.sites > 1 and len(names) > 1:
        listed = ", ".join(f"`{f}`" for f in names)
        return (f"One loop, compiled as {m.sites} copies of the same code in {listed},",
                "those functions")
    return f"A loop in `{names[0]}`", "the function"


LONG_WALK = 16  # steps per call from which capping the walk is the first lever (below it
#   a budget rarely ends the walk: the misses of each step are the cost)
SHORT_RUN = 16  # byte-loop iterations per entry below which one wide step covers most entries
WORD = 8  # bytes per entry below which a word-at-a-time compare saves little
FEW_POLLS = 1.5  # polls per exit below which a polling loop rarely waits
RETRIES = 1.05  # LL/SC attempts per entry above which the loop really retries
FEW_PER_CALL = 2  # routine calls per caller call below which the caller's callers are the lever


def _chase_levers(per_call: float | None, budget: str | None, relink: str | None,
                  cached: bool = False) -> str:
    """What shortens or overlaps the chain, by how long the walk is per call, whether the
    loop already stops on a step budget (``budget``, the register counting down) and whether it
    rewrites the structure it walks (``relink``, the store that does). A walk that rewrites
    its structure cannot run beside another walk of it; otherwise overlapping walks is only
    a condition, since whether the next walk's start waits for this one's result (one
    position at a time) lies in the callers, which the loop does not show."""
    overlap = ("walks cannot be interleaved, since each rewrites the structure the next "
               "one reads" if relink else
               "interleave walks so their misses overlap only if several independent walks "
               "are pending (several keys to look up at once, none waiting for another's "
               "result)")
    trade = ("a smaller budget trades the search's result (e.g. compression ratio) for speed, "
             "so measure both")
    cap = (f"lower the step budget the loop already has ({counts_down(budget)}; its start "
           f"value is usually a tuning parameter of the search) or end earlier on a "
           f"good-enough result — {trade}" if budget else "cap it (chain length, a good-enough match — "
           f"the search's own depth or chain limits; {trade})")
    if per_call is not None and per_call >= LONG_WALK:
        return f"The walk is long ({number(per_call)} steps per call): {cap} first; {overlap}."
    if per_call is not None and cached:
        return (f"The walk is short ({number(per_call)} steps per call), so a step budget "
                f"rarely ends it, and its table fits in L2 (below), so the steps hit the "
                f"cache: the lever is a cheaper step; {overlap}.")
    if per_call is not None:
        return (f"The walk is short ({number(per_call)} steps per call), so a step budget "
                f"rarely ends it and capping it saves little; the cost is each step's miss. "
                f"Start the next lookup's first load early: prefetch the head of the next "
                f"walk (e.g. the next position's hash-table entry) while this walk runs, "
                f"since its address does not depend on this chain; {overlap}; or shrink the "
                f"structure so its hot part stays in cache.")
    return f"Shorten the walk ({cap}); {overlap}."


def _byte_loop(m: MechanismData, noun: str) -> tuple[str, str, str]:
    trips = metric(m, "iterations per entry")
    fn = m.functions[0]
    where, _of = _loop_where(m)
    claim = (f"{where} loads and tests one byte or halfword per iteration with a "
             f"stepping pointer/index, {number(trips or 0)} iterations per entry by the counts.")
    rec = ("Handle 8 or 16 elements per step: load with `ldr x`/`ldr q`, find the first "
           "match or difference with `eor` + `rev` + `clz` (scalar) or `cmeq` + `umaxv`/`shrn` "
           "(NEON), finish the tail byte by byte; where the loop moves data as it searches "
           "(e.g. a move-to-front list), search with SIMD and move with one `memmove`. Check "
           "why the compiler did not vectorise (`-fopt-info-vec-missed`, "
           "`-Rpass-missed=loop-vectorize`): early exits and aliasing are the usual reasons.")
    if trips is not None and trips < SHORT_RUN:
        rec += (f" At {number(trips)} iterations per entry a 16-byte step finishes in one or "
                f"two steps plus the tail, so the gain per entry is small: look first at "
                f"how often the loop is entered.")
    return f"Byte-at-a-time loop in {fn} ({number(trips or 0)} iterations per entry)", claim, rec


def _compare_chain(m: MechanismData, noun: str) -> tuple[str, str, str]:
    steps = int(metric(m, "compare steps") or 0)
    depth = metric(m, "bytes compared per entry") or 0
    fn = m.functions[0]
    claim = (f"`{fn}` compares two byte strings one byte at a time in {steps} unrolled steps "
             f"(load, load, compare, branch to one exit), {number(depth)} steps per entry on "
             f"average by the counts.")
    rec = ("Compare 8 bytes per step: load a 64-bit word from each side (`ldr x`, unaligned is "
           "fine), `eor` them, and only when the result is non-zero find the first differing "
           "byte with `rev` + `clz` (or compare the byte-reversed words for the ordering); "
           "keep the byte loop for the last bytes before a wrap-around or the end of the "
           "buffer. With `ldr q` + `cmeq` + `umaxv` the same step covers 16 bytes.")
    if depth < WORD:
        rec = (f"Most calls decide within {number(depth)} bytes, so comparing 8 bytes per "
               f"step saves little per call: {rec} It pays only if the calls that compare "
               f"long equal runs are the costly ones (count the steps past the {WORD}th).")
    else:
        rec = (f"Calls compare {number(depth)} bytes on average, about "
               f"{number(-(-depth // 8))} 8-byte steps instead of {number(round(depth))} "
               f"byte steps. {rec}")
    halves = int(metric(m, "halfword steps") or 0)
    if halves:
        rec += (f" {halves} of the {steps} steps compare 16-bit values (`ldrh`) between the "
                f"byte steps, so the wide version must compare both streams: 8 bytes with "
                f"`ldr x` and the matching 8 halfwords with `ldr q` per step, and take the "
                f"first difference in the original order (byte i before halfword i).")
    return f"Unrolled byte-by-byte compare in {fn} ({steps} steps)", claim, rec


def _spin(m: MechanismData, noun: str) -> tuple[str, str, str]:
    polls = metric(m, "polls per exit")
    fn = m.functions[0]
    claim = (f"A polling loop in `{fn}` reloads a location it never writes and exits on its "
             f"value, {number(polls or 0)} polls per exit by the counts.")
    rec = ("Wait instead of polling: `ldaxr` + `wfe` (woken by the releasing store) or `isb` "
           "between polls for short waits, exponential back-off, then block in the OS "
           "(futex) after a bounded spin; shorten what the other thread holds.")
    if polls is not None and polls < FEW_POLLS:
        rec = (f"The loop almost never waits ({number(polls)} polls per exit): the cost is "
               f"the check itself, not spinning, so waiting differently gains little; make "
               f"the check cheaper (a plain load before the acquire) or less frequent. "
               f"If it starts to wait under load: {rec[0].lower()}{rec[1:]}")
    return f"Polling loop in {fn}", claim, rec


def _llsc(m: MechanismData, noun: str) -> tuple[str, str, str]:
    per = metric(m, "attempts per entry")
    fn = m.functions[0]
    claim = (f"An inline exclusive load/store retry loop in `{fn}`"
             + (f", {number(per)} attempts per entry by the counts" if per else "") + ".")
    rec = ("Build for LSE (`-march=armv8.1-a` or a suitable `-mcpu`) so the loop becomes one "
           "`ldadd`/`swp`/`cas`, or `-moutline-atomics` when the binary must also run on "
           "ARMv8.0.")
    if per is not None and per > RETRIES:
        rec += (f" At {number(per)} attempts per entry the loop retries: other cores write "
                f"the line between the exclusive pair, so also share it less (per-thread "
                f"counters, padding to a cache line of its own).")
    elif per is not None:
        rec += (f" At {number(per)} attempts per entry it almost never retries: contention "
                f"is not the cost, only the exclusive pair's latency, which LSE shortens.")
    return f"Inline LL/SC loop in {fn}", claim, rec


def _outline(m: MechanismData, noun: str) -> tuple[str, str, str]:
    calls = metric(m, "helper calls") or 0
    lse = metric(m, "LSE path")
    claim = (f"{int(metric(m, 'helpers') or 0)} outline-atomic helper(s) were called "
             f"{count(calls, noun)}; the LSE path ran on {number(lse or 0)}% of the calls.")
    fewer = ("make fewer atomic updates (batch reference-count changes, keep per-thread "
             "counts)")
    if lse is None or lse >= 50:
        rec = ("The binary already uses outline atomics and they pick LSE on this core, so "
               f"no flag change helps. The cost is the calls themselves: {fewer}; on an "
               "ARMv8.0 core only less contention or a different algorithm helps.")
    else:
        rec = (f"The binary already uses outline atomics, but they took the LL/SC path on "
               f"{number(100 - (lse or 0))}% of the calls: the core that ran this (or the "
               f"emulator) does not report LSE, or the calls came before the capability "
               f"check ran. On an LSE core they switch by themselves; building for LSE "
               f"(`-march=armv8.1-a`) inlines the atomics where the binary need not run on "
               f"ARMv8.0. Either way: {fewer}.")
    return f"Outline-atomic helpers ({number(calls)} calls)", claim, rec


def _locks(m: MechanismData, noun: str) -> tuple[str, str, str]:
    calls = metric(m, "calls") or 0
    claim = (f"The C library's lock functions ({', '.join(m.functions[:4])}) were called "
             f"{count(calls, noun)}.")
    rec = ("Take locks less often (batch work per acquisition, per-thread queues) and hold "
           "them shorter; if contention shows (futex waits in `perf trace`, or the lock "
           "word's latency in SPE), split the lock or use a lock-free queue.")
    return "C-library lock calls", claim, rec


def _division(m: MechanismData, noun: str) -> tuple[str, str, str]:
    runs = metric(m, "divides") or 0
    fp = (metric(m, "floating-point share") or 0) >= 50
    fn = m.functions[0]
    what = "floating-point divides/square roots" if fp else "integer divides"
    claim = f"{what.capitalize()} in `{fn}` ran {count(runs, noun)}."
    if fp:
        rec = ("Hoist a loop-invariant divisor as `r = 1.0 / d` and multiply, or where the "
               "precision allows use `frecpe`/`frsqrte` plus one or two Newton steps "
               "(`frecps`/`frsqrts`); `-ffast-math` (or `-freciprocal-math`) lets the "
               "compiler do the first.")
    else:
        rec = ("Make the divisor a compile-time constant (multiply-high and shift), use a "
               "power-of-two size with a mask, or precompute a reciprocal for a loop-invariant "
               "divisor (libdivide).")
    return f"{what.capitalize()} in {fn}", claim, rec


def _libc(m: MechanismData, noun: str) -> tuple[str, str, str]:
    calls = metric(m, "calls") or 0
    name, callers = _routine_and_callers(m.functions)
    who = (f"; its callers making at least {CALLER_PART:.0%} of the calls (through the PLT "
           f"stub run as often): "
           f"{', '.join(f'`{c}`' for c in callers)}" if callers else
           "; the profile cannot tell which callers reach it through PLT stubs")
    claim = f"The C library's `{name}` was called {count(calls, noun)}{who}."
    where = f"`{callers[0]}`" if callers else "its hottest callers (`perf record -g`)"
    per_entry = metric(m, "calls per caller entry")
    if per_entry is not None and callers:
        caller = callers[0]
        entries = metric(m, "caller entries") or 0
        claim += (f" `{caller}` makes {number(metric(m, 'calls from the top caller') or 0)}% "
                  f"of the calls, {number(per_entry)} per call of its own; that code is part "
                  f"of the own share.")
        compares = "cmp" in name
        hits = metric(m, "lookups finding their key")
        if compares and hits is not None:
            claim += (f" So a lookup compares {per_entry:.2f} names on average (`{name}` "
                      f"calls / `{caller}` calls: the arrays searched hold about that many "
                      f"entries before the match or the end), and {number(hits)}% of the "
                      f"lookups find their key (a zero result ends the walk)"
                      + (": most lookups search a short array for a key it does not hold."
                         if hits < 50 else "."))
        if per_entry < FEW_PER_CALL:
            rec = (f"`{caller}` calls `{name}` only {number(per_entry)} time(s) per call, so "
                   f"neither the routine nor the loop around it is the lever: `{caller}` "
                   f"itself ran {count(entries, noun)}. "
                   + ("Have its callers look the key up once and keep the result (a pointer "
                      "or index) instead of searching by name on every use, or give the "
                      "table a hash or a fixed layout so lookups become direct." if compares
                      else "Have its callers call it less (batch the work, reuse results)."))
        else:
            rec = (f"`{caller}` calls `{name}` {number(per_entry)} times per call"
                   + (": a linear search by name. Index the table (hash, sorted array with "
                      "binary search, or precomputed positions), compare lengths or hashes "
                      f"before `{name}`, or cache the last hit." if compares else
                      " from a loop: merge the calls (one call over the whole range) or "
                      "inline a fixed-size case."))
        walkers = (m.value(LookupValues) or LookupValues()).callers
        if walkers:
            keyed = walkers[0]
            keys = int(metric(m, "constant keys") or 0)
            entries = metric(m, "keyed caller entries") or 0
            claim += (f" `{keyed}` (entered {count(entries, noun)}) calls `{caller}` from "
                      f"{keys} call sites: {keys} lookups per entry, each with a different "
                      f"constant key ({number(metric(m, 'constant-key lookups per caller entry') or 0)} "
                      f"calls per entry).")
            rec += _walk_advice(m, walkers)
        claim += _keyed_lookup_links(m)
        what = "Lookups by name" if compares else "Calls"
        return f"{what}: {name} called from {caller}", claim, rec
    rec = (f"Call `{name}` less rather than rewrite it: in {where}, cache the result of "
           f"lookups by name, compare lengths or hashes first, intern strings or replace "
           f"string keys by integers.")
    return f"Time in the C library's {name} ({number(calls)} calls)", claim, rec


def _walk_advice(m: MechanismData, callers: tuple[str, ...]) -> str:
    """The recommendation to the constant-key ``callers``, naming them all, with the part
    of the lookups it deletes."""
    deleted = metric(m, "lookups one walk per entry deletes")
    return (f" In {' and '.join(f'`{c}`' for c in callers)}, walk the request once and "
            f"dispatch on the name (switch, perfect hash, generated decoder), or cache the "
            f"results per context"
            + (f": one walk per entry instead of one lookup per key deletes "
               f"{number(deleted)}% of the lookups (each caller's lookups less its entries)."
               if deleted else "."))


def _libc_removes(m: MechanismData) -> float | None:
    """Walking the request once per entry of the constant-key callers deletes their
    lookups beyond one per entry (the lookups are the own share: routine, stub, caller)."""
    deleted = metric(m, "lookups one walk per entry deletes")
    return round(deleted / 100, 3) if deleted else None


def _keyed_lookup_links(m: MechanismData) -> str:
    """The sentences naming the other constant-key callers of a lookup and the
    per-operation tree making its lookups (empty without)."""
    said = m.value(LookupValues) or LookupValues()
    more, tree = said.more, next(iter(said.trees), None)
    return ((f" More callers pass a different constant key at each call site: {more}."
             if more else "")
            + (f" Per operation: {tree}." if tree else ""))


def _routine_and_callers(functions: tuple[str, ...]) -> tuple[str, list[str]]:
    """The routine (its heaviest variant: functions come heaviest site first, and a caller's
    loop may outweigh the routine) and up to three callers (the names that are not the
    routine's variants)."""
    routine = next((f for f in functions if libc_routine_name(f) is not None), functions[0])
    base = libc_routine_name(routine)
    return routine, [f for f in functions if f != routine and
                     (base is None or libc_routine_name(f) != base)][:3]


def _jit_code(m: MechanismData, noun: str) -> tuple[str, str, str]:
    claim = f"JIT-generated code ({int(metric(m, 'instructions') or 0)} executed instructions)."
    return "Hot JIT-generated code", claim, _JIT_ADVICE


def _memory_state(m: MechanismData, noun: str) -> tuple[str, str, str]:
    per = metric(m, "field accesses per iteration") or 0
    runs = metric(m, "iterations") or 0
    part = metric(m, "field access share of the loop") or 0
    fields = m.value(MemoryValues) or MemoryValues()
    every = list(fields.every)
    fewer = [f.text() for f in fields.fewer]
    back = ", ".join([*every, *(f.field for f in fields.fewer)])
    # a recurrence through memory is on every iteration's critical path only for a field
    # stored back every iteration
    recur = [f for f in fields.recurrences if f in every]
    reloaded = metric(m, "fields only reloaded") or 0
    rare = metric(m, "fields only reloaded on fewer iterations") or 0
    fn = m.functions[0]
    claim = (f"A loop in `{fn}` keeps its state in memory: {number(per)} loads and stores "
             f"per iteration ({number(part)}% of the loop's instructions; "
             + (f"{number(runs)} iterations" if noun == "executions" else
                f"the loop head {count(runs, noun)}") + ") go to fields of structures whose address the "
             f"loop does not change: {number(reloaded)} read-only field(s) reloaded every "
             f"iteration" + (f" ({number(rare)} more on fewer)" if rare else "")
             + (f", and {', '.join(every)} loaded and stored back every iteration" if every
                else "")
             + (f"; {len(recur)} of them {'is' if len(recur) == 1 else 'are'} "
                f"computed from {'its' if len(recur) == 1 else 'their'} own load (in the "
                f"checks), so each iteration waits for its previous store to forward (a "
                f"recurrence through memory)" if recur else "")
             + (f"; loaded and stored back on fewer iterations: {', '.join(fewer)}" if fewer
                else "")
             + "." + _alias(fields.byte_store) + _missed_cse(fields))
    rec = (f"Copy the fields the loop uses ({back}, and the ones it only reads) into local "
           f"variables before the loop and write the updated ones back after it (or before "
           f"any call that reads them), so they stay in registers: that removes about "
           f"{number(per)} loads and stores per iteration")
    rec += (" and the store-to-load round trip (about 4-5 cycles of forwarding on Neoverse "
            "cores) from every iteration's critical path." if recur else ".")
    rec += (" `restrict` on the pointer parameters does the same where the function receives "
            "them; a field another thread or a callback reads during the loop must stay in "
            "memory. Count the loop's instructions per iteration before and after.")
    return f"Loop state kept in memory in {fn} ({number(per)} field accesses per iteration)", \
        claim, rec


def _alias(store: str) -> str:
    """The byte store that may alias the fields ("": none)."""
    if not store:
        return ""
    return (f" The loop also stores a byte through another pointer: {store}. A `char` "
            f"store may alias any field, forcing reloads after it.")


def _missed_cse(fields: MemoryValues) -> str:
    """The reloads nothing could have changed (pcscope.core.memory_state.RELOADED): the
    fields reloaded, with their PCs."""
    reloads, said = fields.reloaded, fields.reloads
    if not reloads:
        return ""
    # the PCs are part of the finding (the check is then not written twice)
    return (f" Stronger evidence: {', '.join(reloads)} {'is' if len(reloads) == 1 else 'are'} "
            f"loaded again with no store of any kind between, counted over every path from "
            f"the first load ({'; '.join(said)}): a missed common subexpression (often where "
            f"paths join, or once on each arm of a switch), not aliasing; a local removes it "
            f"too.")


def _spill_block(m: MechanismData, noun: str) -> tuple[str, str, str]:
    size = metric(m, "block instructions") or 0
    runs = metric(m, "block runs") or 0
    spills = metric(m, "spills and reloads") or 0
    part = metric(m, "spill share of the block") or 0
    block = metric(m, "block share") or 0
    fn = m.functions[0]
    claim = (f"A straight-line block of {number(size)} instructions in `{fn}` ran "
             f"{count(runs, noun)} ({number(block)}% of the total), and {number(spills)} of "
             f"its instructions ({number(part)}%) store values to stack slots and load them "
             f"back within the block: more live values than registers, as in a fully "
             f"unrolled loop. The own share counts those spills and reloads.")
    rec = ("Give the block fewer live values: unroll the source loop less (`#pragma GCC "
           "unroll N`, `#pragma clang loop unroll_count(N)`, or no `-funroll-all-loops`), "
           "keep the accumulation in vector registers (several sums per `add v.8h`/`v.4s`, "
           "loads with `ldr q`) or split the loop so each part needs fewer registers. "
           "Clang's `-Rpass-missed=regalloc` remarks show where it spills; count the block's "
           "instructions afterwards.")
    return (f"Register spills in a {number(size)}-instruction block in {fn} "
            f"({number(part)}% spills)", claim, rec)


def _return_zeroing(m: MechanismData, noun: str) -> tuple[str, str, str]:
    functions = int(metric(m, "functions") or 0)
    returns = metric(m, "returns") or 0
    cleared = metric(m, "registers cleared per return") or 0
    hot = ", ".join(f"`{f}`" for f in m.functions[:5])
    claim = (f"{functions} functions clear registers just before returning: "
             f"{number(cleared)} `mov`/`movz #0` per return on average; those returns ran "
             f"{count(returns, noun)} (hottest: {hot}). Nothing in the program "
             f"reads those registers afterwards; this is the code a hardening flag such as "
             f"`-fzero-call-used-regs=used-gpr` adds. The cost is issue and rename slots, "
             f"not latency: the moves are cheap, but there are many.")
    small = metric(m, "runs in small functions")
    if small:
        claim += (f" {number(small)}% of the runs' executions are in small functions (at most "
                  f"{ZEROING_SMALL} instructions per call), where a run is a large part of "
                  f"every call.")
    rec = ("Keep the flag where the threat model needs it, and exempt the hot small functions "
           "(`__attribute__((zero_call_used_regs(\"skip\")))`, or a narrower mode such as "
           "`used-gpr-arg`) or inline them with LTO so fewer returns run. Compare instructions "
           "per operation with and without the exemption.")
    return f"Registers cleared on every return in {functions} functions", claim, rec


def _table_crc(m: MechanismData, noun: str) -> tuple[str, str, str]:
    lookups = metric(m, "table lookups") or 0
    fn = m.functions[0]
    reflected = (m.value(CrcValues) or CrcValues(False)).reflected
    claim = (f"`{fn}` computes a CRC with lookup tables: byte-indexed 32-bit table loads ran "
             f"{count(lookups, noun)}, each xored into the CRC (about one per input byte), and "
             f"the function has no `crc32*` instruction. The CRC is "
             + ("reflected (the low byte indexes the table and the CRC shifts right), the "
                "form the `crc32*` instructions compute." if reflected else
                "MSB-first (the top byte indexes the table and the CRC shifts left), while "
                "`crc32*` computes the reflected form."))
    # the note names only CRCs of the detected form: a list mixing forms contradicts the claim
    polynomial = ("Check the polynomial in the table's source: " + (
        "reflected 0x04C11DB7 (CRC-32 of zlib, gzip, PNG) is `crc32b/h/w/x`, reflected "
        "0x1EDC6F41 (CRC-32C: iSCSI, ext4) is `crc32cb/h/w/x`" if reflected else
        "MSB-first 0x04C11DB7 is `crc32b/h/w/x` on bit-reversed data, "
        "MSB-first 0x1EDC6F41 `crc32cb/h/w/x` likewise") + "; any other needs PMULL folding.")
    if reflected:
        rec = ("Use the CRC32 instructions: `crc32x` folds 8 bytes per instruction "
               "(`__crc32d` from `<arm_acle.h>`, built with `-march=armv8-a+crc` or the "
               "`-mcpu` of any Armv8.1+ core: every Neoverse core has them); for long "
               "buffers run three independent streams and combine them, or fold with "
               "`pmull`/`pmull2` (as zlib-ng and ISA-L do). That is several times fewer "
               "instructions per byte than the tables. " + polynomial)
    else:
        rec = ("For an MSB-first CRC use the CRC32 instructions on bit-reversed data: "
               "`rbit` each input word and the CRC around `crc32x` (8 bytes per "
               "instruction; `__crc32d` from `<arm_acle.h>`, `-march=armv8-a+crc`), or fold "
               "with `pmull`/`pmull2`; either replaces one table lookup per byte. "
               + polynomial)
    return f"Table-driven CRC in {fn} ({number(lookups)} table lookups)", claim, rec


def _per_operation(m: MechanismData, noun: str) -> tuple[str, str, str]:
    ops = metric(m, "operations") or 0
    functions = int(metric(m, "functions per operation") or 0)
    calls = metric(m, "calls per operation") or 0
    per_op = metric(m, "instructions per operation") or 0
    per_call = metric(m, "instructions per call") or 0
    tree = m.value(TreeValues)
    said = tree or TreeValues()
    heaviest, allocations = said.heaviest, said.allocator_calls
    setups, callers, entered = said.setup_listed, said.setup_callers_listed, said.entered
    lookups = next(iter(said.lookups), None)
    claim = (f"Every operation runs the same call tree: {functions} functions are entered once "
             f"or a whole number of times per operation ({number(ops)} operations by their "
             f"exact entry counts), {number(calls)} calls and {number(per_op)} instructions "
             f"per operation, {number(per_call)} instructions per call — set-up, teardown, "
             f"wrappers and lookups around the work (functions over "
             f"{number(PLUMBING)} instructions per call, the work itself, are not counted; nor "
             f"are the rows other ideas count, named per function below). "
             + (f"The C allocator per operation: {allocations}. " if allocations else "")
             + (f"Vector or crypto code runs once per operation, a fixed-size computation "
                f"repeated for every operation: {setups} — the shape of key or context set-up "
                f"(a key schedule, a table of key powers)"
                + (f"; the members calling it on every entry, once per operation, are part of "
                   f"that set-up: {callers}" if callers else "") + ". " if setups else "")
             + (f"Constant-key lookups per operation: {lookups}. " if lookups else "")
             + "".join(f"Callees shared with another tree{s}. " for s in said.shared)
             + f"Heaviest, by the instructions counted here: {heaviest}."
             # last, so a shortened claim loses it before the members: the recommendation
             # names the callers again with what is theirs to change
             + (f" Entered from outside the tree by {entered}." if entered else ""))
    pairs = ", ".join(p.text() for p in tree.pairs) if tree is not None else ""
    reuse = (f"reuse {pairs} across operations instead of making and releasing each on "
             f"every operation" if pairs else
             "reuse the context or object across operations instead of creating, "
             "initialising and freeing it on every call (which ones: the functions entered "
             "once per operation, in the mechanism's checks)")
    one_shot = _one_shot_advice(tree.one_shots if tree is not None else ())
    rec = (f"Make the per-operation part smaller than the work: {one_shot}{reuse}, pass more "
           f"data per call so the {number(per_op)} instructions are paid less often, cache lookups made "
           f"on every operation, and let LTO inline the small wrappers ({number(per_call)} "
           f"instructions per call on average).")
    if allocations and tree is not None:
        rec += _allocator_split(tree)
    if setups and tree is not None:
        named = ", ".join(f"`{name}`" for name in (*tree.setup, *tree.setup_callers))
        rec += (f" The once-per-operation set-up ({named}) is recomputed for every "
                "operation: if it derives from the key, set the key once (initialise the "
                "context with the key once) and change only the IV or nonce per operation, "
                "so the set-up runs once instead of once per operation.")
    if lookups:
        rec += (" The constant-key lookups its members make are the lookup idea's cost: "
                "resolve those keys once per context rather than on every operation.")
    if tree is not None and tree.callers:
        rec += _per_operation_owners(tree, int(ops), bool(allocations), bool(setups))
    rec += (" Measure instructions per operation at two payload sizes: the part that does "
            "not grow is this overhead.")
    return (f"Per-operation overhead ({number(ops)} operations): {number(per_op)} instructions "
            f"in {number(calls)} calls each", claim, rec)


def _per_operation_owners(tree: TreeValues, operations: int, allocations: bool,
                          setups: bool) -> str:
    """Who changes what, from where the tree is entered (pcscope.core.call_cohorts): a
    caller in another module than the members it reaches chose to enter the whole tree on
    every operation, so keeping the context, initialising it once and updating it per
    operation is a change in that caller, for its module's owner, while what each entry
    costs inside the tree is the members' module's; a caller in the tree's own module owns
    both; without modules (or with callers of both kinds) each change is addressed to the
    code making it. The allocator's instructions (when a member is one: ``allocations``) go
    to one side each: the pairs' part (``tree.paired``) with the reuse, the rest inside."""
    callers, split = tree.callers, tree.paired
    paired = _paired_figure(split)
    if split is not None and paired is None:
        allocator = "the allocator calls reuse does not remove"
    elif paired:
        rest = round(tree.allocator) - paired
        allocator = f"the other allocator calls, {rest:,} instructions per operation" \
            if rest else ""
    else:
        allocator = (f"the allocator calls and their wrappers, {tree.allocator:,.0f} "
                     f"instructions per operation")
    inside = ", ".join(part for part, present in (
        (allocator, allocations and bool(allocator)), ("the set-up", setups),
        ("the small wrappers", True)) if present)
    by_name = " and ".join(f"`{c.name}`" + (f" in {c.module}" if c.module else "")
                           + f" (itself entered {c.entries:,} "
                             f"time{'' if c.entries == 1 else 's'}; "
                             f"{c.calls / operations:.2f} calls per operation)"
                           for c in callers)
    names = " and ".join(f"`{c.name}`" for c in callers)
    whose = "the caller's" if len(callers) == 1 else "the callers'"
    caller_part = ("keeping the context across operations"
                   + (f" (which removes the pairs' {paired:,} allocator instructions per "
                      f"operation)" if paired else "")
                   + ", initialising it "
                   + ("(and setting the key) " if setups else "")
                   + "once and updating it per operation")
    other = [c for c in callers if c.reached and not c.own_module]
    own = [c for c in callers if c.own_module]
    if other and not own:
        reached = _modules(other)
        modules = " and ".join(dict.fromkeys(c.module for c in other))
        return (f" Who changes what: the operations are entered from {by_name}, outside "
                f"{reached}; entering the tree on every operation is {whose} choice, so "
                f"{caller_part} is a change in {names}, for the owner of {modules}, while what "
                f"each entry costs inside the tree ({inside}) is {reached}'s to cut.")
    if own and not other:
        reached = _modules(own)
        return (f" Who changes what: the operations are entered from {by_name}, in the "
                f"tree's own module ({reached}): both entering it on every operation and what "
                f"each entry costs inside it ({inside}) are that module's to change.")
    return (f" Who changes what: the operations are entered from {by_name}; {caller_part} "
            f"is a change in {names}, what each entry costs inside the tree ({inside}) a "
            f"change in its members.")


def _modules(callers: list[Caller]) -> str:
    """The modules the ``callers`` reach, each caller's as one phrase, each phrase once."""
    return " and ".join(dict.fromkeys(" and ".join(c.reached) for c in callers))


def _paired_figure(split: PairedAllocation | None) -> int | None:
    """The pairs' allocator instructions per operation as the check writes them (None:
    no pair, or not in the profile)."""
    return None if split is None or split.instructions is None else round(split.instructions)


def _allocator_split(tree: TreeValues) -> str:
    """The sentence splitting the allocator's instructions per operation between the
    create/destroy pairs' members (which reuse removes) and the rest, each part once."""
    figure = f"the allocator's {tree.allocator:,.0f} instructions per operation"
    split = tree.paired
    if split is None:
        return (f" Which of {figure} reuse removes is not in the profile: no create/destroy "
                f"pair among the members to follow calls from.")
    paired = _paired_figure(split)
    if paired is None:
        return (f" Which of {figure} the create/destroy pairs' members make, and so reuse "
                f"removes, is not in the profile ({split.unknown}).")
    total = round(tree.allocator)
    outside = (f"begin at {', '.join(f'`{n}`' for n in split.others)}, not in a pair "
               f"member's own calls, so reuse is not known to remove them.")
    if paired == 0:
        return (f" Of {figure}, the create/destroy pairs' members make none on every entry: "
                f"all {total:,} {outside}")
    made = (f"the create/destroy pairs' members make themselves on every entry "
            f"({', '.join(f'`{n}`' for n in split.makers)}, directly or through wrappers: "
            f"the objects' own memory)")
    if paired == total:
        return f" Of {figure}, reuse removes all: {made}."
    return (f" Of {figure}, reuse removes the {paired:,} {made}; the other "
            f"{total - paired:,} {outside}")


def _one_shot_advice(found: tuple[OneShot, ...]) -> str:
    """The sentence naming the tree's one-shot calls and their streaming parts (empty
    without): what to call instead, on a context kept across operations."""
    return "".join(f"`{one.name}` is the one-shot form of "
                   + ", ".join(f"`{part}`" for part in one.parts)
                   + f" (by symbol names; all entered once per operation): call those on a "
                     f"context kept across operations instead of `{one.name}`; "
                   for one in found)


def _per_operation_removes(m: MechanismData) -> float | None:
    """Reusing the context deletes the allocator calls; setting the key once, the set-up."""
    deleted, per_op = metric(m, "deletable instructions per operation"), \
        metric(m, "instructions per operation")
    return round(deleted / per_op, 3) if deleted and per_op else None


def _return_zeroing_removes(m: MechanismData) -> float | None:
    """Exempting the small functions deletes their clearing runs."""
    small = metric(m, "runs in small functions")
    return round(small / 100, 3) if small else None


def _dispatch_removes(m: MechanismData) -> float | None:
    """Threaded dispatch that merges flags into the opcode: the advice deletes the merging."""
    merged, sequence = metric(m, "merged into the opcode"), metric(m, "dispatch sequence")
    return round(merged / sequence, 3) if _threaded(m) and merged and sequence else None


def _threaded(m: MechanismData) -> bool:
    """Threaded dispatch, by the rule its check states: enough dispatch sites in one
    function that each handler ends in its own copy (pcscope.core.shapes.DISPATCH_SITES)."""
    return (metric(m, "dispatch sites") or 0) >= DISPATCH_SITES


def _byte_swap(m: MechanismData, noun: str) -> tuple[str, str, str]:
    sites = int(metric(m, "byte-swapped stores") or 0)
    words = metric(m, "words stored") or 0
    per = metric(m, "instructions per word") or 0
    control = metric(m, "loop instructions per word") or 0
    fn = m.functions[0]
    where = "One place stores" if sites == 1 else f"{sites} places store"
    loop = (f"; the rest of the loop around it, which does nothing else, is counted here too "
            f"({number(control)} more per word)" if control else "")
    claim = (f"{where} in `{fn}` a register's bytes one `strb` at a time, most "
             f"significant byte first, after `lsr` by 8/16/24(…): a big-endian store written "
             f"out, {count(words, noun)}, {number(per)} instructions per word{loop}.")
    rec = ("Swap the bytes in a register and store once: `rev w` (`rev x` for 8 bytes) and one "
           "`str` — in C `__builtin_bswap32`/`htobe32` then `memcpy` to the destination, which "
           "compilers turn into `rev` + `str` (an unaligned `str` is fine on AArch64). For a "
           "whole block of words (a digest, a key schedule) `ldr q` + `rev32 v.16b` + `str q` "
           "does four words at a time.")
    return (f"Byte-by-byte big-endian store in {fn}" + (f" ({sites} sites)" if sites > 1
                                                         else ""), claim, rec)


def _byte_swap_removes(m: MechanismData) -> float | None:
    """`rev` + `str` replace the shifts and byte stores of each word; the loop's own rows,
    counted with them, stay (the vector form would cut them too: the lower bound)."""
    per = metric(m, "instructions per word") or 0
    control = metric(m, "loop instructions per word") or 0
    return round((per - 2) / (per + control), 3) if per > 2 else None


def _store_loop(m: MechanismData, noun: str) -> tuple[str, str, str]:
    width = int(metric(m, "store width") or 0)
    per_entry = metric(m, "bytes per entry") or 0
    fn = m.functions[0]
    claim = (f"A fill or clear loop in `{fn}` stores {width} byte(s) per store instruction with "
             f"almost no loads: it iterated {count(metric(m, 'iterations') or 0, noun)}, "
             f"{number(metric(m, 'iterations per entry') or 0)} iterations per entry, about "
             f"{number(per_entry)} bytes per entry.")
    rec = (f"Store {WIDE} bytes per instruction: `stp xzr, xzr` (or `stp` of a "
           f"replicated value) cuts the iterations to {width}/{WIDE} of today, `stp q` "
           "of a zeroed/`dup` vector to half of that; for whole zeroed cache lines (sizes of "
           "hundreds of bytes and more) `dc zva`. A `memset` call gets this from the C "
           "library's tuned routine. If the loop clears secrets, keep the clear in a form the "
           "compiler cannot drop (`explicit_bzero`, `memset_explicit`, or the wider stores "
           "through a `volatile` pointer). Fewer bytes or calls (clear only what was written) "
           "help as much.")
    return f"Narrow store loop in {fn} ({width}-byte stores)", claim, rec


def _store_loop_removes(m: MechanismData) -> float | None:
    """Stores of ``WIDE`` bytes run the loop width/WIDE as often."""
    width = metric(m, "store width") or 0
    return round(1 - width / WIDE, 3) if 0 < width < WIDE else None


def _gather_branch(m: MechanismData, noun: str) -> tuple[str, str, str]:
    branches = m.value(GatherValues) or GatherValues()
    fn = m.functions[0]
    keys = metric(m, "keys gathered") or 0
    loops = int(metric(m, "loop iterations") or 0)
    partition, three, scatters = branches.partition, branches.three_way, branches.scatters
    several = m.sites > 1
    by_head = branches.loops
    scattered = metric(m, "bucket scatter share") or 0
    scatter_keys = int(metric(m, "scatter keys") or 0)
    inner = int(metric(m, "inner cycles") or 0)
    # the loop iterations are the heads of the loops and of their inner cycles
    over = f" over {m.sites} loops" + (
        f" and {inner} inner cycle{'s' if inner > 1 else ''}" if inner else "")
    # a scatter's key only addresses its bucket's flag and cursor: no branch reads it
    branched = ("It branches on each key" if not scatter_keys else
                "It branches on what each key addresses, not on the key" if keys <= scatter_keys
                else "It branches on each partition key" if partition else
                "It branches on each key of the other loops")
    figures = (f"{number(keys)} keys, {number(loops)} loop iterations"
               if noun == "executions" else
               f"the key loads {count(keys, noun)}, the loop heads {count(loops, noun)}")
    claim = (f"{'Loops' if several else 'A loop'} in `{fn}` "
             f"{'read' if several else 'reads'} an array of indexes "
             f"({branches.streams}) and {'load' if several else 'loads'} a key "
             f"through each index "
             f"({branches.gathers}): {figures}"
             # several loops' figures by head are long: they are in the checks
             + (f"{over} (each by head in the checks)" if several and by_head
                else f" (by head: {by_head})" if by_head else "") + ". "
             f"{branched}: {branches.decided}"
             + _roles_said(branches)
             + (". It stores index values back into the array: a partition" if partition else "")
             + (f". It decides three ways on a key, testing it for equality and for order "
                f"({three})" if three else "")
             + (f". The loops storing each index at a place its key names ({scatters}) are "
                f"bucket scatters, not partitions: "
                + (f"their {number(scatter_keys)} keys only address loads and stores; "
                   if keys > scatter_keys else "")
                + f"the own share {m.share:.2%} includes them "
                f"({scattered:.2f}% of the run)" if scatters else "")
             + ". Every key is a load whose address is known only after its index is loaded, "
             "and every decision is a data-dependent branch. Exact counts show how often each "
             "branch went one way, not how often it mispredicted or how long the key loads took.")
    diamonds = ", ".join(branches.diamonds)
    exits = ", ".join(branches.exits)
    many = len(branches.exits) > 1  # the verbs agree
    ends = ("end the scans (loop exits) and stay branches" if many else
            "ends its scan (a loop exit) and stays a branch")
    ended = "end the scans: loop exits" if many else "ends its scan: a loop exit"
    leave = "exit the loop and stay branches" if many else "exits the loop and stays a branch"
    # a partition's scans branch to its swaps and end at its order tests: a block partition
    # rewrites the scan, so only a branch into a loop or a call stops it
    kept = [g for g in branches.guards if not partition or g.guards in (LOOP, CALL)]
    guards = [f"{g.branch} ({g.guards})" for g in kept]
    leaves = [] if partition else [f"{e} (exits the loop)" for e in branches.exits]
    stops = "; ".join(guards + leaves)
    why = ("its sides do not rejoin within a few instructions: it picks a path, not a value"
           if any(g.guards == LONG_PATH for g in kept) else
           "it guards a loop or call, not a value choice" if guards else
           "a loop exit ends the loop, it does not pick a value")
    gather = ("Take the key loads off the decision's path: gather the keys into a contiguous "
              "array first (a loop `key[i] = base[idx[i] + k]` has independent loads the core "
              "overlaps), or prefetch `base[idx[i + d] + k]` about 8-16 elements ahead "
              "(`__builtin_prefetch`, `prfm pldl1keep`)")
    scatter = (f" The bucket scatters (above, {scattered:.2f}% of the run) place each index "
               "where its key says: the branch-free partition does not apply to them, only the "
               "gather or prefetch." if scatters else "")
    title = f"Keys gathered through an index array and branched on in {fn} ({number(keys)} keys)"
    if metric(m, "value-choice branches") == 0 and (stops or not partition):
        return title, claim, (
            f"{gather}. A branch-free rewrite does not apply: {stops}; {why}, and `csel` "
            "cannot replace a path. The key loads' latency (SPE, L1D_CACHE_REFILL) decides "
            "whether the gather or prefetch pays; a branch taken near 50% of the time still "
            "mispredicts often, a cost only a different algorithm removes." + scatter)
    if partition and diamonds:
        decide = (f"then make the short diamonds branch-free: {diamonds} only choose whether "
                  "an index moves (both sides rejoin within a few instructions), so store it "
                  "unconditionally at its cursor (the `==` cursor for an equality test) and "
                  "advance the cursor by the flag (`cset`, `add`)"
                  + (f"; {exits} {ends} unless the whole loop is rewritten: " if exits else
                     "; or rewrite the whole loop: ")
                  + _partition_rewrite(m).removeprefix("then "))
    elif partition:
        decide = _partition_rewrite(m) + (
            f" ({exits} {ended}, which the single pass replaces)" if exits else "")
    else:
        decide = ("then decide branch-free where the branch only picks a value (`csel`/`cset`)"
                  + (f": {diamonds}" if diamonds else "")
                  + (f"; {exits} {leave}" if exits else ""))
    if guards:
        decide += f" (not {'; '.join(guards)}: {why})"
    rec = (f"{gather}; {decide}. Which half pays is what the counts cannot show: mispredicts "
           "per key (BR_MIS_PRED_RETIRED, SPE or the simulator) decide the branch-free rewrite; the key loads' latency (SPE, "
           "L1D_CACHE_REFILL) decides the gather or prefetch. A branch taken near 50% of the "
           "time on random data mispredicts often; one near 0% or 100% does not." + scatter)
    return title, claim, rec


def _roles_said(branches: GatherValues) -> str:
    """The sentence naming what each branch on the key does (its value choices, its loop
    exits, the branches guarding more), each list as its check says it (the checks do not
    repeat it)."""
    diamonds, exits = ", ".join(branches.rejoining), ", ".join(branches.exits)
    guarding = branches.guarding()
    several, leaving = len(branches.diamonds) > 1, len(branches.exits) > 1
    said = ([f"{diamonds} {'are short diamonds' if several else 'is a short diamond'}"
             ", only picking a value"] if diamonds else []) + \
        ([f"{exits} {'exit' if leaving else 'exits'} the loop"] if exits else []) + \
        ([f"not value choices: {guarding}"] if guarding else [])
    text = "; ".join(said)
    return f". {text[:1].upper()}{text[1:]}" if said else ""


def _partition_rewrite(m: MechanismData) -> str:
    """The branch-free partition for a two-way or, with the part of keys found equal, a
    three-way decision (pcscope.core.gather_partition.THREE_WAY); that part is of the keys
    the decisions test, which are the partition's when every key of it is tested."""
    equal = metric(m, "keys equal")
    if equal is None:
        return ("then partition branch-free on the contiguous keys: compute each element's "
                "side with `cmp`/`cset` and store it unconditionally at both candidate "
                "positions, advancing one pointer by the flag (block partitioning, as in "
                "BlockQuicksort and pdqsort)")
    tested = int(metric(m, "keys tested three ways") or 0)
    of = (f"the partition's {number(tested)} keys"
          if tested == metric(m, "partition keys") else
          f"the {number(tested)} keys its three-way decisions test")
    return (f"then partition branch-free on the contiguous keys. The partition is three-way "
            f"(two flags per element: `<` and `==`), and {number(equal)}% of {of} equal "
            f"the pivot, so the two-way block partition of BlockQuicksort and pdqsort does not "
            f"fit as written: compute both flags (`cmp`, two `cset`), store the index "
            f"unconditionally at the `<` and the `==` cursors and advance each by its flag, or "
            f"partition twice (`<` against the rest, then `==` against `>`)")


def _struct_relaxation(m: MechanismData, noun: str) -> tuple[str, str, str]:
    read = m.value(RelaxationValues) or RelaxationValues()
    fn = m.functions[0]
    stride = int(metric(m, "struct stride") or 0)
    updates = metric(m, "update share") or 0
    runs = metric(m, "iterations") or 0
    fixed = read.fixed_base
    several = m.sites > 1
    claim = (f"{'Loops' if several else 'A loop'} in `{fn}` "
             f"{'relax' if several else 'relaxes'} costs over an array of "
             f"{stride}-byte structs ("
             + (f"{number(runs)} iterations" if noun == "executions" else
                f"loop heads {count(runs, noun)}")
             + (f" over {m.sites} loops" if several else "") + "): each iteration adds a "
             f"contiguous table entry ({read.table}) to a base and compares "
             f"the sum with one field ({read.field}), and stores to the "
             f"struct on {number(updates)}% of the "
             + ("heaviest loop's iterations (each loop's share is in the checks)" if several
                else "iterations")
             + f". Of every {stride} bytes the loop steps over, it compares 4.")
    rec = (f"Keep the compared field in an array of its own (structure of arrays: a "
           f"`uint32_t` cost array beside the other fields), then handle four iterations per "
           f"vector step: `ldr q` of four table entries, `add v.4s` of the base (`dup`), "
           f"`ldr q` of four costs, `cmhi v.4s` and `umaxv` to see whether any lane improved, "
           f"and the scalar update only for the lanes that did ({number(updates)}% of "
           f"iterations today). One 64-byte line then holds 16 costs instead of "
           f"{64 / stride:.2g} structs.")
    rec += (" The base is fixed in the loop, so it is one `dup`." if fixed else
            " Where the base changes with the index (here it comes from other loads in the "
            "loop), compute the bases into a small array first, or vectorise the loop whose "
            "base is fixed first.")
    rec += (" Other code reading the struct must follow the new layout; count the loop's "
            "instructions per iteration before and after.")
    return (f"Cost relaxation over {stride}-byte structs in {fn} ({number(updates)}% "
            f"updates)", claim, rec)


def _fixed_trip_sum(m: MechanismData, noun: str) -> tuple[str, str, str]:
    read = m.value(FixedTripValues) or FixedTripValues()
    fn = m.functions[0]
    trips = int(metric(m, "trips per entry") or 0)
    per_trip = metric(m, "instructions per trip") or 0
    calls = metric(m, "function calls") or 0
    per_call = metric(m, "instructions per call") or 0
    varies = read.varies
    claim = (f"`{fn}` is entered {count(calls, noun)}, {number(per_call)} instructions per "
             f"entry, and runs loops whose head count is a whole multiple of their entries: "
             f"{read.loops}. Each trip adds a table "
             f"lookup into one register ({read.summed}), and no lookup "
             f"address depends on an earlier trip's lookup, so the trips do not wait for "
             f"memory from one to the next: the cost is the loop itself, its compare and "
             f"branch every trip and the index arithmetic carried from trip to trip.")
    rec = (f"Unroll the loop fully (`#pragma GCC unroll {trips}`, or {trips} written-out "
           f"steps): that deletes the compare and branch of every trip ({LOOP_CONTROL} of "
           f"{number(per_trip)} instructions) and lets the index arithmetic of all trips be "
           f"computed first, so the {trips} lookups issue back to back"
           + (f" (the bound is set before the loop and may differ between calls: unroll for "
              f"{trips} and keep the loop for other counts)" if varies else "")
           + f". If callers ask for "
           f"the same sum again with the same context, keep the sums in a table per context "
           f"and refresh it when the table the loop reads changes: compare how often that "
           f"table is written with the {number(calls)} calls before choosing that.")
    return (f"Fixed-trip lookup loop in {fn} ({trips} trips × {number(per_trip)} "
            f"instructions, {number(calls)} calls)", claim, rec)


def _fixed_trip_removes(m: MechanismData) -> float | None:
    """A full unroll deletes the compare and branch of every trip."""
    per_trip = metric(m, "instructions per trip") or 0
    return round(LOOP_CONTROL / per_trip, 3) if per_trip > LOOP_CONTROL else None


# What part of its own share a kind's advice deletes, where that (not the category's
# penalty) sizes the upside.
_REMOVES = {"dispatch": _dispatch_removes, "byte-swap-store": _byte_swap_removes,
            "store-loop": _store_loop_removes, "per-operation": _per_operation_removes,
            "libc-routine": _libc_removes,
            "return-zeroing": _return_zeroing_removes, "fixed-trip-sum": _fixed_trip_removes}

_WRITERS = {
    "dispatch": _dispatch, "indirect-call": _indirect_call, "plt": _plt,
    "pointer-chase": _chase, "byte-loop": _byte_loop, "byte-compare": _compare_chain,
    "spin-wait": _spin, "llsc": _llsc,
    "outline-atomic": _outline, "libc-lock": _locks, "division": _division,
    "fp-division": _division,
    "libc-routine": _libc, "jit": _jit_code, "memory-state": _memory_state,
    "per-operation": _per_operation, "table-crc": _table_crc,
    "return-zeroing": _return_zeroing, "spill-block": _spill_block,
    "byte-swap-store": _byte_swap, "store-loop": _store_loop,
    "gather-branch": _gather_branch, "struct-relaxation": _struct_relaxation,
    "fixed-trip-sum": _fixed_trip_sum,
}  # fmt: skip
