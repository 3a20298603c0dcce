"""Search figures on one profile: pattern pass, text index build, term search, regex, grouping.

Targets (issue 17): text index ≤ 3 s for 1M rows, term search ≤ 2 ms p95, regex over all
asm ≤ 50 ms. Standalone: ``python -m bench.search_bench PROFILE [INDEX_DIR]``.
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from bench.measure import percentile, timed
from pcscope.core.patterns import find_patterns
from pcscope.core.profile import Profile
from pcscope.index.query import QueryEngine
from pcscope.index.text import TextIndex

REPEAT = 20
TERM_QUERIES = ["ldr", "mnemonic:ldaxr", "br x17", '"ldr x0"', "[x16", "b.ne", "x1 -ldr",
                "samples:>1000 ldr", "mnemonic:udiv OR mnemonic:sdiv"]  # fmt: skip
ASM_REGEXES = [r"ldr x1[67], \[x16", r"^st(l)?xr", r"#0x[0-9a-f]{3}\]", r"LDAXR", r"x(2[0-9])\b"]
MNEMONIC_REGEXES = [r"^ld(a)?xr", r"^(cas|swp|ldadd)", r"div$"]


def _ms(values: list[float]) -> dict:
    return {"p50_ms": percentile(values, 50) * 1e3, "p95_ms": percentile(values, 95) * 1e3}


def _each(run, items: list[str]) -> list[float]:
    out = []
    for item in items:
        out += timed(lambda item=item: run(item), REPEAT)
    return out


def bench_search(profile: Profile, text_index_dir: str | Path) -> dict:
    """Build the text index into ``text_index_dir`` (replaced) and time every primitive."""
    text_dir = Path(text_index_dir)
    shutil.rmtree(text_dir, ignore_errors=True)
    t, cpu = time.perf_counter(), time.process_time()
    patterns = find_patterns(profile)
    pattern_s, pattern_cpu = time.perf_counter() - t, time.process_time() - cpu
    t, cpu = time.perf_counter(), time.process_time()
    TextIndex.build(text_dir, profile)
    build_s, build_cpu = time.perf_counter() - t, time.process_time() - cpu
    t = time.perf_counter()
    text = TextIndex.open(text_dir)
    open_s = time.perf_counter() - t
    engine = QueryEngine(profile, patterns, text)
    hottest = profile.function_names[int(np.argmax(profile.functions.value))] if len(
        profile.function_names) else "main"  # fmt: skip
    queries = [*TERM_QUERIES, f'function:"{hottest}" ldr']
    t = time.perf_counter()
    engine.regex("ldr", "asm", 10)  # the first asm regex makes the lower-case text column
    regex_first_s = time.perf_counter() - t
    stats = text.build_stats
    return {
        "rows": len(profile),
        "pattern_pass_s": pattern_s,
        "pattern_pass_cpu_s": pattern_cpu,  # CPU time of this process: shows a busy machine
        "pattern_hits": patterns.counts(),
        "text_build_s": build_s,
        "text_build_cpu_s": build_cpu,  # this process (Tantivy builds only the guide index)
        "text_build_instructions_s": stats.instructions_seconds,
        "text_build_guides_s": stats.guides_seconds,
        "text_open_ms": open_s * 1e3,
        "term_search": _ms(_each(lambda q: engine.search(q, 20), queries)),
        "regex_first_call_s": regex_first_s,
        "regex_asm": _ms(_each(lambda r: engine.regex(r, "asm", 20), ASM_REGEXES)),
        "regex_mnemonic": _ms(_each(lambda r: engine.regex(r, "mnemonic", 20),
                                    MNEMONIC_REGEXES)),  # fmt: skip
        "group": {
            by: _ms(timed(lambda by=by: engine.group(by, None, 20), 5))
            for by in ("mnemonic", "function", "window", "category", "module")
        },
        "group_where_ldr": _ms(timed(lambda: engine.group("mnemonic", "ldr", 20), 5)),
    }


def main(argv: list[str]) -> int:
    from pcscope.core.readers.profile_csv import read_profile

    profile = read_profile(argv[0])
    with tempfile.TemporaryDirectory() as tmp:
        target = Path(argv[1]) if len(argv) > 1 else Path(tmp) / "text"
        print(json.dumps(bench_search(profile, target), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
