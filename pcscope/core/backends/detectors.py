"""The offline analyst's detectors: pure functions from one window (its instructions as the
``window`` tool returned them, plus the ALP records the ``alp`` tool returned) to the
rules that fire.

Measured rules need an ALP record at the evidence PC and a figure past the catalog's
threshold (healthy figures keep them quiet, which is what tells a planted issue from its
look-alike). Without ALP, only barriers and FP accumulation chains fire here (profile-only);
every other profile-only idea comes from a mechanism (pcscope.core.backends.advice), whose
sites passed the index's code-shape checks. Each PC is explained once: spin loops before their loads,
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
        mem = self.mem
        if mem and mem.get("avg_latency") is not None:
            return mem["avg_latency"]
        return self.figure("execute_latency")


@dataclass(frozen=True)
class Detection:
    rule: str
    pcs: tuple[int, ...]  # the evidence PC first
    measured: bool
    figures: str  # what the evidence shows, for the claim
    strength: float  # 0..1: how far past its threshold (or how hot, profile-only)

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


# -- spin-wait -----------------------------------------------------------------------------
def _spin(w: WindowView) -> list[Detection]:
    out = []
    for first, last in w.loops():
        body = w.insns[first:last + 1]
        if len(body) > 8 or any(is_store(i.mnemonic) for i in body):
            continue
        written = {r for i in body for r in i.ops.dest}
        polls = [i for i in body if is_load(i.mnemonic) and not set(i.ops.address) & written
                 and not is_lse(i.mnemonic)]
        if not polls or not any(i.mnemonic in _COMPARES or is_conditional(i.mnemonic)
                                for i in body):
            continue
        load, branch = polls[0], w.insns[last]
        if "spin-wait" not in branch.patterns:
            continue  # the index's shape check (shapes.polls) did not confirm a poll
        hint = next((i.mnemonic for i in body if is_wait_hint(i.mnemonic)), None)
        pcs = (branch.pc, *[i.pc for i in body if i.pc != branch.pc])
        per = _polls(load)
        if per is not None and per >= R.SPIN_POLLS:
            how = f"with `{hint}`" if hint else "with no yield, wfe or isb"
            out.append(Detection(
                "spin-poll", pcs, True,
                f"the poll loop ({how}) runs its load {per:.3g} times per loop iteration "
                f"(ALP executions / iterations) before it exits", _strength(per, R.SPIN_POLLS)))
    return out


def _polls(load: Insn) -> float | None:
    if not load.alp or not load.alp.get("iterations"):
        return None
    mem = load.mem or {}
    executed = mem.get("accesses")
    if executed is None:
        return None
    return executed / load.alp["iterations"]


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
        retry = _retry_rate(check, store) if check is not None else None
        lat = load.latency if load is not None else None
        miss = ((load.mem or {}).get("l1d_miss_rate") or 0.0) if load is not None else 0.0
        if retry is not None or lat is not None:
            retrying = retry is not None and retry >= R.RETRY_RATE
            contended = lat is not None and lat >= R.ATOMIC_LATENCY and miss >= R.ATOMIC_MISS
            if retrying or contended:
                parts = []
                if retry is not None:
                    parts.append(f"the store-exclusive fails and the loop retries on "
                                 f"{_pct(retry)} of attempts (retry branch taken rate)")
                if lat is not None:
                    parts.append(f"the exclusive load takes {lat:.3g} cycles on average with "
                                 f"{_pct(miss)} L1D misses")
                strength = _strength(retry, R.RETRY_RATE) if retrying else \
                    _strength(lat or 0.0, R.ATOMIC_LATENCY)
                out.append(Detection("llsc-retry", pcs, True, "; ".join(parts), strength))
    return out


def _retry_rate(check: Insn, store: Insn) -> float | None:
    branch = check.branch
    if not branch or branch.get("taken_rate") is None:
        return None
    backward = check.ops.target is not None and check.ops.target <= store.pc
    taken = branch["taken_rate"]
    # cbnz back to the load retries when taken; cbz forward retries when not taken.
    return taken if backward == (check.mnemonic == "cbnz") else 1.0 - taken


def _lse(w: WindowView) -> list[Detection]:
    out = []
    for ins in w.insns:
        if not is_lse(ins.mnemonic):
            continue
        lat, mem = ins.latency, ins.mem or {}
        if lat is not None:
            miss = mem.get("l1d_miss_rate") or 0.0
            if lat >= R.ATOMIC_LATENCY and miss >= R.ATOMIC_MISS:
                out.append(Detection(
                    "atomic-contention", (ins.pc,), True,
                    f"the atomic takes {lat:.3g} cycles on average and misses L1D on "
                    f"{_pct(miss)} of accesses: its line comes from another core",
                    _strength(lat, R.ATOMIC_LATENCY)))
    return out


# -- ordering and long-latency ops ---------------------------------------------------------
def _barrier(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        if not is_barrier(ins.mnemonic) or ins.mnemonic == "isb":
            continue
        before = next((w.insns[i] for i in range(k - 1, max(-1, k - 5), -1)
                       if is_store(w.insns[i].mnemonic)), None)
        pcs = (ins.pc,) + ((before.pc,) if before else ())
        wait = ins.figure("issue_wait")
        if wait is not None:
            if wait >= R.ORDER_WAIT:
                extra = ""
                if before is not None and before.latency is not None:
                    extra = (f"; the store before it (`{before.asm}`) takes "
                             f"{before.latency:.3g} cycles")
                out.append(Detection("barrier-wait", pcs, True,
                                     f"the barrier waits {wait:.3g} cycles to issue "
                                     f"(ALP issue - dispatch){extra}",
                                     _strength(wait, R.ORDER_WAIT)))
        elif _hot(w, ins.share):
            out.append(Detection("barrier-wait", pcs, False,
                                 f"the barrier holds {_pct(ins.share)} of the total",
                                 min(1.0, ins.share / 0.05)))
    return out


def _divide(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        if not is_divide(ins.mnemonic):
            continue
        consumer = next((i for i in w.insns[k + 1:k + 4] if set(ins.ops.dest) & set(i.ops.src)),
                        None)
        pcs = (ins.pc,) + ((consumer.pc,) if consumer else ())
        lat = ins.figure("execute_latency")
        if lat is not None and lat >= R.DIVIDE_LATENCY:
            wait = consumer.figure("issue_wait") if consumer else None
            tail = f"; its consumer `{consumer.asm}` waits {wait:.3g} cycles to issue" \
                if wait is not None else ""
            rule = "slow-fp-divide" if is_fp_divide(ins.mnemonic) else "slow-divide"
            out.append(Detection(rule, pcs, True,
                                 f"the divide's execute latency is {lat:.3g} cycles "
                                 f"(complete - issue){tail}",
                                 _strength(lat, R.DIVIDE_LATENCY)))
    return out


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
        branch = ins.branch
        if branch and branch.get("mispredict_rate") is not None:
            rate = branch["mispredict_rate"]
            if rate >= R.MISPREDICT:
                source = (f"; the target comes from `{w.insns[producer].asm}`"
                          if producer is not None else "")
                out.append(Detection(
                    "indirect-mispredict", pcs, True,
                    f"the indirect branch mispredicts {_pct(rate)} of its "
                    f"{branch.get('executed', 0):,} executions (~{rate * 15:.2g} cycles lost "
                    f"per execution at a 10-20 cycle flush){source}",
                    _strength(rate, R.MISPREDICT)))
    return out


def _conditional(w: WindowView) -> list[Detection]:
    out = []
    for k, ins in enumerate(w.insns):
        branch = ins.branch
        if not is_conditional(ins.mnemonic) or not branch:
            continue
        rate = branch.get("mispredict_rate")
        if rate is None or rate < R.MISPREDICT:
            continue
        feeders = [i.pc for i in w.insns[max(0, k - 3):k]
                   if i.mnemonic in _COMPARES or is_load(i.mnemonic)]
        taken = branch.get("taken_rate")
        direction = f", taken {_pct(taken)}" if taken is not None else ""
        out.append(Detection(
            "conditional-mispredict", (ins.pc, *feeders), True,
            f"the branch mispredicts {_pct(rate)} of its {branch.get('executed', 0):,} "
            f"executions{direction}: its direction depends on the data",
            _strength(rate, R.MISPREDICT)))
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
            waits = [i.figure("issue_wait") for i in chain if i.figure("issue_wait") is not None]
            if waits:
                mean = sum(waits) / len(waits)
                if mean >= R.FP_CHAIN_WAIT:
                    out.append(Detection(
                        "fp-chain", pcs, True,
                        f"{len(chain)} accumulations into one register "
                        f"({chain[0].ops.operands[0]}) "
                        f"per iteration; each waits {mean:.3g} cycles on average to issue for "
                        f"the previous one", _strength(mean, R.FP_CHAIN_WAIT)))
                continue
            share = sum(i.share for i in chain)
            if _hot(w, share):
                out.append(Detection("fp-chain", pcs, False,
                                     f"{len(chain)} accumulations into one register per "
                                     f"iteration hold {_pct(share)} of the total",
                                     min(1.0, share / 0.05)))
    return out


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
    lat = ins.latency or 0.0
    l1d = mem.get("l1d_miss_rate") or 0.0
    tlb = mem.get("tlb_miss_rate")
    fwd = mem.get("store_forward_rate")
    if tlb is not None and tlb >= R.TLB_RATE and lat >= R.MISS_LATENCY:
        return Detection("tlb-walk", (ins.pc,), True,
                         f"{_pct(tlb)} of its accesses miss the DTLB (L1D misses {_pct(l1d)}), "
                         f"average latency {lat:.3g} cycles", _strength(tlb, R.TLB_RATE))
    if l1d >= R.MISS_RATE and lat >= R.MISS_LATENCY:
        if chased:
            pcs = (ins.pc,) + ((w.insns[producer].pc,) if producer is not None else ())
            source = f"`{w.insns[producer].asm}`" if producer is not None else "an earlier load"
            return Detection("pointer-chase", pcs, True,
                             f"its address comes from {source}; it misses L1D on {_pct(l1d)} of "
                             f"accesses with an average latency of {lat:.3g} cycles, so the "
                             f"misses serialise", _strength(lat, R.MISS_LATENCY))
        return Detection("stream-miss", (ins.pc,), True,
                         f"it misses L1D on {_pct(l1d)} of accesses (average latency "
                         f"{lat:.3g} cycles) although no earlier load feeds its address",
                         _strength(lat, R.MISS_LATENCY))
    if fwd is not None and fwd <= R.FORWARD_RATE and lat >= R.FORWARD_LATENCY \
            and l1d <= R.MISS_RATE / 2:
        store = _overlapping_store(w, k)
        if store is not None:
            return Detection("forwarding-fail", (ins.pc, store.pc), True,
                             f"it reads bytes just written by `{store.asm}` but forwards on only "
                             f"{_pct(fwd)} of accesses and takes {lat:.3g} cycles with "
                             f"{_pct(l1d)} L1D misses", _strength(lat, R.FORWARD_LATENCY))
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
