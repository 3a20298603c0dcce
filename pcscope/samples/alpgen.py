"""Simulated ALP evidence for a generated window (docs/formats.md §2).

Each instruction's behaviour (branch taken/mispredict rates, cache/TLB miss rates,
latency) comes from its Effect when a kernel set one, else from the workload's
background ``Env``. A small dataflow model then turns latencies and register
dependencies into average stage timings: fetch 0, decode ~1, rename ~2, dispatch ~3,
issue = max(dispatch + 1, operands ready, ordering), complete = issue + latency, retire =
in order after completion. Ordering: a barrier issues once older stores and atomics
have drained, and younger memory ops issue after it. The loop body is modelled over a
few iterations, so loop-carried chains (pointer chasing, FP accumulators) build issue
waits, while independent work does not.
"""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass

from pcscope.samples.codegen import MEM_KIND, Insn

FETCH_WIDTH = 4
PASSES = 3  # body iterations modelled; the first warms up and is not averaged
# A barrier waits for older stores and atomics to drain (loads have completed by then).
_DRAINED = frozenset(("store", "atomic"))
MEM_FIELDS = ("accesses", "l1d_miss", "l2_miss", "llc_miss", "tlb_miss", "store_forwarded")


@dataclass(frozen=True)
class Env:
    """The background behaviour of a workload's code (everything no kernel overrides)."""

    l1d_median: float        # typical load L1D miss rate
    l1d_max: float
    cond_mispredict: float   # worst background conditional-branch mispredict rate
    indirect_mispredict: float
    mem_fields: tuple[str, ...] = MEM_FIELDS  # counters this simulator reports
    asm_style: str = "same"  # "same" as the profile, "upper" case, or "none" (omitted)
    loop_key_always: bool = True  # False: a PC in a single loop has no "loop" key


@dataclass(slots=True)
class Sim:
    """Resolved behaviour of one instruction."""

    lat: float
    extra: float = 0.0
    taken: float = 0.0
    mispredict: float = 0.0
    l1d: float = 0.0
    l2: float = 0.0
    llc: float = 0.0
    tlb: float = 0.0
    fwd: float = 0.0
    exact: bool = False  # set by a kernel: keep the per-loop jitter small
    unreported: tuple[str, ...] = ()  # Effect.unreported
    late: tuple[str, ...] = ()        # Effect.late


def _pick(value: float | None, default: float) -> float:
    return default if value is None else value


def resolve(ins: Insn, env: Env, rng: random.Random) -> Sim:
    fx = ins.fx
    op = ins.op
    sim = Sim(lat=ins.latency, extra=fx.extra_wait if fx else 0.0, exact=fx is not None)
    if fx is not None:
        sim.unreported, sim.late = fx.unreported, fx.late
    if op in MEM_KIND:
        _resolve_mem(sim, ins, env, rng)
    elif ins.branch_kind is not None:
        _resolve_branch(sim, ins, env, rng)
    return sim


def _resolve_mem(sim: Sim, ins: Insn, env: Env, rng: random.Random) -> None:
    fx = ins.fx
    op = ins.op
    scale = 0.25 if op == "store" else (3.0 if op == "prefetch" else 1.0)
    l1d = min(env.l1d_max, env.l1d_median * scale * rng.lognormvariate(0.0, 0.9))
    if "[sp" in ins.text:
        l1d *= 0.05  # the stack is cache-resident
    sim.l1d = _pick(fx and fx.l1d, l1d)
    sim.l2 = _pick(fx and fx.l2, sim.l1d * rng.uniform(0.1, 0.45))
    sim.llc = _pick(fx and fx.llc, sim.l2 * rng.uniform(0.05, 0.5))
    sim.tlb = _pick(fx and fx.tlb, sim.l1d * rng.uniform(0.0, 0.08))
    fwd = rng.uniform(0.2, 0.7) if op == "load" and "[sp" in ins.text else 0.0
    sim.fwd = _pick(fx and fx.forwarded, fwd)
    if fx is not None and fx.latency is not None:
        sim.lat = fx.latency
    elif op == "store":
        sim.lat = 1.0 + 4.0 * sim.l1d + rng.uniform(0.0, 0.3)
    elif op == "prefetch":
        sim.lat = 1.0
    else:
        base = 8.0 if op == "atomic" else 4.0
        sim.lat = (base + 9.0 * sim.l1d + 30.0 * sim.l2 + 90.0 * sim.llc + 25.0 * sim.tlb
                   + rng.uniform(0.0, 0.5))


def _resolve_branch(sim: Sim, ins: Insn, env: Env, rng: random.Random) -> None:
    fx = ins.fx
    op = ins.op
    if op == "bcond":
        taken = rng.uniform(0.03, 0.5)
        worst = env.cond_mispredict * min(1.0, 4.0 * min(taken, 1.0 - taken))
        sim.taken = _pick(fx and fx.taken, taken)
        edge = min(sim.taken, 1.0 - sim.taken)
        sim.mispredict = _pick(fx and fx.mispredict,
                               rng.uniform(0.0, max(worst, env.cond_mispredict * edge)))
        return
    sim.taken = _pick(fx and fx.taken, 1.0)
    default = {"br": env.indirect_mispredict, "blr": env.indirect_mispredict,
               "ret": 0.002}.get(op, 0.0)
    sim.mispredict = _pick(fx and fx.mispredict, rng.uniform(0.0, default))


