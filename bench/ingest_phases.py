"""Wall and CPU time of each phase of one index build (issue 17: where ingest time goes).

    python -m bench.ingest_phases [--detail] [PROFILE...]   # default: the 1M bench profile, real corpus

Each profile is built from nothing in a child process (a fresh heap, as `pcscope index` has);
the child wraps the build's steps with timers (its own wall clock; CPU time, system time and
minor page faults of the process, children included) and prints one line per phase, then
the whole build; then the mechanisms' first use, which the build leaves to it.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_CHILD = r"""
import json, os, resource, sys, tempfile, time
from pathlib import Path

def cpu():
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(
        resource.RUSAGE_CHILDREN)
    return (own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime,
            own.ru_stime + kids.ru_stime, own.ru_minflt + kids.ru_minflt)

def since(start):
    return [b - a for a, b in zip(start, cpu())]

phases = []

def timed(module, name, label):
    inner = getattr(module, name)
    def wrapper(*args, **kwargs):
        wall, used = time.perf_counter(), cpu()
        try:
            return inner(*args, **kwargs)
        finally:
            phases.append((label, time.perf_counter() - wall, *since(used)))
    setattr(module, name, wrapper)

from pcscope.core import patterns, mechanism_finder
from pcscope.core.readers import profile_csv
from pcscope.index import arrays, manifest, mechanism_store, parts, store
timed(profile_csv, "read_profile", "parse (read_profile)")
timed(arrays, "save_profile", "save profile arrays")
timed(patterns, "code_facts", "instruction facts (code_facts)")
timed(patterns, "find_patterns", "pattern pass (find_patterns)")
timed(mechanism_finder, "find_mechanisms", "mechanism finder")
timed(mechanism_store, "save_mechanisms", "save mechanisms")
timed(manifest, "manifest", "manifest (CRC of every file)")
timed(store, "_load", "reopen (load)")
timed(store.gc, "collect", "garbage collection")
timed(store, "return_free_memory", "return free memory (malloc_trim)")
timed(parts, "return_free_memory", "return free memory (malloc_trim)")
if "--detail" in sys.argv:  # sub-steps, listed before the phase holding them
    for name in ("_parse", "_encode", "_strings", "_windows", "_check", "_lines"):
        timed(profile_csv, name, "  parse: " + name)
    timed(profile_csv, "Profile", "  parse: Profile tables")
    for name in ("_canonical_mnemonics", "_scanned_facts"):
        timed(patterns, name, "  facts: " + name)
    for name in ("_call_overheads", "_atomic_hits", "_indirect_branches", "_dependent_loads",
                 "_spin_waits", "_byte_loops", "_table"):
        timed(patterns, name, "  patterns: " + name)
    for name in ("dispatch", "indirect_calls", "plt", "atomics", "loops", "divisions", "libc",
                 "jit", "memory_states", "table_crcs", "spill_blocks", "return_zeroing",
                 "per_operation"):
        timed(mechanism_finder._Finder, name, "  mechanisms: " + name)
wall, used = time.perf_counter(), cpu()
with tempfile.TemporaryDirectory() as index_dir:
    workload = store.open_workload(sys.argv[1], index_dir=index_dir)
    total = (time.perf_counter() - wall, *since(used))
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    wall, used = time.perf_counter(), cpu()
    workload.mechanisms
    grouping = ("mechanisms (first use, after it)", time.perf_counter() - wall, *since(used))
print(json.dumps({"phases": phases, "total": total, "peak_mb": peak, "after": [grouping]}))
"""


def default_profiles() -> list[Path]:
    real = sorted((ROOT.parent / "shared" / "corpus" / "real").glob("*/profile.csv.gz"))
    return [ROOT / "bench" / "out" / "big" / "profile.csv.gz", *real]


def measure(profile: Path, extra: list[str]) -> dict:
    done = subprocess.run([sys.executable, "-c", _CHILD, str(profile), *extra],
                          capture_output=True,
                          text=True, check=True, cwd=ROOT)
    return json.loads(done.stdout)


def main(argv: list[str]) -> int:
    import os

    extra = [a for a in argv if a == "--detail"]
    for profile in [Path(a) for a in argv if a not in extra] or default_profiles():
        load = os.getloadavg()[0]
        out = measure(profile, extra)
        print(f"== {profile.parent.name}/{profile.name}  (load {load:.1f}, "
              f"peak {out['peak_mb']:.0f} MB)")
        print(f"  {'phase':34} {'wall s':>7} {'CPU s':>7} {'sys s':>7} {'faults':>8}")
        whole = ["whole build (open_workload)", *out["total"]]
        for label, wall, used, system, faults in [*out["phases"], whole, *out["after"]]:
            print(f"  {label:34} {wall:7.3f} {used:7.3f} {system:7.3f} {faults:8.0f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
