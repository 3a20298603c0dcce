"""Real-program benchmark (issue 12): the offline analyst on every real corpus profile
(../shared/corpus/real, exact counts: ``--counts executions``).

Per profile it prints the ideas (category, title, own share of the cited mechanism) and
the mechanisms above 0.1%, and checks:
- no false spin-wait (single-threaded programs), byte loop or pointer chase: every such
  idea's mechanism passed its shape checks, and no spin-wait appears at all;
- at most ~12 ideas, each citing a distinct mechanism;
- each mechanism's share equals the sum over its sites' instructions (each once).

    python -m bench.real_bench [--json]
"""

from __future__ import annotations

import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from pcscope.core.backends.registry import backend_for
from pcscope.core.engine.orchestrator import Orchestrator
from pcscope.core.engine.presets import resolve
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.mechanisms import number
from pcscope.index.store import open_workload
from pcscope.samples import guides

REAL = Path(__file__).resolve().parents[2] / "shared" / "corpus" / "real"
MAX_IDEAS = 12
SHAPED = {"spin-wait": "spin-wait", "vectorization": ("byte-loop", "byte-compare", "table-crc"),
          "dependent-load": "pointer-chase"}


def one(profile: Path, work: Path) -> dict:
    start = time.perf_counter()
    workload = open_workload(profile, guides=[str(p) for p in guides()],
                             index_dir=work / "idx", counts="executions")
    indexed = time.perf_counter() - start
    with SessionStore(work / f"{profile.parent.name}.sqlite") as session:
        result = asyncio.run(Orchestrator(workload, backend_for("offline"), resolve("standard", {}),
                                          session).run())
    table = workload.mechanisms
    problems = []
    cited = []
    ideas = []
    for idea in result.ideas:
        mechs = [e for e in idea.evidence if e.startswith("mech:")]
        cited += mechs
        kinds = {table.get(m).kind for m in mechs if table.get(m)}
        shaped = SHAPED.get(idea.category)
        if shaped and idea.basis != "measured":
            wanted = (shaped,) if isinstance(shaped, str) else shaped
            if not kinds & set(wanted):
                problems.append(f"{idea.category} idea without a shape-checked mechanism: "
                                f"{idea.title}")
        share = max((table.get(m).share for m in mechs if table.get(m)), default=0.0)
        ideas.append({"category": idea.category, "title": idea.title, "mechanisms": mechs,
                      "own_share": round(share, 4), "confidence": idea.confidence})
    if workload.patterns.counts()["spin-wait"] or [m for m in table if m.kind == "spin-wait"]:
        problems.append("spin-wait found in a single-threaded program")
    if len(result.ideas) > MAX_IDEAS:
        problems.append(f"{len(result.ideas)} ideas (> {MAX_IDEAS})")
    if len(cited) != len(set(cited)):
        problems.append("a mechanism is cited by two ideas")
    profile_data = workload.profile
    for m in table:
        rows = [profile_data.row_of(pc) for pc in m.pcs]
        summed = float(profile_data.value[rows].sum()) / profile_data.total
        if abs(summed - m.share) > 1e-9:
            problems.append(f"{m.id}: share {m.share} != sum over sites {summed}")
    return {"profile": profile.parent.name, "index_s": round(indexed, 2),
            "analysis_s": round(time.perf_counter() - start - indexed, 2),
            "ideas": ideas, "mechanisms": len(table),
            "top_mechanisms": [{"id": m.id, "share": round(m.share, 4), "sites": len(m.sites),
                                "metrics": {x.name: x.value for x in m.metrics}}
                               for m in table if m.share >= 0.001],
            "problems": problems}


def main(argv: list[str]) -> int:
    profiles = sorted(REAL.glob("*/profile.csv.gz"))
    if not profiles:
        print(f"no real corpus at {REAL}: skipped")
        return 0
    with tempfile.TemporaryDirectory() as tmp:
        results = [one(p, Path(tmp)) for p in profiles]
    if "--json" in argv:
        print(json.dumps(results, indent=1))
    else:
        for r in results:
            print(f"\n-- {r['profile']}: {len(r['ideas'])} ideas, {r['mechanisms']} mechanisms "
                  f"(index {r['index_s']} s, analysis {r['analysis_s']} s)")
            for i in r["ideas"]:
                print(f"  idea  {i['category']:16} own {i['own_share']:7.2%}  conf "
                      f"{i['confidence']:.2f}  {i['title']}")
            for m in r["top_mechanisms"]:
                figures = ", ".join(f"{k} {number(v)}" for k, v in m["metrics"].items())
                print(f"  mech  {m['id']:<38} {m['share']:7.2%}  {m['sites']:>4} site(s)  "
                      f"{figures}")
            for p in r["problems"]:
                print(f"  PROBLEM {p}")
        bad = sum(len(r["problems"]) for r in results)
        print(f"\nreal: {len(results)} profiles, {sum(len(r['ideas']) for r in results)} ideas, "
              f"false spin-waits/byte loops/chases and other problems: {bad} (target 0)")
    return 1 if any(r["problems"] for r in results) else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