def schedule(insns: Sequence[Insn], sims: Sequence[Sim]) -> list[tuple[float, float, float]]:
    """Average (issue, complete, retire), relative to each instruction's fetch."""
    n = len(insns)
    body = [i for i, ins in enumerate(insns) if ins.freq >= 0.5]
    lo, hi = (body[0], body[-1] + 1) if body else (0, n)
    order = [*range(lo), *(list(range(lo, hi)) * PASSES), *range(hi, n)]
    ready: dict[str, float] = {}
    mem_done = fence = prev_retire = 0.0
    sums = [[0.0, 0.0, 0.0] for _ in range(n)]
    counts = [0] * n
    for seq, i in enumerate(order):
        ins, sim = insns[i], sims[i]
        t = seq / FETCH_WIDTH
        if sim.late:
            issue, complete = _late_timing(ins, sim, t + 4.0, ready, fence, mem_done)
        else:
            issue = t + 4.0
            for reg in ins.src:
                ready_at = ready.get(reg)
                if ready_at is not None and ready_at > issue:
                    issue = ready_at
            if ins.op in MEM_KIND and fence > issue:
                issue = fence
            if ins.op == "barrier" and mem_done > issue:
                issue = mem_done
            issue += sim.extra
            complete = issue + sim.lat
        for reg in ins.dst:
            ready[reg] = complete
        for reg in ins.wb:
            ready[reg] = issue + 1.0
        if ins.op in _DRAINED and complete > mem_done:
            mem_done = complete
        if ins.op == "barrier":
            fence = complete
        retire = max(complete + 1.0, prev_retire)
        prev_retire = retire
        if not lo <= seq < hi:  # the body's first pass is warm-up
            acc = sums[i]
            acc[0] += issue - t
            acc[1] += complete - t
            acc[2] += retire - t
            counts[i] += 1
    return [(s[0] / c, s[1] / c, s[2] / c) for s, c in zip(sums, counts, strict=True)]


def _late_timing(ins: Insn, sim: Sim, earliest: float, ready: dict[str, float], fence: float,
                 mem_done: float) -> tuple[float, float]:
    """(issue, complete) of an op that waits for its ``late`` inputs in execution: it
    issues once its other inputs are ready, so the wait shows as execute latency."""
    issue, waited = earliest, 0.0
    for reg in ins.src:
        ready_at = ready.get(reg)
        if ready_at is None:
            continue
        if reg in sim.late:
            waited = max(waited, ready_at)
        elif ready_at > issue:
            issue = ready_at
    if ins.op in MEM_KIND and fence > issue:
        issue = fence
    if ins.op == "barrier":
        if "drain" in sim.late:
            waited = max(waited, mem_done)
        elif mem_done > issue:
            issue = mem_done
    issue += sim.extra
    return issue, max(issue, waited) + sim.lat


@dataclass(frozen=True)
class Loop:
    label: str
    iterations: int
    start: int   # instruction indices [start, end) the loop's records cover
    end: int


def _jitter(rng: random.Random, exact: bool) -> float:
    """Loop-to-loop variation of a rate: small where a kernel fixed the behaviour."""
    return (0.98 + 0.04 * rng.random()) if exact else (0.92 + 0.16 * rng.random())


def _rate(count: int, rate: float, j: float) -> int:
    return min(count, round(count * min(1.0, rate * j)))


def record(pc: int, asm: str, ins: Insn, sim: Sim, timing: tuple[float, float, float],
           loop: Loop, env: Env, rng: random.Random, with_loop: bool) -> str:
    """One raw ALP record for (loop, pc), as a JSON line (built directly: at benchmark
    scale there are hundreds of thousands, and json.dumps would dominate)."""
    parts = [f'"loop": "{loop.label}"'] if with_loop else []
    parts.append(f'"pc": "0x{pc:x}"')
    if env.asm_style != "none":
        text = asm.upper().replace("0X", "0x") if env.asm_style == "upper" else asm
        parts.append(f'"asm": {json.dumps(text)}' if '"' in text or "\\" in text
                     else f'"asm": "{text}"')
    parts.append(f'"iterations": {loop.iterations}')
    execs = round(loop.iterations * ins.freq)
    stages, latency = _stages(timing, sim, ins, rng)
    parts.append(stages)
    kind = ins.branch_kind
    if kind is not None:
        j = _jitter(rng, sim.exact)
        taken = _rate(execs, sim.taken, j if sim.taken < 1.0 else 1.0)
        counts = {"executed": execs, "taken": taken,
                  "mispredicted": _rate(execs, sim.mispredict, j)}
        parts.append(f'"branch": {{"kind": "{kind}"'
                     + "".join(f', "{name}": {value}' for name, value in counts.items()
                               if name not in sim.unreported) + "}")
    mkind = ins.mem_kind
    if mkind is not None:
        parts.append(_mem_block(mkind, execs, sim, latency, env, rng))
    return "{" + ", ".join(parts) + "}"


