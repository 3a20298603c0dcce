"""The planner ranks a candidate by the cost its evidence shows, not only by its share: a
flagged PC adds its share × (how far past its threshold the figure is − 1). A small window
whose loads all miss is planned before larger ones; a figure just past its threshold does
not let a small window displace a larger one."""

from __future__ import annotations

import json
from pathlib import Path

from pcscope.core.engine.candidates import candidates, plan
from pcscope.core.ids import win_id
from pcscope.index.store import open_workload

BODY = ["ldr x1, [x2, #8]", "add x0, x0, x1", "eor x3, x3, x0", "ret"]


def _workload(folder: Path, windows: dict[str, tuple[int, float | None]]):
    """One 4-instruction window per name: (count of each instruction, L1D miss rate of
    its load, or None for a load the simulator did not see)."""
    lines = ["function,window,pc,samples,asm"]
    records = []
    for n, (name, (count, misses)) in enumerate(windows.items()):
        base = 0x10000 + n * 0x100
        lines += [f'{name},{name},{hex(base + 4 * i)},{count},"{asm}"'
                  for i, asm in enumerate(BODY)]
        if misses is not None:
            records.append({"loop": f"L{n}", "pc": hex(base), "iterations": 1000,
                            "stages": {"fetch": 0, "dispatch": 3, "issue": 4,
                                       "complete": 4 + 150 * misses + 4, "retire": 160},
                            "mem": {"kind": "load", "accesses": 1000,
                                    "l1d_miss": round(1000 * misses), "l2_miss": 0,
                                    "llc_miss": 0, "tlb_miss": 0, "store_forwarded": 0,
                                    "avg_latency": 4 + 150 * misses}})
    folder.mkdir()
    (folder / "profile.csv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    (folder / "alp.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records),
                                      encoding="utf-8")
    return open_workload(folder / "profile.csv", alp=folder / "alp.jsonl",
                         index_dir=folder / "idx")


def _ids(windows: dict) -> list[str]:
    return [win_id(0x10000 + n * 0x100) for n in range(len(windows))]


def test_a_small_window_with_a_severe_measured_cost_is_planned_first(tmp_path):
    # by share × penalty alone `mild` (2.5x the share) and `healthy` (4x, unexplained) come
    # first; every load of `severe` misses L1D (10 times the 10 % threshold)
    spec = {"severe": (1000, 1.0), "mild": (2500, 0.11), "healthy": (4000, None)}
    workload = _workload(tmp_path / "w", spec)
    selection = workload.hot(coverage=1.0)
    ranked = candidates(workload, selection)
    severe, mild, healthy = _ids(spec)
    order = [c.id for c in ranked]
    assert order == [severe, mild, healthy]
    first = next(c for c in ranked if c.id == severe)
    assert first.measured > first.share  # the load's cost counts, not only its count
    made = plan(workload, selection, calls=1, windows_per_call=1)
    assert made.calls[0].candidates[0].id == severe
    assert mild in {c.id for c in made.left_out}


def test_a_figure_just_past_its_threshold_does_not_displace_a_larger_window(tmp_path):
    spec = {"large": (4000, 0.11), "noisy": (3500, 0.15)}
    workload = _workload(tmp_path / "w", spec)
    selection = workload.hot(coverage=1.0)
    ranked = candidates(workload, selection)
    large, noisy = _ids(spec)
    assert [c.id for c in ranked] == [large, noisy]
    assert all(c.category == "cache-miss" for c in ranked)
    made = plan(workload, selection, calls=1, windows_per_call=1)
    assert [c.id for g in made.calls for c in g.candidates] == [large]
    assert [c.id for c in made.left_out] == [noisy]


def test_without_alp_the_ranking_is_by_share_and_penalty(tmp_path):
    spec = {"a": (1000, None), "b": (3000, None)}
    workload = _workload(tmp_path / "w", spec)
    ranked = candidates(workload, workload.hot(coverage=1.0))
    a, b = _ids(spec)
    assert [c.id for c in ranked] == [b, a]
    assert all(c.measured == 0.0 and c.score == c.share * c.penalty for c in ranked)
