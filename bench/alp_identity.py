"""Does a change to the ALP reader keep its tables identical? Dump every array, list and
stat read_alp gives on a set of inputs, then compare two dumps bit for bit.

    python -m bench.alp_identity dump OUT_DIR [ALT_DIR]   # with this checkout's reader
    python -m bench.alp_identity compare DIR_A DIR_B

Inputs: the bundled samples (all PCs; the hot windows' PCs against the profile; a few of
them against a third of the profile; no profile), the benchmark ALP (bench/out/big, the
same ways) when present, an alt-variant sample
(``pcscope sample --variant alt -o ALT_DIR``) when given, and a messy copy of sample C
(garbage, blank, CRLF, duplicate, kind-conflict, extra-stage, non-ASCII and other-spelling
lines) read with --skip-bad-lines, plus the error it raises without.
"""

from __future__ import annotations

import dataclasses
import gzip
import pickle
import random
import sys
from pathlib import Path

import numpy as np

from pcscope.core.errors import InputError
from pcscope.core.readers.alp import read_alp
from pcscope.core.readers.profile_csv import read_profile

SAMPLES = Path(__file__).resolve().parent.parent / "pcscope" / "samples" / "data"
BIG = Path("bench/out/big")


def _table_state(table) -> dict:
    """Everything the table holds, as plain values and arrays."""
    columns = table.records.columns
    state = {f"col.{f.name}": getattr(columns, f.name) for f in dataclasses.fields(columns)}
    loops = table.per_loop.state()
    state.update({f"loop.{k}": v for k, v in loops.items() if k != "texts"})
    state["loop.texts"] = list(loops["texts"])
    state["file_stats"] = dataclasses.asdict(table.file_stats)
    state["stats"] = dataclasses.asdict(table.stats)
    return state


def _messy(source: Path, out: Path, seed: int = 3) -> Path:
    """Sample C's ALP with bad and unusual lines mixed in (deterministic)."""
    rng = random.Random(seed)
    lines = gzip.decompress(source.read_bytes()).decode().splitlines()
    out_lines: list[str] = []
    for i, line in enumerate(lines):
        roll = rng.random()
        if roll < 0.002:
            out_lines.append("garbage {")
        elif roll < 0.004:
            out_lines.append("")
        elif roll < 0.006 and out_lines:
            out_lines.append(rng.choice(out_lines))          # a duplicate (or a bad line)
        elif roll < 0.008:
            out_lines.append(line.replace('"stages": {', '"stages": {"x_stage": 2.5, ', 1))
        elif roll < 0.009:
            out_lines.append(line.replace('"kind": "load"', '"kind": "store"'))
        elif roll < 0.010:
            out_lines.append(line.replace('"asm": "', '"asm": "é ', 1))
        elif roll < 0.011:
            out_lines.append(line.replace('"pc": "0x', '"pc": "0X', 1))
        elif roll < 0.012:
            out_lines.append(line.replace('"iterations": ', '"iterations": -', 1))
        out_lines.append(line + ("\r" if i % 997 == 5 else ""))
    out.write_text("\n".join(out_lines) + "\n", encoding="utf-8")
    return out


def _cases(work: Path, alt: Path | None) -> dict[str, tuple[Path, dict]]:
    cases: dict[str, tuple[Path, dict]] = {}
    folders = [(f"sample-{p.name}", p) for p in sorted(SAMPLES.iterdir()) if p.is_dir()]
    if BIG.exists():
        folders.append(("big", BIG))
    if alt is not None:
        folders.append(("alt", alt))
    for name, folder in folders:
        profile = read_profile(folder / "profile.csv.gz")
        cases[f"{name}-all"] = (folder / "alp.jsonl.gz", {"profile_pcs": profile.pc})
        hot = profile.hot_windows().pcs(profile)
        cases[f"{name}-hot"] = (folder / "alp.jsonl.gz", {"profile_pcs": profile.pc,
                                                          "keep_pcs": hot})
        cases[f"{name}-some"] = (folder / "alp.jsonl.gz", {"profile_pcs": profile.pc[::3],
                                                           "keep_pcs": hot[::7]})
        cases[f"{name}-noprofile"] = (folder / "alp.jsonl.gz", {"profile_pcs": None})
    messy = _messy(SAMPLES / "C" / "alp.jsonl.gz", work / "messy.jsonl")
    cases["messy-skip"] = (messy, {"profile_pcs": None, "skip_bad_lines": True})
    cases["messy-error"] = (messy, {"profile_pcs": None})
    return cases


def dump(out: Path, alt: Path | None) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for name, (path, kwargs) in _cases(out, alt).items():
        try:
            state = _table_state(read_alp(path, **kwargs))
        except InputError as exc:
            state = {"error": str(exc).replace(str(out), "DIR")}
        (out / f"{name}.pickle").write_bytes(pickle.dumps(state))
        print(f"dumped {name}", flush=True)


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        a, b = np.asarray(a), np.asarray(b)
        return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()
    if isinstance(a, float) and isinstance(b, float):
        return np.float64(a).tobytes() == np.float64(b).tobytes()   # NaN == NaN, -0.0 != 0.0
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return type(a) is type(b) and len(a) == len(b) and all(map(_same, a, b))
    return type(a) is type(b) and a == b


def compare(first: Path, second: Path) -> int:
    bad = 0
    for path in sorted(first.glob("*.pickle")):
        a = pickle.loads(path.read_bytes())
        b = pickle.loads((second / path.name).read_bytes())
        differ = [k for k in a if k not in b or not _same(a[k], b[k])] + [
            k for k in b if k not in a]
        bad += bool(differ)
        print(f"{path.stem:28} {'identical' if not differ else 'DIFFERS: ' + ', '.join(differ)}")
    return 1 if bad else 0


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "dump":
        dump(Path(argv[1]), Path(argv[2]) if len(argv) > 2 else None)
        return 0
    if len(argv) == 3 and argv[0] == "compare":
        return compare(Path(argv[1]), Path(argv[2]))
    print(__doc__)
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
