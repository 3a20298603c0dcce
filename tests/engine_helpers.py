"""Shared inputs for the engine tests: a hand-written mini workload and small generated sets."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from pcscope.core.backends.registry import backend_for
from pcscope.core.engine.events import EventBus
from pcscope.core.engine.orchestrator import Orchestrator, RunResult
from pcscope.core.engine.presets import Settings, resolve
from pcscope.core.engine.session_store import SessionStore
from pcscope.index.store import open_workload
from pcscope.samples import guides

ROOT = Path(__file__).resolve().parent.parent
GUIDES = [str(p) for p in guides()]
BZIP2 = Path("/work/shared/corpus/real/bzip2/profile.csv.gz")

# Three windows: a hot load/compare loop, a dispatch with a mispredicting blr (ALP), an
# exclusive pair without ALP, and a cold division.
MINI_PROFILE = """\
function,window,pc,samples,asm
<unknown_01>,w1,0x1000,820000,"ldr x4, [x0]"
<unknown_01>,w1,0x1004,818000,"cmp x4, #0"
<unknown_01>,w1,0x1008,818000,b.eq 0x1000
runtime_dispatch,w2,0x2000,510000,"ldr x3, [x1, #16]"
runtime_dispatch,w2,0x2004,509000,blr x3
runtime_dispatch,w2,0x2008,12000,"add x0, x0, #1"
<unknown_02>,w3,0x3000,122000,"ldaxr w5, [x2]"
<unknown_02>,w3,0x3004,121000,"add w5, w5, #1"
<unknown_02>,w3,0x3008,120000,"stlxr w6, w5, [x2]"
<unknown_02>,w3,0x300c,120000,"cbnz w6, 0x3000"
cold_math,w4,0x4000,10,"udiv x1, x2, x3"
cold_math,w4,0x4004,10,ret
"""

MINI_ALP = [
    {"loop": "L1", "pc": "0x2000", "iterations": 120000,
     "stages": {"fetch": 0, "dispatch": 3, "issue": 4, "complete": 8.1, "retire": 12},
     "mem": {"kind": "load", "accesses": 120000, "l1d_miss": 900, "l2_miss": 40,
             "llc_miss": 2, "tlb_miss": 0, "avg_latency": 4.3, "store_forwarded": 0}},
    {"loop": "L1", "pc": "0x2004", "iterations": 120000,
     "stages": {"fetch": 0, "dispatch": 3, "issue": 5.5, "complete": 9, "retire": 12.5},
     "branch": {"kind": "indirect_call", "executed": 120000, "taken": 120000,
                "mispredicted": 27600}},
    {"loop": "L1", "pc": "0x2008", "iterations": 120000,
     "stages": {"fetch": 0, "dispatch": 3, "issue": 4, "complete": 5, "retire": 13}},
]


def write_mini(folder: Path) -> tuple[Path, Path]:
    folder.mkdir(parents=True, exist_ok=True)
    profile = folder / "profile.csv"
    profile.write_text(MINI_PROFILE, encoding="utf-8")
    alp = folder / "alp.jsonl"
    alp.write_text("".join(json.dumps(r) + "\n" for r in MINI_ALP), encoding="utf-8")
    return profile, alp


def mini_workload(folder: Path, *, alp: bool = True, guides: bool = True):
    profile, alp_path = write_mini(folder / "mini")
    return open_workload(profile, alp=alp_path if alp else None,
                         guides=GUIDES if guides else (), index_dir=folder / "idx")


def generated(folder: Path, kind: str = "planted", seed: int = 3):
    """A generated set (profile, ALP, truth) and its workload."""
    from pcscope.samples.generate import Options, generate

    out = folder / f"{kind}-{seed}"
    if not (out / "truth.json").exists():
        generate(Options(kind, seed, out))
    workload = open_workload(out / "profile.csv.gz", alp=out / "alp.jsonl.gz", guides=GUIDES,
                             index_dir=folder / "idx")
    truth = json.loads((out / "truth.json").read_text(encoding="utf-8"))
    return workload, truth


def settings(**overrides) -> Settings:
    base = {"max_calls": 100_000, "max_tokens": 10**12, "max_seconds": 600.0}
    return resolve("standard", {**base, **overrides})


def run(workload, model: str = "offline", *, session: Path, bus: EventBus | None = None,
        hints=(), resume: bool = False, backend=None, selection=None,
        **overrides) -> RunResult:
    with SessionStore(session) as store:
        orchestrator = Orchestrator(workload, backend or backend_for(model), settings(**overrides),
                                    store, bus=bus, hints=hints, resume=resume,
                                    selection=selection)
        return asyncio.run(orchestrator.run())
