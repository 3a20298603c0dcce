"""The offline analyst's detectors: pure functions from one window (its instructions as the
``window`` tool returned them, plus the ALP records the ``alp`` tool returned) to the
rules that fire.

Measured rules need an ALP record at the evidence PC and a figure past the catalog's
threshold (healthy figures keep them quiet, which is what tells a planted issue from its
look-alike). Each reads every ALP field that can carry its signal — a latency is
``mem.avg_latency`` or the stages' execute latency, a miss rate is L1D misses or, when the
simulator counts none, L2/LLC misses (a lower bound on them), and so on (the table in
rules.py) — and records which fields it read, with their values, in ``Detection.checks``.
Without ALP, only barriers and FP accumulation chains fire here (profile-only); every other
profile-only idea comes from a mechanism (pcscope.core.backends.advice), whose sites passed
the index's code-shape checks. Each PC is explained once: spin loops before their loads,
exclusive pairs before their branches, and so on.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pcscope.core.backends import rules as R
from pcscope.core.backends.operands import Operands, parse
from pcscope.core.isa import (
    is_barrier,
    is_divide,
    is_exclusive,
    is_fp_divide,
    is_indirect,
    is_load,
    is_lse,
    is_store,
    is_wait_hint,
)
from pcscope.core.isa import is_conditional_branch as is_conditional

_COMPARES = ("cmp", "cmn", "tst", "subs", "adds", "ands", "ccmp")
_FP_ACCUMULATE = ("fadd", "fsub", "fmadd", "fmsub", "fnmadd", "fnmsub", "fmla", "fmls", "fmul")
_SIZES = {"b": 1, "h": 2, "w": 4, "x": 8, "s": 4, "d": 8, "q": 16}


@dataclass(frozen=True)
class Insn:
    pc: int
    asm: str
    mnemonic: str
    share: float
    patterns: tuple[str, ...]
    alp: dict[str, Any] | None
    ops: Operands

    @classmethod
    def of(cls, row: dict[str, Any], alp: dict[str, Any] | None) -> Insn:
        ops = parse(row["asm"])
        return cls(row["pc"], row["asm"], ops.mnemonic, row["share"], tuple(row["patterns"]),
                   alp, ops)

    @property
    def branch(self) -> dict[str, Any] | None:
        return self.alp.get("branch") if self.alp else None

    @property
    def mem(self) -> dict[str, Any] | None:
        return self.alp.get("mem") if self.alp else None

    def figure(self, name: str) -> float | None:
        return self.alp.get(name) if self.alp else None

    @property
    def latency(self) -> float | None:
        found = self.latency_reading()
        return found.value if found else None

    def latency_reading(self) -> Reading | None:
        """A memory op's average latency, else the stages' execute latency."""
        mem = self.mem
        if mem and mem.get("avg_latency") is not None:
            return Reading(mem["avg_latency"], "mem.avg_latency", "cycles")
        return self.stage_reading("execute_latency")

    def stage_reading(self, name: str) -> Reading | None:
        value = self.figure(name)
        return None if value is None else Reading(value, _STAGE_FIELDS[name], "cycles")

    def miss_reading(self) -> Reading | None:
        """The L1D miss rate; without an L1D count, the highest of the L2 and LLC miss
        rates (every L2 or LLC miss missed L1D first, so it is a lower bound)."""
        mem = self.mem or {}
        if mem.get("l1d_miss_rate") is not None:
            return Reading(mem["l1d_miss_rate"], "mem.l1d_miss / accesses", "rate")
        lower = [(mem[k], f"mem.{k[:-5]} / accesses (a lower bound on L1D misses)")
                 for k in ("l2_miss_rate", "llc_miss_rate") if mem.get(k) is not None]
        if not lower:
            return None
        value, field_ = max(lower)
        return Reading(value, field_, "rate")

    def mispredict_reading(self) -> Reading | None:
        """Mispredicts per execution; without an executed count, per loop iteration."""
        branch = self.branch or {}
        alp = self.alp or {}
        if branch.get("mispredict_rate") is not None:
            return Reading(branch["mispredict_rate"], "branch.mispredicted / executed", "rate")
        if branch.get("mispredicted") is not None and alp.get("iterations"):
            return Reading(branch["mispredicted"] / alp["iterations"],
                           "branch.mispredicted / iterations (no executed count)", "rate")
        return None

    def per_iteration(self) -> Reading | None:
        """Executions per loop iteration of a memory op (mem.accesses / iterations)."""
        mem = self.mem or {}
        alp = self.alp or {}
        if mem.get("accesses") is None or not alp.get("iterations"):
            return None
        return Reading(mem["accesses"] / alp["iterations"], "mem.accesses / iterations",
                       "x")


@dataclass(frozen=True)
class Reading:
    """One figure a rule read from the ALP, and the field it came from."""

    value: float
    field: str  # as the claim names it
    unit: str  # "cycles", "rate" or "x"

    def shown(self) -> str:
        if self.unit == "rate":
            return _pct(self.value)
        return f"{self.value:.3g}" + (" cycles" if self.unit == "cycles" else "x")

    def check(self, threshold: float, passed: bool | None = None) -> str:
        """``field = value (≥ threshold: passed)`` for the recorded checks."""
        hit = self.value >= threshold if passed is None else passed
        limit = _pct(threshold) if self.unit == "rate" else f"{threshold:g}"
        return f"ALP {self.field} = {self.shown()} (threshold {limit}: " \
               f"{'fires' if hit else 'quiet'})"


_STAGE_FIELDS = {"issue_wait": "issue wait (issue - dispatch)",
                 "execute_latency": "execute latency (complete - issue)"}


@dataclass(frozen=True)
class Detection:
    rule: str
    pcs: tuple[int, ...]  # the evidence PC first
    measured: bool
    figures: str  # what the evidence shows, for the claim
    strength: float  # 0..1: how far past its threshold (or how hot, profile-only)
    checks: tuple[str, ...] = ()  # the ALP fields a measured rule read, values, thresholds

    @property
    def pc(self) -> int:
        return self.pcs[0]


@dataclass
class WindowView:
    id: str
    function: str  # display name
    weight: float
    insns: list[Insn]
    basis: str = "samples"  # what the counts are: samples, cycles or executions
    module: str | None = None
    mechanisms: list[dict[str, Any]] = field(default_factory=list)  # the window tool's data
    explained: set[int] = field(default_factory=set)

    def index(self, pc: int) -> int | None:
        return next((i for i, ins in enumerate(self.insns) if ins.pc == pc), None)

    def loops(self) -> list[tuple[int, int]]:
        """(first, last) instruction indices of each backward branch's body in the window."""
        out = []
        for j, ins in enumerate(self.insns):
            target = ins.ops.target
            if target is not None and target <= ins.pc and not ins.mnemonic.startswith("bl"):
                i = self.index(target)
                if i is not None:
                    out.append((i, j))
        return out

    def writer(self, k: int, reg: str, body: tuple[int, int] | None = None) -> int | None:
        """Index of the latest instruction before ``k`` writing ``reg`` (wrapping around the
        loop body for a loop-carried value)."""
        for i in range(k - 1, -1, -1):
            if reg in self.insns[i].ops.dest:
                return i
        if body is not None:
            for i in range(body[1], k, -1):
                if reg in self.insns[i].ops.dest:
                    return i
        return None

    def body_of(self, k: int) -> tuple[int, int] | None:
        bodies = [b for b in self.loops() if b[0] <= k <= b[1]]
        return min(bodies, key=lambda b: b[1] - b[0]) if bodies else None


