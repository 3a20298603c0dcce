"""Every search answer of one version of pcscope, to compare with another's.

``python -m bench.search_identity OUT.jsonl [PROFILE...]`` builds the text index of each
profile (default: the 1M bench profile and the real corpus) and writes one JSON line per
answer: term searches (fixed queries, queries made from the profile's own mnemonics,
words, phrases, functions, windows, modules and registers, their combinations with
``OR``/``-``/``AND``/``NOT``, samples conditions, ranges, malformed queries) at limits 1,
20 and 1000, grouping with a ``where`` query, regexes and guide search; an error is
answered by its message. Run it under two versions and ``cmp`` the files: a change meant
to keep results identical must give identical files.
"""

from __future__ import annotations

import json
import random
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

import numpy as np

from pcscope.core.errors import UsageError
from pcscope.core.patterns import find_patterns
from pcscope.core.profile import Profile
from pcscope.core.readers.guides import read_guide
from pcscope.core.readers.profile_csv import read_profile
from pcscope.index.query import QueryEngine
from pcscope.index.text import TextIndex
from pcscope.samples import guides

ROOT = Path(__file__).resolve().parents[1]
FIXED = ["ldr", "mnemonic:ldaxr", "br x17", '"ldr x0"', "[x16", "b.ne", "x1 -ldr",
         "samples:>1000 ldr", "mnemonic:udiv OR mnemonic:sdiv", "ldr x4", "LDR X17", "x16",
         "[w16,", "base:x16", '"ldr x17"', '"x17 ldr"', "0xe10", "mnemonic:LDAXR",
         "mnemonic:b.cs", "b.hs", "mnemonic:mov", "function:<unknown_03>", "fn:puts",
         "samples:>50", "samples:[40 TO 50]", "x16 -ldr", "mnemonic:br OR mnemonic:dmb",
         "operands:x17", "#0xe10]", "ldr AND NOT x1", "x4 OR -ldr", "ldr OR -x4",
         "(-ldr) OR (-x4)", "ldr AND (NOT x4)", "NOT ldr OR x4", 'asm:"*"', "ldr asm:*",
         "ldr OR x4 add", "ldr OR x4 AND add", "( ldr OR str ) x0", "asm:[a TO c]",
         "mnemonic:[a TO c}", "base:[x1 TO x3]", "function:[a TO b]", "rank:[0 TO 10]",
         "rank:>5 ldr", "row:[100 TO 200} OR add", "samples:*", "samples:<3 -str",
         "-samples:>5 ldr", '"ldr x*"', "ldr^2", '"a b"~2', "x1 IN [a b]", "",
         "ldr AND", "pc:0x1000", "nosuchfield:x OR (", "samples:>abc", 'module:"lib',
         "ldr (x1 OR (-x2))", "+ldr -x0", "-ldr", "a" * 50, "asm:\u00c9x", "b.eq OR b.ne",
         "mnemonic:bl OR mnemonic:blr -x30", "ldp OR stp x29", "NOT x0 str"]  # fmt: skip
REGEXES = [r"ldr x1[67], \[x16", r"^st(l)?xr", r"#0x[0-9a-f]{3}\]", r"LDAXR", r"x(2[0-9])\b"]
GUIDE_QUERIES = ["indirect branch mispredict", "cache miss", "atomic", "prefetch", "x"]


def profiles(args: list[str]) -> list[Path]:
    if args:
        return [Path(a) for a in args]
    real = sorted((ROOT.parent / "shared" / "corpus" / "real").glob("*/profile.csv.gz"))
    return [ROOT / "bench" / "out" / "big" / "profile.csv.gz", *real]


