"""gem5 O3PipeView import benchmark: throughput and peak RSS on a multi-GB trace.

Target (issue 7): a 2 GB O3PipeView trace streams through ``pcscope import gem5`` with
bounded memory (peak RSS <= 300 MB whatever the size); throughput is reported in MB/s.
The trace is synthetic but in gem5's exact syntax: an 8-instruction AArch64 loop with a
two-micro-op ``ldp``, a store, records printed out of sequence order, and a mispredicted
exit every 64 iterations whose two wrong-path instructions are squashed. It is written
block by block from one formatted template whose numbers (ticks, sequence numbers) are
rewritten with numpy, so making 2 GB takes seconds, not the import's time.

    python -m bench.gem5_bench [SIZE]        # SIZE in bytes, or with a K/M/G suffix
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from bench.measure import run_process

DEFAULT_SIZE = 2 * 1024**3
TARGET_RSS_MB = 300.0
TICKS = 500                   # ticks per cycle (a 2 GHz core, 1 ps ticks)
TICK0 = 100_000_000_000       # 12 digits for the whole trace
SEQ0 = 100_000_000            # 9 digits for the whole trace
ITERATIONS_PER_BLOCK = 1024   # a multiple of MISPREDICT_EVERY
MISPREDICT_EVERY = 64

# pc, disassembly, micro-ops, stage offsets in cycles after fetch
# (decode, rename, dispatch, issue, complete, retire), store completion offset or 0.
LOOP_BODY = (
    (0x400580, "ldr   x1, [x0], #8", 1, (1, 2, 3, 4, 8, 12), 0),
    (0x400584, "ldr   x5, [x1]", 1, (1, 2, 3, 8, 12, 13), 0),
    (0x400588, "add   x2, x2, x5", 1, (1, 2, 3, 12, 13, 14), 0),
    (0x40058c, "ldp   x8, x9, [x10], #16", 2, (1, 2, 3, 4, 9, 14), 0),
    (0x400590, "str   x6, [x4, #8]", 1, (1, 2, 3, 5, 6, 14), 20),
    (0x400594, "subs   x3, x3, #1", 1, (1, 2, 3, 4, 5, 15), 0),
    (0x400598, "csel   x7, x2, x6, ne", 1, (1, 2, 3, 13, 14, 15), 0),
    (0x40059c, "b.ne   0x400580", 1, (1, 2, 3, 5, 6, 15), 0),
)
WRONG_PATH = ((0x4005a0, "mov   x0, x2"), (0x4005a4, "ret"))
CYCLES_PER_ITERATION = 3


@dataclass
class _Template:
    """One block of trace text and where its shifting numbers are."""

    text: np.ndarray            # uint8
    tick_at: np.ndarray         # offsets of 12-digit tick fields
    tick_value: np.ndarray      # their values in block 0
    seq_at: np.ndarray          # offsets of 9-digit sequence numbers
    seq_value: np.ndarray
    records: int
    committed: dict[int, int]   # pc -> committed instances per block
    squashed: int


class _Writer:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.size = 0
        self.ticks: list[tuple[int, int]] = []
        self.seqs: list[tuple[int, int]] = []

    def put(self, text: str) -> None:
        self.parts.append(text)
        self.size += len(text)

    def tick(self, value: int) -> None:
        if value:
            self.ticks.append((self.size, value))
            self.put(f"{value:012d}")
        else:
            self.put("0")

    def seq(self, value: int) -> None:
        self.seqs.append((self.size, value))
        self.put(f"{value:09d}")


def _record(w: _Writer, seq: int, pc: int, upc: int, asm: str, fetch: int,
            stages: tuple[int, ...], store: int) -> None:
    w.put("O3PipeView:fetch:")
    w.tick(fetch)
    w.put(f":0x{pc:08x}:{upc}:")
    w.seq(seq)
    w.put(f":{asm}\n")
    for name, value in zip(("decode", "rename", "dispatch", "issue", "complete"), stages[:5],
                           strict=True):
        w.put(f"O3PipeView:{name}:")
        w.tick(value)
        w.put("\n")
    w.put("O3PipeView:retire:")
    w.tick(stages[5])
    w.put(":store:")
    w.tick(store)
    w.put("\n")


def _template() -> _Template:
    w = _Writer()
    seq = SEQ0
    records = squashed = 0
    committed: dict[int, int] = {}
    for it in range(ITERATIONS_PER_BLOCK):
        fetch = TICK0 + it * CYCLES_PER_ITERATION * TICKS
        pending: list[tuple] = []
        for pc, asm, uops, offsets, store in LOOP_BODY:
            stages = tuple(fetch + c * TICKS for c in offsets)
            st = fetch + store * TICKS if store else 0
            for upc in range(uops):
                pending.append((seq, pc, upc, asm, fetch, stages, st))
                seq += 1
            committed[pc] = committed.get(pc, 0) + 1
        if it % MISPREDICT_EVERY == MISPREDICT_EVERY - 1:
            # Wrong-path instructions are destroyed (printed) before the older ones retire.
            for pc, asm in WRONG_PATH:
                _record(w, seq, pc, 0, asm, fetch + TICKS, (fetch + 2 * TICKS, 0, 0, 0, 0, 0), 0)
                seq += 1
                records += 1
                squashed += 1
        # Out of sequence order: each pair of records printed the other way round.
        for i in range(0, len(pending) - 1, 2):
            pending[i], pending[i + 1] = pending[i + 1], pending[i]
        for rec in pending:
            _record(w, *rec)
            records += 1
    text = np.frombuffer("".join(w.parts).encode("ascii"), dtype=np.uint8).copy()
    ticks = np.array(w.ticks, dtype=np.int64).reshape(-1, 2)
    seqs = np.array(w.seqs, dtype=np.int64).reshape(-1, 2)
    return _Template(text, ticks[:, 0], ticks[:, 1], seqs[:, 0], seqs[:, 1], records,
                     committed, squashed)


def _write_digits(text: np.ndarray, at: np.ndarray, values: np.ndarray, width: int) -> None:
    for k in range(width):
        text[at + k] = (values // 10 ** (width - 1 - k)) % 10 + 48


def make_trace(path: str | os.PathLike, size: int = DEFAULT_SIZE) -> dict:
    """Write a trace of about ``size`` bytes; returns what the import must find."""
    t = _template()
    blocks = max(1, -(-size // len(t.text)))
    seq_step = int(t.seq_value.max() - SEQ0 + 1)
    tick_step = ITERATIONS_PER_BLOCK * CYCLES_PER_ITERATION * TICKS
    if SEQ0 + blocks * seq_step >= 10**9 or TICK0 + blocks * tick_step >= 10**12:
        raise ValueError(f"size {size} is too large for the fixed-width numbers")
    with open(path, "wb") as f:
        for b in range(blocks):
            text = t.text.copy()
            _write_digits(text, t.tick_at, t.tick_value + b * tick_step, 12)
            _write_digits(text, t.seq_at, t.seq_value + b * seq_step, 9)
            f.write(text.tobytes())
    return {"bytes": os.path.getsize(path), "records": blocks * t.records,
            "committed": {pc: n * blocks for pc, n in t.committed.items()},
            "squashed": blocks * t.squashed}


def _check(out: Path, expected: dict) -> bool:
    """The import found every committed instance per PC and the right stage offsets."""
    found = {}
    for line in out.read_text().splitlines():
        rec = json.loads(line)
        found[int(rec["pc"], 16)] = rec
    ok = all(found.get(pc, {}).get("iterations") == n for pc, n in expected["committed"].items())
    squashed = sum(r.get("squashed", 0) for r in found.values())
    first = found.get(LOOP_BODY[0][0], {}).get("stages", {})
    return ok and squashed == expected["squashed"] and first.get("retire") == 12.0


def bench_gem5(tmpdir: str | os.PathLike, size: int = DEFAULT_SIZE) -> dict:
    """Make a ``size``-byte trace in ``tmpdir``, import it in a fresh process and report
    MB/s and that process's peak RSS."""
    trace = Path(tmpdir) / "o3pipeview.trace"
    out = Path(tmpdir) / "gem5_alp.jsonl"
    expected = make_trace(trace, size)
    root = str(Path(__file__).resolve().parent.parent)
    env = dict(os.environ, PYTHONPATH=root + os.pathsep + os.environ.get("PYTHONPATH", ""))
    run = run_process([sys.executable, "-m", "pcscope", "import", "gem5", str(trace),
                       "-o", str(out)], env=env, stderr=subprocess.DEVNULL)
    correct = run.returncode == 0 and _check(out, expected)
    trace.unlink(missing_ok=True)
    mb = expected["bytes"] / 1e6
    return {
        "name": "gem5_o3pipeview_import",
        "file_mb": round(mb, 1),
        "records": expected["records"],
        "seconds": round(run.seconds, 2),
        "mb_per_s": round(mb / run.seconds, 1) if run.seconds else None,
        "peak_rss_mb": round(run.peak_rss_mb, 1),
        "target": {"peak_rss_mb": TARGET_RSS_MB},
        "correct": correct,
        "ok": correct and run.peak_rss_mb <= TARGET_RSS_MB,
    }


def parse_size(text: str) -> int:
    units = {"K": 1024, "M": 1024**2, "G": 1024**3}
    text = text.strip().upper().removesuffix("B")
    if text and text[-1] in units:
        return int(float(text[:-1]) * units[text[-1]])
    return int(text)


def main(argv: list[str]) -> int:
    size = parse_size(argv[0]) if argv else DEFAULT_SIZE
    with tempfile.TemporaryDirectory(prefix="gem5_bench.") as tmp:
        result = bench_gem5(tmp, size)
    print(json.dumps(result, indent=2))
    return 0  # a missed target is a figure to report ("ok": false), not a crash


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
