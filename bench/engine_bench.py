"""Bounded-analysis engine benchmarks (issue 4).

- ``quality()``: recall and precision of the offline analyst on planted-issue sets made by
  the samples generator with seeds the rules were never tuned on (``HELD_OUT``), plus the
  bundled planted set. A planted issue is found when an idea has its category and cites its
  evidence PC. Precision counts the ideas that touch a kernel (planted or look-alike):
  right category on a planted kernel = true, anything else = false; ideas on background
  code are listed apart (and folded into ``strict_precision``). Targets: both ≥ 0.9.
- ``overhead()``: 60 scripted calls that each sleep 1 s, concurrency 8; target ≤ 1.2 × the
  ideal 8 s.
- ``speed()``: offline analysis of a 3,000-window profile with ALP (index built first and
  timed apart); target ≤ 20 s.

    python -m bench.engine_bench [quality|overhead|speed ...] [--json]
"""

from __future__ import annotations

import asyncio
import json
import math
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from pcscope.core.backends.registry import backend_for
from pcscope.core.engine.orchestrator import Orchestrator, RunResult
from pcscope.core.engine.presets import Settings, resolve
from pcscope.core.engine.session_store import SessionStore
from pcscope.index.store import open_workload
from pcscope.samples import bundled, guides
from pcscope.samples.generate import Options, generate

HELD_OUT = (101, 102, 103)  # never used while writing the rules (development used seed 3)
KINDS = ("planted", "A", "B", "C")
GUIDES = [str(p) for p in guides()]
TARGET_QUALITY = 0.9
OVERHEAD_CALLS, OVERHEAD_CONCURRENCY, OVERHEAD_SLEEP = 60, 8, 1.0
TARGET_OVERHEAD = 1.2
TARGET_SPEED_S = 20.0


def _analyse(folder: Path, work: Path, model: str, settings: Settings) -> tuple[RunResult, float]:
    alp = folder / "alp.jsonl.gz"
    workload = open_workload(folder / "profile.csv.gz", alp=alp if alp.exists() else None,
                             guides=GUIDES, index_dir=work / "idx")
    _warm(workload)
    with SessionStore(work / "session.sqlite") as session:
        orchestrator = Orchestrator(workload, backend_for(model), settings, session)
        start = time.perf_counter()
        result = asyncio.run(orchestrator.run())
        return result, time.perf_counter() - start


def _warm(workload) -> None:
    """Load the ALP and build the text index now: that is indexing, not analysis."""
    if workload.alp is None and workload.alp_path is not None:
        raise RuntimeError(f"ALP {workload.alp_path} did not load")
    workload.text.search_guides("warm", k=1)


def standard() -> Settings:
    """The default preset as an engineer runs it: at most 60 calls in all."""
    return resolve("standard", {})


# -- quality -------------------------------------------------------------------------------
def score(result: RunResult, truth: dict) -> dict:
    planted = [(t["category"], int(t["pc"], 16), {int(p, 16) for p in t["pcs"]})
               for t in truth["planted"]]
    lookalikes = [(t["category"], {int(p, 16) for p in t["pcs"]}) for t in truth["lookalikes"]]
    found = Counter()
    for category, pc, _pcs in planted:
        if any(i.category == category and pc in i.pcs for i in result.ideas):
            found[category] += 1
    true_ideas, false_ideas, background = Counter(), Counter(), Counter()
    for idea in result.ideas:
        cited = set(idea.pcs)
        on_planted = [c for c, _pc, pcs in planted if cited & pcs]
        on_lookalike = [c for c, pcs in lookalikes if cited & pcs]
        if idea.category in on_planted and not on_lookalike:
            true_ideas[idea.category] += 1
        elif on_planted or on_lookalike:
            false_ideas[idea.category] += 1
        else:
            background[idea.category] += 1
    return {"planted": Counter(c for c, _pc, _p in planted), "found": found,
            "true": true_ideas, "false": false_ideas, "background": background}


def quality(seeds: tuple[int, ...] = HELD_OUT, kinds: tuple[str, ...] = KINDS,
            with_bundled: bool = True) -> dict:
    totals = {k: Counter() for k in ("planted", "found", "true", "false", "background")}
    sets = []
    with tempfile.TemporaryDirectory(prefix="pcscope-engine-bench-") as tmp:
        root = Path(tmp)
        folders = []
        for kind in kinds:
            for seed in seeds:
                out = root / f"{kind}-{seed}"
                generate(Options(kind, seed, out))
                folders.append((f"{kind} seed {seed}", out))
        if with_bundled:
            folders.append(("bundled planted", bundled("planted").profile.parent))
        for name, folder in folders:
            work = root / ("work-" + name.replace(" ", "-"))
            work.mkdir()
            result, seconds = _analyse(folder, work, "offline", standard())
            truth = json.loads((folder / "truth.json").read_text(encoding="utf-8"))
            s = score(result, truth)
            for key in totals:
                totals[key].update(s[key])
            sets.append({"set": name, "planted": sum(s["planted"].values()),
                         "found": sum(s["found"].values()), "true": sum(s["true"].values()),
                         "false": sum(s["false"].values()),
                         "background": sum(s["background"].values()),
                         "calls": len(result.calls), "seconds": round(seconds, 2)})
    return _quality_figures(totals, sets)