def made_queries(profile: Profile, seed: int = 17) -> list[str]:
    """Queries from the profile's own values, so that most of them hit something."""
    rng = random.Random(seed)
    p = profile
    heavy = np.argsort(-p.samples, kind="stable")[:400].tolist()
    picks = rng.sample(range(len(p)), min(300, len(p))) + heavy
    words: list[str] = []
    phrases: list[str] = []
    for r in picks:
        tokens = [t for t in "".join(c if c.isalnum() else " " for c in p.asm(r)).split() if t]
        words += tokens[:3]
        if len(tokens) >= 2:
            start = rng.randrange(len(tokens) - 1)
            phrases.append('"' + " ".join(tokens[start : start + rng.choice((2, 3))]) + '"')
    words = sorted(set(words))
    out = rng.sample(words, min(60, len(words))) + rng.sample(phrases, min(40, len(phrases)))
    out += [f"mnemonic:{m}" for m in rng.sample(p.mnemonics, min(20, len(p.mnemonics)))]
    names = [n for n in p.function_names if n]
    hot = [p.function_names[f] for f in np.argsort(-p.functions.value)[:5].tolist()]
    for name in rng.sample(names, min(10, len(names))) + hot:
        out += [f'function:"{name}"', f'function:"{name}" ldr', f'fn:"{name}" -str']
    for w in rng.sample(range(len(p.windows)), min(8, len(p.windows))):
        first = int(p.windows.first_pcs()[w])
        out += [f"win:{first:#x}", f"win:{first:#x} OR ldr", f"-win:{first:#x} add"]
    for m in p.modules:
        out += [f'module:"{m}"', f'-module:"{m}" ldr', f'module:"{m}" OR mnemonic:bl']
    for s in (0, 1, 2, 10, 100, 1000, 10_000):
        out += [f"samples:>{s}", f"samples:>={s} str", f"samples:[{s} TO {s * 10}] OR bl"]
    for reg in ("x0", "x1", "sp", "x16", "x29", "w8"):
        out += [f"[{reg}", f"[{reg} ldr", f"-[{reg} str"]
    for _ in range(60):  # random combinations of the words above
        a, b, c = rng.sample(out[:120], 3)
        op = rng.choice([" ", " OR ", " AND ", " -", " AND NOT ", " OR -"])
        out.append(f"{a}{op}{b}" if rng.random() < 0.5 else f"( {a} OR {b} ) {c}")
    return out


def answers(path: Path, out: Callable[[dict], None]) -> None:
    profile = read_profile(path)
    sections = [s for g in guides() for s in read_guide(g)]
    with tempfile.TemporaryDirectory() as tmp:
        text = TextIndex.build(Path(tmp) / "text", profile, sections)
        engine = QueryEngine(profile, find_patterns(profile), text)
        name = path.parent.name

        def record(kind: str, query: str, limit: int, run: Callable[[], object]) -> None:
            try:
                result = run()
                answer = result.model_dump(mode="json") if hasattr(result, "model_dump") else result
            except (UsageError, TimeoutError) as exc:
                answer = {"error": str(exc)}
            out({"profile": name, "kind": kind, "query": query, "limit": limit, "answer": answer})

        for query in FIXED + made_queries(profile):
            for limit in (1, 20, 1000):
                record("search", query, limit, lambda q=query, n=limit: engine.search(q, n))
            for by in ("mnemonic", "function", "category"):
                record(f"group/{by}", query, 20, lambda q=query, b=by: engine.group(b, q, 20))
        for regex in REGEXES:
            for field in ("asm", "mnemonic"):
                record(f"regex/{field}", regex, 20, lambda r=regex, f=field: engine.regex(r, f, 20))
        for query in GUIDE_QUERIES:
            record("guides", query, 5, lambda q=query: engine.search_guides(q, 5))


def main(argv: list[str]) -> int:
    target = Path(argv[0])
    count = 0
    with target.open("w", encoding="utf-8") as f:
        def out(line: dict) -> None:
            nonlocal count
            count += 1
            f.write(json.dumps(line, sort_keys=True) + "\n")

        for path in profiles(argv[1:]):
            answers(path, out)
            print(f"{path}: {count} answers so far", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