def detect(window: WindowView) -> list[Detection]:
    found: list[Detection] = []
    for detector in (_spin, _llsc, _lse, _barrier, _divide, _indirect, _conditional, _fp_chain,
                     _loads):
        for det in detector(window):
            if det.pc in window.explained:
                continue
            window.explained.update(det.pcs)
            found.append(det)
    return found


def _hot(window: WindowView, share: float) -> bool:
    return share >= R.HOT_PC and window.weight >= R.HOT_WINDOW


def _strength(value: float, threshold: float) -> float:
    return max(0.0, min(1.0, (value - threshold) / threshold))


def _pct(x: float) -> str:
    return f"{x:.1%}"


@dataclass(frozen=True)
class Verdict:
    """What a measured rule's readings say: those past their threshold (strongest first),
    the checks to record (every reading, past or not) and the strength."""

    past: tuple[Reading, ...]
    checks: tuple[str, ...]
    strength: float


def _judge(readings: list[tuple[Reading | None, float]]) -> Verdict | None:
    """None when the ALP has none of the fields (the rule then falls back to the profile)."""
    present = [(r, t) for r, t in readings if r is not None]
    if not present:
        return None
    past = sorted(((r, t) for r, t in present if r.value >= t),
                  key=lambda p: -_strength(p[0].value, p[1]))
    strength = _strength(past[0][0].value, past[0][1]) if past else 0.0
    return Verdict(tuple(r for r, _ in past), tuple(r.check(t) for r, t in present), strength)