def _quality_figures(totals: dict, sets: list[dict]) -> dict:
    def ratio(a: int, b: int) -> float:
        return a / b if b else 1.0

    categories = sorted(set(totals["planted"]) | set(totals["true"]) | set(totals["false"]))
    per_category = {c: {"planted": totals["planted"][c], "found": totals["found"][c],
                        "recall": round(ratio(totals["found"][c], totals["planted"][c]), 3),
                        "precision": round(ratio(totals["true"][c],
                                                 totals["true"][c] + totals["false"][c]), 3)}
                    for c in categories}
    tp, fp, bg = (sum(totals[k].values()) for k in ("true", "false", "background"))
    return {
        "recall": round(ratio(sum(totals["found"].values()), sum(totals["planted"].values())), 3),
        "precision": round(ratio(tp, tp + fp), 3),
        "strict_precision": round(ratio(tp, tp + fp + bg), 3),
        "background_ideas": dict(totals["background"]),
        "per_category": per_category,
        "sets": sets,
        "target": TARGET_QUALITY,
    }


# -- overhead ------------------------------------------------------------------------------
def overhead(calls: int = OVERHEAD_CALLS, concurrency: int = OVERHEAD_CONCURRENCY,
             sleep: float = OVERHEAD_SLEEP) -> dict:
    settings = resolve("standard", {"top": calls, "coverage": 1.0, "windows_per_slice": 1,
                                    "depth": 1, "concurrency": concurrency,
                                    "max_calls": 1_000_000, "max_tokens": 10**12})
    with tempfile.TemporaryDirectory(prefix="pcscope-engine-bench-") as tmp:
        root = Path(tmp)
        generate(Options("planted", 7, root / "set"))
        result, seconds = _analyse(root / "set", root, f"scripted:ok@{sleep:g}", settings)
    ideal = math.ceil(calls / concurrency) * sleep
    return {"calls": len(result.calls), "concurrency": concurrency, "sleep_s": sleep,
            "seconds": round(seconds, 3), "ideal_s": ideal, "ratio": round(seconds / ideal, 3),
            "target_ratio": TARGET_OVERHEAD}


# -- speed ---------------------------------------------------------------------------------
def speed(windows: int = 3000) -> dict:
    with tempfile.TemporaryDirectory(prefix="pcscope-engine-bench-") as tmp:
        root = Path(tmp)
        summary = generate(Options("C", 11, root / "set", windows=windows))
        start = time.perf_counter()
        _warm(open_workload(root / "set" / "profile.csv.gz", alp=root / "set" / "alp.jsonl.gz",
                            guides=GUIDES, index_dir=root / "idx"))
        index_s = time.perf_counter() - start
        result, seconds = _analyse(root / "set", root, "offline", standard())
    return {"windows": summary.windows, "hot_windows": summary.hot, "calls": len(result.calls),
            "ideas": len(result.ideas), "index_s": round(index_s, 2),
            "analysis_s": round(seconds, 2), "target_s": TARGET_SPEED_S}


def report_quality(q: dict) -> list[str]:
    lines = [f"offline analyst on {len(q['sets'])} planted sets (held-out seeds "
             f"{', '.join(map(str, HELD_OUT))} + bundled): recall {q['recall']:.3f}, precision "
             f"{q['precision']:.3f} (target {q['target']}), strict precision "
             f"{q['strict_precision']:.3f} (background ideas: {q['background_ideas'] or 'none'})"]
    lines += [f"  {c:<18} planted {v['planted']:>2}  found {v['found']:>2}  recall "
              f"{v['recall']:.2f}  precision {v['precision']:.2f}"
              for c, v in q["per_category"].items()]
    lines += [f"  {s['set']:<18} {s['found']}/{s['planted']} found, {s['false']} false, "
              f"{s['background']} background, {s['calls']} calls, {s['seconds']} s"
              for s in q["sets"]]
    return lines


def report_overhead(o: dict) -> list[str]:
    return [f"orchestrator overhead: {o['calls']} scripted {o['sleep_s']:g} s calls at "
            f"concurrency {o['concurrency']}: {o['seconds']} s vs ideal {o['ideal_s']:g} s "
            f"= {o['ratio']}x (target <= {o['target_ratio']}x)"]


def report_speed(s: dict) -> list[str]:
    return [f"offline analysis of a {s['windows']:,}-window profile with ALP "
            f"({s['hot_windows']} hot windows, {s['calls']} calls, {s['ideas']} ideas): "
            f"{s['analysis_s']} s (target <= {s['target_s']:g} s); indexing first took "
            f"{s['index_s']} s"]


BENCHES = {"quality": (quality, report_quality), "overhead": (overhead, report_overhead),
           "speed": (speed, report_speed)}


def main(argv: list[str] | None = None) -> int:
    """Prints each figure; ``--json`` prints the raw figures instead."""
    args = argv if argv is not None else sys.argv[1:]
    as_json = "--json" in args
    names = [a for a in args if a != "--json"] or list(BENCHES)
    for name in names:
        measure, describe = BENCHES[name]
        figures = measure()
        print(json.dumps({name: figures}) if as_json else "\n".join(describe(figures)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
