"""Each measured rule reads every ALP field that can carry its signal (issue 12, item 4).

Every case below leaves out, or keeps healthy, the field the rule read first (the one the
default generator variant uses), so a rule that goes back to reading one field fails here;
its look-alike has the same fields with healthy values and must stay quiet. The fields a
rule read are recorded in the detection's checks, and the claim names them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pytest

from pcscope.core.alp import AlpRecord, BranchStats, MemStats
from pcscope.core.backends.detectors import Insn, WindowView, detect

COUNTS = ("executed", "taken", "mispredicted")
MEM = ("accesses", "l1d_miss", "l2_miss", "llc_miss", "tlb_miss", "store_forwarded",
       "avg_latency")


def record(iterations: int = 1000, wait: float | None = 1.0, execute: float | None = 1.0,
           branch: dict | None = None, mem: dict | None = None) -> dict:
    """An aggregated ALP record as the ``alp`` tool renders it: issue wait and execute
    latency become stages (None leaves the stage out)."""
    stages = {"fetch": 0.0, "dispatch": 3.0}
    if wait is not None:
        stages["issue"] = 3.0 + wait
        if execute is not None:
            stages["complete"] = stages["issue"] + execute
    b = m = None
    if branch is not None:
        b = BranchStats(branch.get("kind", "conditional"), *(branch.get(k) for k in COUNTS))
    if mem is not None:
        m = MemStats(mem.get("kind", "load"), *(mem.get(k) for k in MEM))
    return AlpRecord(0, None, iterations, [], stages, b, m, True).to_json()


def window(*rows: tuple[int, str, dict | None], marked: dict[int, str] | None = None
           ) -> WindowView:
    """``marked``: the pattern the index's shape checks confirmed at a PC."""
    marked = marked or {}
    return WindowView("win:0x1000", "fn", 0.2, [
        Insn.of({"pc": pc, "asm": asm, "share": 0.05,
                 "patterns": [marked[pc]] if pc in marked else []}, alp)
        for pc, asm, alp in rows])


@dataclass(frozen=True)
class Case:
    rule: str
    field: str  # what the checks and the figures must name
    bad: Callable[[], WindowView]  # a fresh view each time: detect() marks what it explained
    healthy: Callable[[], WindowView]


def _barrier(dmb_execute: float, load_wait: float) -> WindowView:
    return window(
        (0x1000, "str x1, [x2]", record(mem={"kind": "store", "accesses": 1000,
                                             "avg_latency": 40.0})),
        (0x1004, "dmb ish", record(wait=1.0, execute=dmb_execute)),
        (0x1008, "ldr x3, [x4, #8]", record(wait=load_wait, execute=4.0,
                                            mem={"accesses": 1000, "l1d_miss": 1,
                                                 "avg_latency": 4.0})))


def _spin(taken: int) -> WindowView:
    # its own ALP loop: the poll load runs once per iteration, the back-edge carries it
    n = 100_000
    return window(
        (0x1000, "ldr w1, [x0]", record(n, mem={"accesses": n, "l1d_miss": 10,
                                                "avg_latency": 4.0})),
        (0x1004, "cmp w1, #0", record(n)),
        (0x1008, "b.ne 0x1000", record(n, branch={"executed": n, "taken": taken,
                                                  "mispredicted": 5})), marked={0x1008: "spin-wait"})


def _llsc(attempts: float) -> WindowView:
    n = round(1000 * attempts)
    pair = {"kind": "atomic", "accesses": n, "l1d_miss": 0, "avg_latency": 5.0}
    return window(
        (0x1000, "ldaxr w5, [x2]", record(mem=pair)),
        (0x1004, "add w5, w5, #1", record()),
        (0x1008, "stlxr w6, w5, [x2]", record(mem=pair)),
        # the failure branch's taken count is not reported
        (0x100c, "cbnz w6, 0x1000", record(branch={"executed": n, "mispredicted": 3})))


def _divide(consumer_wait: float) -> WindowView:
    return window(  # no complete stage for the divide: its consumer carries the latency
        (0x1000, "udiv x1, x2, x3", record(wait=2.0, execute=None)),
        (0x1004, "msub x4, x1, x3, x2", record(wait=consumer_wait, execute=3.0)))


def _fp(execute: float) -> WindowView:
    return window(  # issues at once, waits for the accumulator while executing
        (0x1000, "fmadd d0, d1, d2, d0", record(wait=1.0, execute=execute)),
        (0x1004, "fmadd d0, d3, d4, d0", record(wait=1.0, execute=execute)),
        (0x1008, "subs x5, x5, #1", record()),
        (0x100c, "b.ne 0x1000", record(branch={"executed": 1000, "taken": 990,
                                               "mispredicted": 1})))


def _chase(l2: int, execute: float) -> WindowView:
    node = record(wait=1.0, execute=execute, mem={"accesses": 1000, "l2_miss": l2})
    return window(  # no L1D count and no avg_latency: L2 misses and execute latency
        (0x1000, "ldr x2, [x1, #0x10]", node),
        (0x1004, "cmp x2, x3", record()),
        (0x1008, "ldr x1, [x1, #8]", node),
        (0x100c, "cbnz x1, 0x1000", record(branch={"executed": 1000, "taken": 999,
                                                   "mispredicted": 1})),
        marked={0x1008: "dependent-load"})


