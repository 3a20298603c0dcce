"""ALP aggregation benchmark: time and peak RSS of read_alp on a raw ALP of ~17M tokens.

Target (docs/formats.md §2, issue 2): a ~17M-token (~68 MB) raw ALP aggregated in <= 2 s with
peak RSS <= 300 MB. Each measurement runs in a fresh subprocess so peak RSS is the
reader's own (interpreter and imports included), not the caller's.

    python -m bench.alp_bench [PATH]      # makes a fixed-seed file when PATH is not given
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

import msgspec

from pcscope.core.alp import BRANCH_KINDS, MEM_KINDS, STAGES

TARGET_TOKENS = 17_000_000
TARGET_SECONDS = 2.0
TARGET_RSS_MB = 300.0
KEEP_EVERY = 20          # the trimmed run keeps every 20th PC (~5%, like hot windows)
UNMATCHED_EVERY = 100    # the trimmed run's profile lacks every 100th PC

_BASE_PC = 0x400000
_CODE_SLOTS = (256 * 1024) // 4
_ASM = {"branch": "BLR X3", "mem": "LDR X3, [X1, #16]", None: "ADD X0, X0, #1"}


def _roles(rng: random.Random) -> list[tuple[str | None, str | None]]:
    """A fixed (block, kind) per code slot, so every record of a PC agrees on its kinds."""
    roles: list[tuple[str | None, str | None]] = []
    for _ in range(_CODE_SLOTS):
        roll = rng.random()
        if roll < 0.2:
            roles.append(("branch", rng.choice(BRANCH_KINDS)))
        elif roll < 0.55:
            roles.append(("mem", rng.choice(MEM_KINDS)))
        else:
            roles.append((None, None))
    return roles


def _record(rng: random.Random, loop: str, pc: int, iterations: int,
            role: tuple[str | None, str | None]) -> dict:
    """One plausible raw (loop, PC) record: stages always, a branch or mem block by role."""
    block, kind = role
    rec: dict = {"loop": loop, "pc": f"0x{pc:x}", "asm": _ASM[block], "iterations": iterations}
    t, stages = 0.0, {}
    for name in STAGES if rng.random() < 0.8 else STAGES[::2]:
        stages[name] = round(t, 2)
        t += rng.uniform(0.5, 4.0)
    rec["stages"] = stages
    if block == "branch":
        taken = rng.randint(0, iterations)
        rec["branch"] = {"kind": kind, "executed": iterations, "taken": taken,
                         "mispredicted": rng.randint(0, taken)}
    elif block == "mem":
        l1 = rng.randint(0, iterations // 10)
        rec["mem"] = {"kind": kind, "accesses": iterations, "l1d_miss": l1,
                      "l2_miss": l1 // 4, "llc_miss": l1 // 16, "tlb_miss": rng.randint(0, 9),
                      "avg_latency": round(rng.uniform(4.0, 40.0), 2), "store_forwarded": 0}
    return rec


def make_alp(path: str | os.PathLike, target_tokens: int = TARGET_TOKENS, seed: int = 1) -> Path:
    """Write a fixed-seed raw ALP of about ``target_tokens`` tokens (characters / 4).

    Loops are runs of 8-200 consecutive instructions placed in a 256 KiB code region, so
    most PCs appear in several loops, as in nested or overlapping simulator regions.
    """
    rng = random.Random(seed)
    encoder = msgspec.json.Encoder()
    roles = _roles(rng)
    chars = loop_no = 0
    out = Path(path)
    with open(out, "wb") as f:
        while chars < 4 * target_tokens:
            loop = f"L{loop_no:05d}"
            loop_no += 1
            length = rng.randint(8, 200)
            start = rng.randrange(_CODE_SLOTS - length)
            iterations = rng.randint(1, 500_000)
            blob = b"".join(
                encoder.encode(_record(rng, loop, _BASE_PC + 4 * (start + i), iterations,
                                       roles[start + i])) + b"\n"
                for i in range(length))
            f.write(blob)
            chars += len(blob)
    return out


_CHILD = r"""
import json, resource, sys, time
import numpy as np
from pcscope.core.readers.alp import read_alp
path, mode, arrays, keep_every, unmatched_every = sys.argv[1:3] + [sys.argv[3]] + [
    int(n) for n in sys.argv[4:6]]
profile_pcs = keep_pcs = None
if mode == "trimmed":
    data = np.load(arrays)
    profile_pcs, keep_pcs = data["profile"], data["keep"]
start = time.perf_counter()
table = read_alp(path, profile_pcs=profile_pcs, keep_pcs=keep_pcs)
seconds = time.perf_counter() - start
start = time.perf_counter()
stats = table.stats.to_json()
stats_seconds = time.perf_counter() - start
if mode == "all":
    pcs = np.fromiter(table.records, dtype=np.uint64)
    np.savez(arrays, profile=np.delete(pcs, np.s_[::unmatched_every]), keep=pcs[::keep_every])
rss_mb = max(resource.getrusage(who).ru_maxrss  # the reader's decoding worker is a child
             for who in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN)) / 1024
print(json.dumps({"seconds": round(seconds, 3), "stats_seconds": round(stats_seconds, 3),
                  "peak_rss_mb": round(rss_mb, 1), **stats}))
"""


def _run_child(path: str, mode: str, arrays: str) -> dict:
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    done = subprocess.run([sys.executable, "-c", _CHILD, path, mode, arrays, str(KEEP_EVERY),
                           str(UNMATCHED_EVERY)], env=env, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"alp bench child ({mode}) failed:\n{done.stderr}")
    return json.loads(done.stdout)


def bench_alp(path: str | os.PathLike) -> dict:
    """Aggregate ``path`` twice, each in a fresh subprocess: keeping every PC ("all", no
    profile) and trimmed to every 20th PC with a profile lacking every 100th ("trimmed").
    ``seconds`` is read_alp alone; ``stats_seconds`` the first ``table.stats`` (it renders
    every kept record to count tokens); ``peak_rss_mb`` covers both. Returns the figures of
    both runs and whether each meets the targets (read_alp time and peak RSS)."""
    path = str(path)
    with tempfile.TemporaryDirectory(prefix="alp_bench.") as tmp:
        arrays = os.path.join(tmp, "pcs.npz")
        runs = {mode: _run_child(path, mode, arrays) for mode in ("all", "trimmed")}
    for run in runs.values():
        run["ok"] = run["seconds"] <= TARGET_SECONDS and run["peak_rss_mb"] <= TARGET_RSS_MB
    return {
        "name": "alp_aggregation",
        "file": path,
        "file_mb": round(os.path.getsize(path) / 1e6, 1),
        "target": {"seconds": TARGET_SECONDS, "peak_rss_mb": TARGET_RSS_MB},
        "runs": runs,
        "ok": all(run["ok"] for run in runs.values()),
    }


def main(argv: list[str]) -> int:
    if argv:
        result = bench_alp(argv[0])
    else:
        with tempfile.TemporaryDirectory(prefix="alp_bench.") as tmp:
            result = bench_alp(make_alp(os.path.join(tmp, "raw_alp.jsonl")))
    print(json.dumps(result, indent=2))
    return 0  # a missed target is a figure to report ("ok": false), not a crash


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
