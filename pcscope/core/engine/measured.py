"""Measured costs the planner can see before any call: which ALP figures at a window's PCs
say "worth a look", as idea categories, and how far past its threshold each one is.

A window that no mechanism and no pattern explains may still show a cost the simulator
measured — mispredicting branches, missing loads, DTLB misses, loads that fail to forward,
instructions waiting to issue (FP ones, or FP ones executing long: an accumulation chain).
Each cost is read from every field that can carry it, as the analyst's rules read them
(pcscope.core.backends.rules): mispredicts per execution or per iteration, L1D misses or
else L2/LLC misses, the average latency or else the execute latency, a forwarding count or
else the latency of an L1-hitting load; a slow memory operation that misses nothing is an
atomic executed far away (or a load whose misses are not counted). The planner ranks such
a window by that category's penalty instead of the unexplained one, and the hottest window
of each measured category gets a call like any category. The thresholds are deliberately
low (a look, not an idea: the analyst decides); read column by column, so a 200k-PC ALP
costs milliseconds.

Each figure is kept as its ratio to its threshold (0 where the rule's other conditions
fail), so a PC is flagged for a category when its ratio is ≥ 1, and its **severity** is the
largest ratio of the categories it is flagged for: a barrier waiting 150 cycles to issue is
15 times past the 10-cycle threshold, a background load waiting 12 only 1.2 times. A flagged
PC's measured cost is its own share × (severity − 1): what its figures add to its count.
A window's or a mechanism's is the sum over its flagged PCs, so a small window with a severe
figure ranks by what it costs, while a figure just past its threshold adds little, and the
addition never exceeds what the flagged instructions' own shares scale to.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from pcscope.core import isa
from pcscope.core.alp import BRANCH_KINDS, MEM_COUNTS, STAGES, AlpRecord
from pcscope.core.alp_columns import ABSENT, AlpRecords
from pcscope.core.workload import Workload

MISPREDICT = 0.05  # mispredicted / executed of a branch
L1D_MISS = 0.10  # L1D misses / accesses
TLB_MISS = 0.01  # DTLB misses / accesses
FORWARD_FAIL = 0.5  # a load forwarding from a store on fewer than this share of accesses...
FORWARD_LATENCY = 10.0  # ...with at least this average latency (cycles)
ISSUE_WAIT = 10.0  # issue - dispatch, cycles
FAR_LATENCY = 40.0  # cycles: a load or atomic this slow without misses is no forwarding wait
FP_EXECUTE = 8.0  # complete - issue of an FP op: twice an FMA's own, inputs waited for
_INDIRECT = (BRANCH_KINDS.index("indirect"), BRANCH_KINDS.index("indirect_call"))
_CONDITIONAL = BRANCH_KINDS.index("conditional")


@dataclass(frozen=True)
class Measured:
    """What the ALP shows before any call, for the windows asked about and every PC."""

    categories: dict[int, tuple[str, ...]]  # per window with a flagged PC
    window_cost: dict[int, float]  # per such window: its flagged PCs' cost, a share
    pc_cost: dict[int, float]  # per flagged PC of the profile: its cost, a share

    def cost_of(self, pcs: Iterable[int]) -> float:
        """The summed cost of ``pcs`` (a mechanism's sites)."""
        if not self.pc_cost:  # no ALP: nothing to look up
            return 0.0
        return sum(self.pc_cost.get(pc, 0.0) for pc in pcs)


def measured(workload: Workload, windows: list[int]) -> Measured:
    """Per window of ``windows`` with a measured cost at one of its sampled PCs: the
    categories of those costs and their measured cost; the cost of every flagged PC."""
    table = workload.alp
    if table is None:
        return Measured({}, {}, {})
    records = table.records
    if isinstance(records, AlpRecords):
        pcs, past = _from_columns(records)
    else:
        pcs, past = _from_records(records.values())
    profile = workload.profile
    rows = np.searchsorted(profile.pc, pcs)
    inside = rows < len(profile.pc)
    inside[inside] = profile.pc[rows[inside]] == pcs[inside]
    inside[inside] = profile.value[rows[inside]] > 0
    window_of = np.full(len(pcs), -1, dtype=np.int64)
    window_of[inside] = profile.window[rows[inside]]
    # an FP instruction waiting to issue is the mark of an accumulation chain
    fp_mnemonic = np.asarray([m.startswith("f") for m in profile.mnemonics] + [False])
    fp = np.zeros(len(pcs), dtype=bool)
    fp[inside] = fp_mnemonic[profile.mnemonic[rows[inside]]]
    past["fp-dependency"] = np.where(fp, np.maximum(past["other"], past.pop("late")), 0.0)
    # a slow memory operation that misses nothing: an atomic executed far away (another
    # core's line), or a load whose misses the record does not count
    atomic_mnemonic = np.asarray([isa.is_atomic(m) for m in profile.mnemonics] + [False])
    atomic = np.zeros(len(pcs), dtype=bool)
    atomic[inside] = atomic_mnemonic[profile.mnemonic[rows[inside]]]
    far = past.pop("far")
    past["atomic-contention"] = np.where(atomic, far, 0.0)
    past["cache-miss"] = np.maximum(past["cache-miss"], np.where(atomic, 0.0, far))
    flags = {category: (ratio >= 1) & inside for category, ratio in past.items()}
    severity = np.ones(len(pcs))
    for category, flag in flags.items():
        severity[flag] = np.maximum(severity[flag], past[category][flag])
    flagged = np.logical_or.reduce(list(flags.values()))
    cost = np.zeros(len(pcs))
    if profile.total:
        cost[flagged] = profile.value[rows[flagged]] * (severity[flagged] - 1) / profile.total
    wanted = np.zeros(len(profile.windows), dtype=bool)
    wanted[windows] = True
    found: dict[int, list[str]] = {}
    for category, flag in flags.items():
        hit = np.zeros(len(profile.windows), dtype=bool)
        hit[window_of[flag]] = True
        for w in np.flatnonzero(hit & wanted).tolist():
            found.setdefault(w, []).append(category)
    per_window = np.bincount(window_of[flagged], weights=cost[flagged],
                             minlength=len(profile.windows))
    return Measured(categories={w: tuple(c) for w, c in found.items()},
                    window_cost={w: float(per_window[w]) for w in found},
                    pc_cost=dict(zip(pcs[flagged].tolist(), cost[flagged].tolist(),
                                     strict=True)))


def _from_columns(records: AlpRecords) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Per PC and raw cost: how far past its threshold the figure is (0 where the rule's
    other conditions fail)."""
    c = records.columns
    kind = c.branch_kind
    executed, mispredicted = c.branch[:, 0], c.branch[:, 2]
    # mispredicts per execution; a record without `executed`, per loop iteration
    runs = np.where(executed > 0, executed, np.maximum(c.iterations, 0))
    branch = (kind != ABSENT) & (runs > 0) & (mispredicted >= 0)
    rate = np.where(branch, mispredicted / np.maximum(runs, 1), 0.0)
    mem = c.mem
    accesses = mem[:, MEM_COUNTS.index("accesses")]
    has_mem = (c.mem_kind != ABSENT) & (accesses > 0)

    def per_access(name: str) -> np.ndarray:
        count = mem[:, MEM_COUNTS.index(name)]
        return np.where(has_mem & (count >= 0), count / np.maximum(accesses, 1), np.nan)

    forwarded = per_access("store_forwarded")
    # misses: the L1D rate, else the higher of the L2/LLC rates (each missed L1D first)
    l1d = per_access("l1d_miss")
    misses = np.where(np.isnan(l1d), np.fmax(per_access("l2_miss"), per_access("llc_miss")), l1d)
    misses = np.nan_to_num(misses)
    execute = c.stages[:, STAGES.index("complete")] - c.stages[:, STAGES.index("issue")]
    latency = np.nan_to_num(np.where(np.isnan(c.avg_latency), execute, c.avg_latency), nan=0.0)
    wait = c.stages[:, STAGES.index("issue")] - c.stages[:, STAGES.index("dispatch")]
    forward_uncounted = np.isnan(forwarded) & has_mem & (misses < L1D_MISS) & \
        (latency < FAR_LATENCY)
    forward_failed = ((forwarded > 0) & (forwarded < FORWARD_FAIL)) | forward_uncounted
    past = {
        "branch-mispredict": np.where(kind == _CONDITIONAL, rate / MISPREDICT, 0.0),
        "indirect-branch": np.where(np.isin(kind, _INDIRECT), rate / MISPREDICT, 0.0),
        "cache-miss": misses / L1D_MISS,
        "tlb-miss": np.nan_to_num(per_access("tlb_miss")) / TLB_MISS,
        "store-forwarding": np.where(forward_failed, latency / FORWARD_LATENCY, 0.0),
        "other": np.nan_to_num(wait) / ISSUE_WAIT,
        "late": np.nan_to_num(execute) / FP_EXECUTE,
        "far": np.where(has_mem & (misses < L1D_MISS), latency / FAR_LATENCY, 0.0),
    }
    return np.asarray(c.pcs, dtype=np.uint64), past


def _from_records(records: Iterable[AlpRecord]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The same ratios from records (a table read without columns, e.g. a trimmed one)."""
    listed = list(records)
    past = {name: np.zeros(len(listed)) for name in (
        "branch-mispredict", "indirect-branch", "cache-miss", "tlb-miss", "store-forwarding",
        "other", "late", "far")}
    for i, r in enumerate(listed):
        b, m = r.branch, r.mem
        runs = b.executed or r.iterations if b is not None else 0
        if b is not None and runs:
            rate = (b.mispredicted or 0) / runs / MISPREDICT
            if b.kind in ("indirect", "indirect_call"):
                past["indirect-branch"][i] = rate
            elif b.kind == "conditional":
                past["branch-mispredict"][i] = rate
        if m is not None:
            l1d = m.l1d_miss_rate
            misses = l1d if l1d is not None else max(m.l2_miss_rate or 0, m.llc_miss_rate or 0)
            latency = m.avg_latency if m.avg_latency is not None else r.execute_latency or 0
            forwarded = m.store_forward_rate
            past["cache-miss"][i] = misses / L1D_MISS
            past["tlb-miss"][i] = (m.tlb_miss_rate or 0) / TLB_MISS
            if (forwarded is not None and 0 < forwarded < FORWARD_FAIL) or (
                    forwarded is None and bool(m.accesses) and misses < L1D_MISS
                    and latency < FAR_LATENCY):
                past["store-forwarding"][i] = latency / FORWARD_LATENCY
            if m.accesses and misses < L1D_MISS:
                past["far"][i] = latency / FAR_LATENCY
        past["other"][i] = (r.issue_wait or 0) / ISSUE_WAIT
        past["late"][i] = (r.execute_latency or 0) / FP_EXECUTE
    return np.asarray([r.pc for r in listed], dtype=np.uint64), past
