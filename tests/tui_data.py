"""Small, fixed inputs for the explorer's tests: a profile with known branches and hot
spots, an ALP for some of its PCs, and a guide. Every figure the tests check is stated
here, so the expectations do not come from the code under test."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

# (function, window label, pc, samples, asm)
HOT_ROWS = [
    ("main_loop", "w1", 0x1000, 4000, "LDR X4, [X0]"),
    ("main_loop", "w1", 0x1004, 3000, "CMP X4, #0"),
    ("main_loop", "w1", 0x1008, 9000, "B.NE 0x1000"),
    ("main_loop", "w1", 0x100C, 2000, "BL 0x2000"),
    ("main_loop", "w1", 0x1010, 1000, "B 0x1000"),
    ("runtime_dispatch", "w2", 0x2000, 5000, "LDR X3, [X1, #16]"),
    ("runtime_dispatch", "w2", 0x2004, 7000, "BLR X3"),
    ("runtime_dispatch", "w2", 0x2008, 500, "RET"),
    ("<unknown_01>", "w3", 0x3000, 6000, "LDAXR W5, [X2]"),
    ("<unknown_01>", "w3", 0x3004, 1500, "ADD W5, W5, #1"),
    ("<unknown_01>", "w3", 0x3008, 1200, "STLXR W6, W5, [X2]"),
    ("<unknown_01>", "w3", 0x300C, 800, "CBNZ W6, 0x3000"),
    ("compute", "w4", 0x4000, 2500, "UDIV X0, X1, X2"),
    ("compute", "w4", 0x4004, 300, "B 0x9000"),
]
COLD_WINDOWS = 120  # windows of cold code after the hot ones, 3 rows of 10 samples each
COLD_BASE = 0x100000

# Window weights in samples, hottest first (w1 19000, w2 12500, w3 9500, w4 2800).
HOT_ORDER = ["main_loop", "runtime_dispatch", "<unknown_01>", "compute"]

ALP_LINES = [
    {"loop": "L1", "pc": "0x2004", "asm": "BLR X3", "iterations": 1000,
     "stages": {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0, "issue": 5.0,
                "complete": 9.0, "retire": 12.0},
     "branch": {"kind": "indirect_call", "executed": 1000, "taken": 1000,
                "mispredicted": 250}},
    {"loop": "L2", "pc": "0x2004", "asm": "BLR X3", "iterations": 3000,
     "stages": {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0, "issue": 6.0,
                "complete": 10.0, "retire": 14.0},
     "branch": {"kind": "indirect_call", "executed": 3000, "taken": 3000,
                "mispredicted": 750}},
    {"loop": "L1", "pc": "0x2000", "asm": "LDR X3, [X1, #16]", "iterations": 1000,
     "stages": {"fetch": 0.0, "issue": 4.0, "complete": 8.0, "retire": 11.0},
     "mem": {"kind": "load", "accesses": 1000, "l1d_miss": 200, "l2_miss": 20, "llc_miss": 2,
             "tlb_miss": 0, "avg_latency": 6.5, "store_forwarded": 0}},
]
# 0x2004 aggregated: executed 4000, mispredicted 1000 -> 25.0 %; issue = (5*1000 + 6*3000)
# / 4000 = 5.75; complete 9.75; retire 13.5.

GUIDE = """\
# Branch prediction

How the core predicts branches.

## Indirect branches

Indirect calls through a register (BLR) are predicted by the indirect predictor.
Keep the number of targets per call site small.

# Atomics

## Exclusive pairs

LDAXR/STLXR retry loops suffer under contention; prefer LSE atomics such as CAS.
"""


@dataclass(frozen=True)
class Inputs:
    profile: Path
    alp: Path
    guide: Path


def write_inputs(folder: Path) -> Inputs:
    folder.mkdir(parents=True, exist_ok=True)
    lines = ["function,window,pc,samples,asm"]
    for fn, win, pc, samples, asm in HOT_ROWS:
        lines.append(f'{fn},{win},0x{pc:x},{samples},"{asm}"')
    for n in range(COLD_WINDOWS):
        base = COLD_BASE + n * 0x100
        for k, asm in enumerate(("MOV X0, X1", "ADD X0, X0, #1", "RET")):
            lines.append(f'cold_{n:03d},c{n:03d},0x{base + 4 * k:x},10,"{asm}"')
    profile = folder / "profile.csv"
    profile.write_text("\n".join(lines) + "\n", encoding="utf-8")
    alp = folder / "alp.jsonl"
    alp.write_text("".join(json.dumps(r) + "\n" for r in ALP_LINES), encoding="utf-8")
    guide = folder / "uarch.md"
    guide.write_text(GUIDE, encoding="utf-8")
    return Inputs(profile, alp, guide)