# -- spin-wait -----------------------------------------------------------------------------
def _spin(w: WindowView) -> list[Detection]:
    out = []
    for first, last in w.loops():
        body = w.insns[first:last + 1]
        if len(body) > 8 or any(is_store(i.mnemonic) or i.mnemonic.startswith("bl")
                                for i in body):
            continue
        written = [r for i in body for r in i.ops.dest]
        tested = _exit_registers(w, first, last)
        # a poll: a load off a register the loop does not change (not the private stack)
        # whose value, unchanged, decides the exit (not a count or a derived pointer)
        polls = [i for i in body if is_load(i.mnemonic) and not set(i.ops.address) & set(written)
                 and not is_lse(i.mnemonic) and set(i.ops.dest) & tested
                 and all(written.count(r) == 1 for r in i.ops.dest)
                 and not {"sp", "x29"} & set(i.ops.address)]
        if not polls:
            continue
        load, branch = polls[0], w.insns[last]
        if "spin-wait" not in branch.patterns:
            continue  # the index's shape check (shapes.polls) did not confirm a poll
        hint = next((i.mnemonic for i in body if is_wait_hint(i.mnemonic)), None)
        pcs = (branch.pc, *[i.pc for i in body if i.pc != branch.pc])
        verdict = _judge([(load.per_iteration(), R.SPIN_POLLS),
                          (_polls_per_exit(w, first, last), R.SPIN_POLLS)])
        if verdict is not None and verdict.past:
            how = f"with `{hint}`" if hint else "with no yield, wfe or isb"
            polls_seen = "; ".join(f"{r.value:.3g} polls ({r.field})" for r in verdict.past)
            out.append(Detection(
                "spin-poll", pcs, True,
                f"the poll loop ({how}) runs its load many times before it exits: "
                f"{polls_seen}", verdict.strength, verdict.checks))
    return out


def _exit_registers(w: WindowView, first: int, last: int) -> set[str]:
    """The registers the loop's exit decisions read: those of a cbz/tbz-style branch, or of
    the compare that sets the flags a b.cond reads."""
    lo, hi = w.insns[first].pc, w.insns[last].pc
    out: set[str] = set()
    for k in range(first, last + 1):
        ins = w.insns[k]
        target = ins.ops.target
        exits = k == last or (target is not None and not lo <= target <= hi)
        if not is_conditional(ins.mnemonic) or not exits:
            continue
        if ins.ops.src:
            out.update(ins.ops.src)
            continue
        compare = next((w.insns[i] for i in range(k - 1, first - 1, -1)
                        if w.insns[i].mnemonic in _COMPARES), None)
        if compare is not None:
            out.update(compare.ops.src)
    return out


def _polls_per_exit(w: WindowView, first: int, last: int) -> Reading | None:
    """Polls per exit from the branch counts: a conditional back-edge exits when not taken
    (polls = 1 / (1 - taken rate)), a forward exit branch when taken. A loop the slice never
    saw exit counts its executions as the polls of one exit."""
    back = w.insns[last]
    if is_conditional(back.mnemonic):
        counts = _counts(back)
        if counts is not None:
            executed, taken = counts
            return _per_exit(executed, executed - taken,
                             "the back-edge's branch.executed / not taken = 1 / (1 - taken rate)")
    lo, hi = w.insns[first].pc, back.pc
    for ins in w.insns[first:last]:
        target = ins.ops.target
        if is_conditional(ins.mnemonic) and target is not None and not lo <= target <= hi:
            counts = _counts(ins)
            if counts is not None:
                return _per_exit(counts[0], counts[1],
                                 "the exit branch's branch.executed / taken")
    return None


def _counts(ins: Insn) -> tuple[int, int] | None:
    branch = ins.branch or {}
    if not branch.get("executed") or branch.get("taken") is None:
        return None
    return branch["executed"], branch["taken"]


def _per_exit(executed: int, exits: int, field_: str) -> Reading:
    if exits > 0:
        return Reading(executed / exits, field_, "x")
    return Reading(float(executed), f"{field_}, no exit seen in the slice", "x")