def _stages(timing: tuple[float, float, float], sim: Sim, ins: Insn,
            rng: random.Random) -> tuple[str, float]:
    """The "stages" member and the execute latency it implies."""
    issue, complete, retire = timing
    j = _jitter(rng, sim.exact)
    front = 0.15 * rng.random()
    execute = complete - issue
    if ins.op in MEM_KIND:
        execute = round(execute * _jitter(rng, sim.exact), 2)
    issue = round(4.0 + front + (issue - 4.0) * j, 2)
    done = round(issue + execute, 2)
    retire = round(done + max(1.0, (retire - complete) * j), 2)
    complete = "" if "complete" in sim.unreported else f'"complete": {done}, '
    return (f'"stages": {{"fetch": 0.0, "decode": {round(1.0 + front, 2)}, '
            f'"rename": {round(2.0 + front, 2)}, "dispatch": {round(3.0 + front, 2)}, '
            f'"issue": {issue}, {complete}"retire": {retire}}}', execute)


def _mem_block(kind: str, accesses: int, sim: Sim, latency: float, env: Env,
               rng: random.Random) -> str:
    j = _jitter(rng, sim.exact)
    l1d = _rate(accesses, sim.l1d, j)
    l2 = min(l1d, _rate(accesses, sim.l2, j))
    j2 = _jitter(rng, sim.exact)
    counts = {
        "accesses": accesses, "l1d_miss": l1d, "l2_miss": l2,
        "llc_miss": min(l2, _rate(accesses, sim.llc, j)),
        "tlb_miss": _rate(accesses, sim.tlb, j2),
        "store_forwarded": _rate(accesses, sim.fwd, j2),
    }
    fields = "".join(f', "{name}": {counts[name]}' for name in env.mem_fields
                     if name not in sim.unreported)
    if "avg_latency" not in sim.unreported:
        fields += f', "avg_latency": {latency}'
    return f'"mem": {{"kind": "{kind}"{fields}}}'


@dataclass
class Agg:
    """One PC's records summed over loops, as docs/formats.md §2 aggregates them."""

    asm: str = ""
    iterations: int = 0
    executed: int = 0
    taken: int = 0
    mispredicted: int = 0
    accesses: int = 0
    l1d: int = 0
    tlb: int = 0
    forwarded: int = 0
    latency_sum: float = 0.0   # avg_latency weighted by accesses
    wait_sum: float = 0.0      # (issue - dispatch) weighted by iterations
    execute_sum: float = 0.0   # (complete - issue) weighted by iterations

    def add(self, rec: dict, asm: str) -> None:
        self.asm = asm
        it = rec["iterations"]
        self.iterations += it
        st = rec["stages"]
        self.wait_sum += (st["issue"] - st["dispatch"]) * it
        self.execute_sum += (st.get("complete", st["issue"]) - st["issue"]) * it
        br = rec.get("branch")
        if br:
            self.executed += br.get("executed", 0)
            self.taken += br.get("taken", 0)
            self.mispredicted += br.get("mispredicted", 0)
        m = rec.get("mem")
        if m:
            self.accesses += m["accesses"]
            self.l1d += m.get("l1d_miss", 0)
            self.tlb += m.get("tlb_miss", 0)
            self.forwarded += m.get("store_forwarded", 0)
            # without avg_latency, the stages' execute latency is the access latency
            latency = m.get("avg_latency", st.get("complete", st["issue"]) - st["issue"])
            self.latency_sum += latency * m["accesses"]

    @property
    def mnemonic(self) -> str:
        return self.asm.split(" ", 1)[0]

    @staticmethod
    def _ratio(a: float, b: float) -> float:
        return a / b if b else 0.0

    @property
    def mispredict_rate(self) -> float:
        return self._ratio(self.mispredicted, self.executed)

    @property
    def taken_rate(self) -> float:
        return self._ratio(self.taken, self.executed)

    @property
    def l1d_rate(self) -> float:
        return self._ratio(self.l1d, self.accesses)

    @property
    def tlb_rate(self) -> float:
        return self._ratio(self.tlb, self.accesses)

    @property
    def forward_rate(self) -> float:
        return self._ratio(self.forwarded, self.accesses)

    @property
    def latency(self) -> float:
        return self._ratio(self.latency_sum, self.accesses)

    @property
    def issue_wait(self) -> float:
        return self._ratio(self.wait_sum, self.iterations)

    @property
    def execute(self) -> float:
        return self._ratio(self.execute_sum, self.iterations)

    @property
    def per_iteration(self) -> float:
        """Executions (branch) or accesses (memory op) per loop iteration."""
        return self._ratio(self.executed or self.accesses, self.iterations)
