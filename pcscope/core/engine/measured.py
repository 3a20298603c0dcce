"""Measured costs the planner can see before any call: which ALP figures at a window's PCs
say "worth a look", as idea categories.

A window that no mechanism and no pattern explains may still show a cost the simulator
measured — mispredicting branches, missing loads, DTLB misses, loads that fail to forward,
instructions waiting to issue (FP ones: an accumulation chain). The planner ranks such a window by that category's penalty
instead of the unexplained one, and the hottest window of each measured category gets a call
like any category. The thresholds are deliberately low (a look, not an idea: the analyst
decides); read column by column, so a 200k-PC ALP costs milliseconds.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from pcscope.core.alp import BRANCH_KINDS, MEM_COUNTS, STAGES, AlpRecord
from pcscope.core.alp_columns import ABSENT, AlpRecords
from pcscope.core.workload import Workload

MISPREDICT = 0.05  # mispredicted / executed of a branch
L1D_MISS = 0.10  # L1D misses / accesses
TLB_MISS = 0.01  # DTLB misses / accesses
FORWARD_FAIL = 0.5  # a load forwarding from a store on fewer than this share of accesses...
FORWARD_LATENCY = 10.0  # ...with at least this average latency (cycles)
ISSUE_WAIT = 10.0  # issue - dispatch, cycles
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
    flags["fp-dependency"] = flags["other"] & fp
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
    branch = (kind != ABSENT) & (executed > 0) & (mispredicted >= 0)
    rate = np.where(branch, mispredicted / np.maximum(executed, 1), 0.0)
    mem = c.mem
    accesses = mem[:, MEM_COUNTS.index("accesses")]
    has_mem = (c.mem_kind != ABSENT) & (accesses > 0)

    def per_access(name: str) -> np.ndarray:
        count = mem[:, MEM_COUNTS.index(name)]
        return np.where(has_mem & (count >= 0), count / np.maximum(accesses, 1), np.nan)

    forwarded = per_access("store_forwarded")
    latency = np.nan_to_num(c.avg_latency, nan=0.0)
    wait = c.stages[:, STAGES.index("issue")] - c.stages[:, STAGES.index("dispatch")]
    flags = {
        "branch-mispredict": (rate >= MISPREDICT) & (kind == _CONDITIONAL),
        "indirect-branch": (rate >= MISPREDICT) & np.isin(kind, _INDIRECT),
        "cache-miss": np.nan_to_num(per_access("l1d_miss")) >= L1D_MISS,
        "tlb-miss": np.nan_to_num(per_access("tlb_miss")) >= TLB_MISS,
        "store-forwarding": (forwarded > 0) & (forwarded < FORWARD_FAIL)
                            & (latency >= FORWARD_LATENCY),
        "other": np.nan_to_num(wait) >= ISSUE_WAIT,
    }
    return np.asarray(c.pcs, dtype=np.uint64), flags


def _from_records(records: Iterable[AlpRecord]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """The same flags from records (a table read without columns, e.g. a trimmed one)."""
    listed = list(records)
    flags = {name: np.zeros(len(listed), dtype=bool) for name in (
        "branch-mispredict", "indirect-branch", "cache-miss", "tlb-miss", "store-forwarding",
        "other")}
    for i, r in enumerate(listed):
        b, m = r.branch, r.mem
        if b is not None and (b.mispredict_rate or 0) >= MISPREDICT:
            indirect = b.kind in ("indirect", "indirect_call")
            flags["indirect-branch" if indirect else "branch-mispredict"][i] = \
                indirect or b.kind == "conditional"
        if m is not None:
            flags["cache-miss"][i] = (m.l1d_miss_rate or 0) >= L1D_MISS
            flags["tlb-miss"][i] = (m.tlb_miss_rate or 0) >= TLB_MISS
            forwarded = m.store_forward_rate
            flags["store-forwarding"][i] = forwarded is not None and 0 < forwarded \
                < FORWARD_FAIL and (m.avg_latency or 0) >= FORWARD_LATENCY
        flags["other"][i] = (r.issue_wait or 0) >= ISSUE_WAIT
    return np.asarray([r.pc for r in listed], dtype=np.uint64), flags