# -- atomics -------------------------------------------------------------------------------
def _llsc(w: WindowView) -> list[Detection]:
    out = []
    for k, store in enumerate(w.insns):
        if not (is_exclusive(store.mnemonic) and store.mnemonic.startswith("st")):
            continue
        status = store.ops.dest[0] if store.ops.dest else None
        load = next((w.insns[i] for i in range(k - 1, -1, -1)
                     if is_exclusive(w.insns[i].mnemonic) and w.insns[i].mnemonic.startswith("ld")),
                    None)
        check = next((i for i in w.insns[k + 1:k + 4]
                      if i.mnemonic in ("cbnz", "cbz") and status in i.ops.src), None)
        pcs = tuple(i.pc for i in (store, load, check) if i is not None)
        lat = load.latency_reading() if load is not None else None
        verdict = _judge([(_retry_rate(check) if check is not None else None, R.RETRY_RATE),
                          (_retry_from_executions(store), R.RETRY_RATE),
                          (lat, R.ATOMIC_LATENCY)])
        if verdict is not None and verdict.past:
            parts = [f"the exclusive load takes {r.shown()} ({r.field})" + _misses(load)
                     if r is lat else f"the store-exclusive fails and the loop retries on "
                     f"{r.shown()} of attempts ({r.field})" for r in verdict.past]
            out.append(Detection("llsc-retry", pcs, True, "; ".join(parts),
                                 verdict.strength, verdict.checks))
    return out


def _retry_rate(check: Insn) -> Reading | None:
    """Retries per attempt from the status branch: the store-exclusive writes 1 on failure,
    so `cbnz` retries when taken and `cbz` when not taken, wherever they jump."""
    branch = check.branch
    if not branch or branch.get("taken_rate") is None:
        return None
    taken = branch["taken_rate"]
    if check.mnemonic == "cbnz":
        return Reading(taken, "the status branch's branch.taken / executed", "rate")
    return Reading(1.0 - taken, "the status branch's 1 - taken / executed", "rate")


def _retry_from_executions(store: Insn) -> Reading | None:
    """Retries per attempt from the pair's executions per loop entry (once per iteration):
    n attempts per entry means 1 - 1/n of them failed."""
    per = store.per_iteration()
    if per is None or per.value <= 0:
        return None
    return Reading(max(0.0, 1.0 - 1.0 / per.value),
                   f"1 - iterations / store-exclusive executions (mem.accesses / iterations = "
                   f"{per.value:.3g})", "rate")


def _misses(ins: Insn | None) -> str:
    miss = ins.miss_reading() if ins is not None else None
    if miss is None:
        return ""
    if miss.value < R.ATOMIC_MISS:
        return f" with only {miss.shown()} misses ({miss.field}): the line is fetched or " \
               f"the atomic performed away from this core's L1D"
    return f" with {miss.shown()} misses ({miss.field})"


def _lse(w: WindowView) -> list[Detection]:
    out = []
    for ins in w.insns:
        if not is_lse(ins.mnemonic):
            continue
        lat = ins.latency_reading()
        if lat is not None:
            # the cost is the latency, with or without L1D misses: a far atomic (performed
            # at the shared cache) misses nothing in L1D and still waits for the line
            verdict = _judge([(lat, R.ATOMIC_LATENCY)])
            if verdict is None:
                continue
            miss = ins.miss_reading()
            checks = verdict.checks + ((miss.check(R.ATOMIC_MISS),) if miss else ())
            if verdict.past:
                out.append(Detection(
                    "atomic-contention", (ins.pc,), True,
                    f"the atomic takes {lat.shown()} ({lat.field}){_misses(ins)}: another "
                    f"core holds its line", verdict.strength, checks))
    return out


