"""Measured costs the planner can see before any call: which ALP figures at a window's PCs
say "worth a look", as idea categories.

A window that no mechanism and no pattern explains may still show a cost the simulator
measured — mispredicting branches, missing loads, DTLB misses, loads that fail to forward,
instructions waiting to issue (FP ones, or FP ones executing long: an accumulation chain).
Each cost is read from every field that can carry it, as the analyst's rules read them
(pcscope.core.backends.rules): mispredicts per execution or per iteration, L1D misses or
else L2/LLC misses, the average latency or else the execute latency, a forwarding count or
else the latency of an L1-hitting load; a slow memory operation that misses nothing is an
atomic executed far away (or a load whose misses are not counted). The planner ranks such a window by that category's penalty
instead of the unexplained one, and the hottest window of each measured category gets a call
like any category. The thresholds are deliberately low (a look, not an idea: the analyst
decides); read column by column, so a 200k-PC ALP costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable

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


def measured_categories(workload: Workload, windows: list[int]) -> dict[int, tuple[str, ...]]:
    """Per window of ``windows`` with a measured cost at one of its sampled PCs: the
    categories of those costs."""
    table = workload.alp
    if table is None or not windows:
        return {}
    records = table.records
    if isinstance(records, AlpRecords):
        pcs, flags = _from_columns(records)
    else:
        pcs, flags = _from_records(records.values())
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
    flags["fp-dependency"] = (flags["other"] | flags.pop("late")) & fp
    # a slow memory operation that misses nothing: an atomic executed far away (another
    # core's line), or a load whose misses the record does not count
    atomic_mnemonic = np.asarray([isa.is_atomic(m) for m in profile.mnemonics] + [False])
    atomic = np.zeros(len(pcs), dtype=bool)
    atomic[inside] = atomic_mnemonic[profile.mnemonic[rows[inside]]]
    far = flags.pop("far")
    flags["atomic-contention"] = far & atomic
    flags["cache-miss"] = flags["cache-miss"] | (far & ~atomic)
    wanted = np.zeros(len(profile.windows), dtype=bool)
    wanted[windows] = True
    found: dict[int, list[str]] = {}
    for category, flag in flags.items():
        hit = np.zeros(len(profile.windows), dtype=bool)
        hit[window_of[flag & inside]] = True
        for w in np.flatnonzero(hit & wanted).tolist():
            found.setdefault(w, []).append(category)
    return {w: tuple(c) for w, c in found.items()}


def _from_columns(records: AlpRecords) -> tuple[np.ndarray, dict[str, np.ndarray]]:
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
        (latency >= FORWARD_LATENCY) & (latency < FAR_LATENCY)
    flags = {
        "branch-mispredict": (rate >= MISPREDICT) & (kind == _CONDITIONAL),
        "indirect-branch": (rate >= MISPREDICT) & np.isin(kind, _INDIRECT),
        "cache-miss": misses >= L1D_MISS,
        "tlb-miss": np.nan_to_num(per_access("tlb_miss")) >= TLB_MISS,
        "store-forwarding": ((forwarded > 0) & (forwarded < FORWARD_FAIL)
                             & (latency >= FORWARD_LATENCY)) | forward_uncounted,
        "other": np.nan_to_num(wait) >= ISSUE_WAIT,
        "late": np.nan_to_num(execute) >= FP_EXECUTE,
        "far": has_mem & (misses < L1D_MISS) & (latency >= FAR_LATENCY),
    }
    return np.asarray(c.pcs, dtype=np.uint64), flags


def _from_records(records: Iterable[AlpRecord]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The same flags from records (a table read without columns, e.g. a trimmed one)."""
    listed = list(records)
    flags = {name: np.zeros(len(listed), dtype=bool) for name in (
        "branch-mispredict", "indirect-branch", "cache-miss", "tlb-miss", "store-forwarding",
        "other", "late", "far")}
    for i, r in enumerate(listed):
        b, m = r.branch, r.mem
        runs = b.executed or r.iterations if b is not None else 0
        if b is not None and runs and (b.mispredicted or 0) / runs >= MISPREDICT:
            indirect = b.kind in ("indirect", "indirect_call")
            flags["indirect-branch" if indirect else "branch-mispredict"][i] = \
                indirect or b.kind == "conditional"
        if m is not None:
            l1d = m.l1d_miss_rate
            misses = l1d if l1d is not None else max(m.l2_miss_rate or 0, m.llc_miss_rate or 0)
            latency = m.avg_latency if m.avg_latency is not None else r.execute_latency or 0
            forwarded = m.store_forward_rate
            flags["cache-miss"][i] = misses >= L1D_MISS
            flags["tlb-miss"][i] = (m.tlb_miss_rate or 0) >= TLB_MISS
            flags["store-forwarding"][i] = latency >= FORWARD_LATENCY and (
                (forwarded is not None and 0 < forwarded < FORWARD_FAIL) or
                (forwarded is None and bool(m.accesses) and misses < L1D_MISS
                 and latency < FAR_LATENCY))
            flags["far"][i] = bool(m.accesses) and misses < L1D_MISS and latency >= FAR_LATENCY
        flags["other"][i] = (r.issue_wait or 0) >= ISSUE_WAIT
        flags["late"][i] = (r.execute_latency or 0) >= FP_EXECUTE
    return np.asarray([r.pc for r in listed], dtype=np.uint64), flags