def _stream(l2: int, execute: float) -> WindowView:
    return window(
        (0x1000, "ldr q0, [x2], #0x10", record(wait=1.0, execute=execute,
                                              mem={"accesses": 1000, "l2_miss": l2,
                                                   "llc_miss": l2 // 2})),
        (0x1004, "subs x5, x5, #1", record()),
        (0x1008, "b.ne 0x1000", record(branch={"executed": 1000, "taken": 999,
                                               "mispredicted": 1})))


def _far_atomic(execute: float) -> WindowView:
    return window(  # no L1D misses and no avg_latency: the execute latency carries it
        (0x1000, "ldadd w1, w2, [x3]", record(wait=1.0, execute=execute,
                                              mem={"kind": "atomic", "accesses": 1000,
                                                   "l1d_miss": 2})))


def _forward(latency: float) -> WindowView:
    return window(  # no forwarding count: the latency of a load that hits L1D shows it
        (0x1000, "str w1, [x2, #8]", record(mem={"kind": "store", "accesses": 1000,
                                                 "avg_latency": 1.0})),
        (0x1004, "ldr x3, [x2, #8]", record(mem={"accesses": 1000, "l1d_miss": 1,
                                                 "avg_latency": latency})))


def _branch(asm: str, kind: str, mispredicted: int) -> WindowView:
    return window(  # mispredict counts without an executed count
        (0x1000, "ldr x1, [x0, #16]", record(mem={"accesses": 1000, "l1d_miss": 1,
                                                  "avg_latency": 4.0})),
        (0x1004, asm, record(branch={"kind": kind, "taken": 500,
                                     "mispredicted": mispredicted})))


CASES = {
    "barrier: its execute latency": Case("barrier-wait", "execute latency",
                                         lambda: _barrier(30.0, 1.0), lambda: _barrier(2.0, 1.0)),
    "barrier: the next memory op's issue wait": Case(
        "barrier-wait", "issue wait of the next memory op", lambda: _barrier(2.0, 30.0),
        lambda: _barrier(2.0, 2.0)),
    "spin: a ~100%-taken back-edge": Case("spin-poll", "1 / (1 - taken rate)",
                                          lambda: _spin(99_000), lambda: _spin(1_000)),
    "LL/SC: pair executions per loop entry": Case(
        "llsc-retry", "store-exclusive executions", lambda: _llsc(4.0), lambda: _llsc(1.01)),
    "divide: its consumer's issue wait": Case("slow-divide", "issue wait of its consumer",
                                              lambda: _divide(30.0), lambda: _divide(9.0)),
    "FP chain: execute latency": Case("fp-chain", "execute latency", lambda: _fp(14.0),
                                      lambda: _fp(5.0)),
    "pointer chase: L2 misses and execute latency": Case(
        "pointer-chase", "mem.l2_miss", lambda: _chase(300, 60.0), lambda: _chase(0, 4.0)),
    "streaming miss: LLC/L2 misses": Case("stream-miss", "mem.l2_miss", lambda: _stream(300, 40.0),
                                          lambda: _stream(0, 4.0)),
    "atomic: latency without L1D misses": Case(
        "atomic-contention", "execute latency", lambda: _far_atomic(120.0),
        lambda: _far_atomic(8.0)),
    "store forwarding: latency without a forwarding count": Case(
        "forwarding-fail", "mem.avg_latency", lambda: _forward(18.0), lambda: _forward(4.5)),
    "indirect branch: mispredicts per iteration": Case(
        "indirect-mispredict", "mispredicted / iterations",
        lambda: _branch("br x1", "indirect", 250), lambda: _branch("br x1", "indirect", 3)),
    "conditional branch: mispredicts per iteration": Case(
        "conditional-mispredict", "mispredicted / iterations",
        lambda: _branch("cbz x1, 0x1000", "conditional", 250),
        lambda: _branch("cbz x1, 0x1000", "conditional", 3)),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_rule_fires_from_its_other_field_and_says_so(case: Case) -> None:
    detections = detect(case.bad())
    found = [d for d in detections if d.rule == case.rule]
    assert found, f"{case.rule} missed: {[d.rule for d in detections]}"
    det = found[0]
    assert det.measured
    fired = [c for c in det.checks if case.field in c and "fires" in c]
    assert fired, det.checks
    assert case.field in det.figures


def test_a_load_without_a_forwarding_count_says_so() -> None:
    det = next(d for d in detect(_forward(18.0)) if d.rule == "forwarding-fail")
    assert "no forwarding count" in det.figures


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_the_look_alike_with_the_same_fields_stays_quiet(case: Case) -> None:
    assert not [d for d in detect(case.healthy()) if d.measured]


def test_checks_list_every_field_read_also_the_quiet_ones() -> None:
    det = next(d for d in detect(_barrier(30.0, 1.0)) if d.rule == "barrier-wait")
    assert len(det.checks) == 3  # its issue wait, its execute latency, the next op's wait
    assert sum("quiet" in c for c in det.checks) == 2


def test_a_spin_that_never_exits_in_the_slice_counts_every_poll() -> None:
    det = next(d for d in detect(_spin(100_000)) if d.rule == "spin-poll")
    assert "no exit seen" in det.figures


def test_an_out_of_line_cbnz_retries_when_taken() -> None:
    """`cbnz` jumps to the retry whichever way it points; 40% taken is 40% retries."""
    view = window(
        (0x1000, "ldaxr w5, [x2]", record(mem={"kind": "atomic", "accesses": 1000,
                                               "l1d_miss": 0, "avg_latency": 5.0})),
        (0x1004, "stlxr w6, w5, [x2]", record(mem={"kind": "atomic", "accesses": 1000,
                                                   "l1d_miss": 0, "avg_latency": 3.0})),
        (0x1008, "cbnz w6, 0x2000", record(branch={"executed": 1000, "taken": 400,
                                                   "mispredicted": 3})))
    det = next(d for d in detect(view) if d.rule == "llsc-retry")
    assert "40.0% of attempts" in det.figures