# -- ordering and long-latency ops ---------------------------------------------------------
def _barrier(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        if not is_barrier(ins.mnemonic) or ins.mnemonic == "isb":
            continue
        before = next((w.insns[i] for i in range(k - 1, max(-1, k - 5), -1)
                       if is_store(w.insns[i].mnemonic)), None)
        after = _next_memory_op(w, k)
        pcs = (ins.pc,) + ((before.pc,) if before else ()) + ((after.pc,) if after else ())
        held = after.stage_reading("issue_wait") if after is not None else None
        if held is not None and after is not None:
            held = Reading(held.value, f"issue wait of the next memory op `{after.asm}`",
                           "cycles")
        verdict = _judge([(ins.stage_reading("issue_wait"), R.ORDER_WAIT),
                          (ins.stage_reading("execute_latency"), R.ORDER_WAIT),
                          (held, R.ORDER_WAIT)])
        if verdict is not None:
            if verdict.past:
                extra = ""
                if before is not None and before.latency is not None:
                    extra = (f"; the store before it (`{before.asm}`) takes "
                             f"{before.latency:.3g} cycles")
                waits = ", ".join(f"{r.field} {r.shown()}" for r in verdict.past)
                out.append(Detection("barrier-wait", pcs, True,
                                     f"the barrier holds the pipeline: {waits}{extra}",
                                     verdict.strength, verdict.checks))
        elif _hot(w, ins.share):
            out.append(Detection("barrier-wait", pcs, False,
                                 f"the barrier holds {_pct(ins.share)} of the total",
                                 min(1.0, ins.share / 0.05)))
    return out


def _next_memory_op(w: WindowView, k: int) -> Insn | None:
    """The first memory op within 4 instructions after ``k`` whose address is ready (no
    instruction in between writes its base): what a barrier at ``k`` holds back."""
    written: set[str] = set()
    for ins in w.insns[k + 1:k + 5]:
        if is_load(ins.mnemonic) or is_store(ins.mnemonic):
            return None if set(ins.ops.address) & written else ins
        written.update(ins.ops.dest)
    return None


def _divide(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        if not is_divide(ins.mnemonic):
            continue
        consumer = next((i for i in w.insns[k + 1:k + 4] if set(ins.ops.dest) & set(i.ops.src)),
                        None)
        pcs = (ins.pc,) + ((consumer.pc,) if consumer else ())
        verdict = _judge([(ins.stage_reading("execute_latency"), R.DIVIDE_LATENCY),
                          (_consumer_wait(ins, consumer), R.DIVIDE_LATENCY)])
        if verdict is not None and verdict.past:
            shown = "; ".join(f"{r.field}: {r.shown()}" for r in verdict.past)
            rule = "slow-fp-divide" if is_fp_divide(ins.mnemonic) else "slow-divide"
            out.append(Detection(rule, pcs, True,
                                 f"the divide is slow on the critical path: {shown}",
                                 verdict.strength, verdict.checks))
    return out


def _consumer_wait(divide: Insn, consumer: Insn | None) -> Reading | None:
    """The divide's latency as its next consumer sees it: the consumer, dispatched right
    after the divide, waits for the quotient, so its issue wait less the divide's own is
    the divide's latency."""
    if consumer is None:
        return None
    theirs, own = consumer.figure("issue_wait"), divide.figure("issue_wait")
    if theirs is None or own is None:
        return None
    return Reading(theirs - own, f"issue wait of its consumer `{consumer.asm}` less the "
                   f"divide's own", "cycles")


# -- branches ------------------------------------------------------------------------------
def _indirect(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        if not is_indirect(ins.mnemonic):
            continue
        reg = ins.ops.src[0] if ins.ops.src else None
        body = w.body_of(k)
        producer = w.writer(k, reg, body) if reg else None
        pcs = (ins.pc,) + ((w.insns[producer].pc,) if producer is not None else ())
        rate = ins.mispredict_reading() if ins.branch else None
        if rate is not None:
            if rate.value >= R.MISPREDICT:
                source = (f"; the target comes from `{w.insns[producer].asm}`"
                          if producer is not None else "")
                out.append(Detection(
                    "indirect-mispredict", pcs, True,
                    f"the indirect branch mispredicts {rate.shown()} ({rate.field}; "
                    f"~{rate.value * 15:.2g} cycles lost each at a 10-20 cycle flush){source}",
                    _strength(rate.value, R.MISPREDICT), (rate.check(R.MISPREDICT),)))
    return out


def _conditional(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        branch = ins.branch
        if not is_conditional(ins.mnemonic) or not branch:
            continue
        rate = ins.mispredict_reading()
        if rate is None or rate.value < R.MISPREDICT:
            continue
        feeders = [i.pc for i in w.insns[max(0, k - 3):k]
                   if i.mnemonic in _COMPARES or is_load(i.mnemonic)]
        taken = branch.get("taken_rate")
        direction = f", taken {_pct(taken)}" if taken is not None else ""
        out.append(Detection(
            "conditional-mispredict", (ins.pc, *feeders), True,
            f"the branch mispredicts {rate.shown()} ({rate.field}){direction}: its direction "
            f"depends on the data", _strength(rate.value, R.MISPREDICT),
            (rate.check(R.MISPREDICT),)))
    return out


# -- FP chains -----------------------------------------------------------------------------
def _fp_chain(w: WindowView) -> list[Detection]:
    out = []
    for first, last in w.loops():
        chains: dict[str, list[Insn]] = {}
        reset: set[str] = set()  # registers something else also writes: not carried over
        for ins in w.insns[first:last + 1]:
            dest = ins.ops.dest[0] if ins.ops.dest else None
            if ins.mnemonic in _FP_ACCUMULATE and dest and dest.startswith("v") \
                    and dest in ins.ops.src:
                chains.setdefault(dest, []).append(ins)
            else:
                reset.update(ins.ops.dest)
        for reg, chain in sorted(chains.items()):
            if len(chain) < 2 or reg in reset:
                continue
            pcs = tuple(i.pc for i in reversed(chain))
            verdict = _judge([(_mean_wait(chain), R.FP_CHAIN_WAIT),
                              (_mean_excess(chain), R.FP_CHAIN_WAIT)])
            if verdict is not None:
                if verdict.past:
                    waits = "; ".join(f"{r.field}: {r.shown()}" for r in verdict.past)
                    out.append(Detection(
                        "fp-chain", pcs, True,
                        f"{len(chain)} accumulations into one register "
                        f"({chain[0].ops.operands[0]}) per iteration, each waiting for the "
                        f"previous one: {waits}", verdict.strength, verdict.checks))
                continue
            share = sum(i.share for i in chain)
            if _hot(w, share):
                out.append(Detection("fp-chain", pcs, False,
                                     f"{len(chain)} accumulations into one register per "
                                     f"iteration hold {_pct(share)} of the total",
                                     min(1.0, share / 0.05)))
    return out


def _mean_wait(chain: list[Insn]) -> Reading | None:
    waits = [x for i in chain if (x := i.figure("issue_wait")) is not None]
    if not waits:
        return None
    return Reading(sum(waits) / len(waits), "mean issue wait (issue - dispatch)", "cycles")


def _mean_excess(chain: list[Insn]) -> Reading | None:
    """Execute latency beyond the operation's own: where the op issues before its inputs
    are ready (late accumulator forwarding, or a simulator whose "issue" is entry to the
    issue queue), it waits for the previous result while executing."""
    excess = [x - R.FP_LATENCY.get(i.mnemonic, R.FP_LATENCY["fmadd"])
              for i in chain if (x := i.figure("execute_latency")) is not None]
    if not excess:
        return None
    return Reading(sum(excess) / len(excess),
                   "mean execute latency (complete - issue) beyond the operation's own", "cycles")


# -- loads ---------------------------------------------------------------------------------
def _producer_load(w: WindowView, k: int) -> int | None:
    """The load that produced an address register of load ``k`` (directly, or through one
    arithmetic step), if in the window."""
    body = w.body_of(k)
    for reg in w.insns[k].ops.address:
        if reg == "sp":
            continue
        i = w.writer(k, reg, body)
        if i is None:
            continue
        if is_load(w.insns[i].mnemonic):
            return i
        for src in w.insns[i].ops.src:
            j = w.writer(i, src, body)
            if j is not None and is_load(w.insns[j].mnemonic) and src != "sp":
                return j
    return None


def _loads(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        m = ins.mnemonic
        if not is_load(m) or is_exclusive(m) or is_lse(m):
            continue
        producer = _producer_load(w, k)
        # A chase only when the index confirmed the load is loop-carried (shapes).
        chased = "dependent-load" in ins.patterns
        mem = ins.mem
        if mem is None or not mem.get("accesses"):
            continue
        det = _measured_load(w, k, ins, mem, producer if chased else None, chased)
        if det is not None:
            out.append(det)
    return out


def _measured_load(w: WindowView, k: int, ins: Insn, mem: dict, producer: int | None,
                   chased: bool) -> Detection | None:
    """A load's latency (avg_latency or execute latency) with what explains it: DTLB misses,
    cache misses (L1D, else L2/LLC as a lower bound), or a store it cannot forward from."""
    lat_r, miss_r = ins.latency_reading(), ins.miss_reading()
    lat = lat_r.value if lat_r else 0.0
    l1d = miss_r.value if miss_r else 0.0
    tlb = mem.get("tlb_miss_rate")
    fwd = mem.get("store_forward_rate")
    latency = f"latency {lat:.3g} cycles ({lat_r.field})" if lat_r else "no latency"
    misses = f"{_pct(l1d)} misses ({miss_r.field})" if miss_r else "no miss counts"
    checks = tuple(c for c in (lat_r and lat_r.check(R.MISS_LATENCY),
                               miss_r and miss_r.check(R.MISS_RATE)) if c)
    if tlb is not None and tlb >= R.TLB_RATE and lat >= R.MISS_LATENCY:
        return Detection("tlb-walk", (ins.pc,), True,
                         f"{_pct(tlb)} of its accesses miss the DTLB (mem.tlb_miss / accesses; "
                         f"{misses}), {latency}", _strength(tlb, R.TLB_RATE),
                         checks + (Reading(tlb, "mem.tlb_miss / accesses", "rate")
                                   .check(R.TLB_RATE),))
    store = _overlapping_store(w, k)
    # without any miss count, a load this slow with no store to wait for is missing
    missing = l1d >= R.MISS_RATE if miss_r else store is None
    if missing and lat >= R.MISS_LATENCY:
        if chased:
            pcs = (ins.pc,) + ((w.insns[producer].pc,) if producer is not None else ())
            source = f"`{w.insns[producer].asm}`" if producer is not None else "an earlier load"
            return Detection("pointer-chase", pcs, True,
                             f"its address comes from {source}; {misses}, {latency}, so the "
                             f"misses serialise", _strength(lat, R.MISS_LATENCY), checks)
        return Detection("stream-miss", (ins.pc,), True,
                         f"{misses}, {latency}, although no earlier load feeds its address",
                         _strength(lat, R.MISS_LATENCY), checks)
    # a failed forward: the load hits L1D yet waits for the overlapping store to drain;
    # without a forwarding count the latency of an L1-hitting load shows it
    failing = fwd is None or fwd <= R.FORWARD_RATE
    if store is not None and lat_r is not None and failing and lat >= R.FORWARD_LATENCY \
            and l1d <= R.MISS_RATE / 2:
        forwarded = f"forwards on only {_pct(fwd)} of accesses (mem.store_forwarded / " \
            f"accesses)" if fwd is not None else "no forwarding count"
        fwd_check = () if fwd is None else (
            Reading(fwd, "mem.store_forwarded / accesses", "rate").check(
                R.FORWARD_RATE, passed=True),)
        return Detection("forwarding-fail", (ins.pc, store.pc), True,
                         f"it reads bytes just written by `{store.asm}`, {forwarded}, "
                         f"{latency} with {misses}", _strength(lat, R.FORWARD_LATENCY),
                         (lat_r.check(R.FORWARD_LATENCY),) + fwd_check
                         + tuple(c for c in (miss_r and miss_r.check(R.MISS_RATE),) if c))
    return None


def _overlapping_store(w: WindowView, k: int) -> Insn | None:
    load = w.insns[k]
    lo, size = _extent(load)
    for i in range(k - 1, max(-1, k - 9), -1):
        ins = w.insns[i]
        if load.ops.base in ins.ops.dest and not is_store(ins.mnemonic):
            return None  # the base changed in between
        if is_store(ins.mnemonic) and ins.ops.base == load.ops.base \
                and ins.ops.index == load.ops.index:
            slo, ssize = _extent(ins)
            if lo is None or slo is None or (slo < lo + size and lo < slo + ssize):
                return ins
    return None


def _extent(ins: Insn) -> tuple[int | None, int]:
    """(immediate offset or None, access size in bytes) of a plain load/store."""
    mnemonic, ops = ins.mnemonic, ins.ops.operands
    reg = ops[0] if ops else "x0"
    size = 1 if mnemonic.endswith("b") else 2 if mnemonic.endswith("h") else \
        _SIZES.get(reg[:1], 8)
    if mnemonic.endswith("p"):
        size *= 2
    mem = next((op for op in ops if op.startswith("[")), "")
    parts = [p.strip() for p in mem.rstrip("!").strip("[]").split(",")]
    if len(parts) == 1:
        return 0, size
    offset = parts[1].lstrip("#")
    try:
        return int(offset, 0), size
    except ValueError:
        return None, size
