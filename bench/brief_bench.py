"""Brief sizes: what a bounded call's prompt costs before and after the compact rendering.

For every first-wave brief of a standard run (its best candidates, within its call bound)
on the bundled sample C and on the 1M-row benchmark input (bench/out/big, when
generated), with ALP and the bundled guides: the stable prefix (system text + tool
definitions, cached across calls) and the evidence (the brief), each before and after, in
tokens estimated as characters / 4.
"Before" is the rendering this change replaced, rebuilt here from the same briefs: one
line per instruction with "share 4.210%", the ALP records as JSON lines after all the
instructions, guide sections cut at 600 characters, and a separate list of every given ID;
the system text without the abbreviation legend. Also the ALP tokens a whole standard run
sends in its briefs as a share of the raw ALP file's tokens (the article: 1.3-1.5%; target
<= 1%). Target: evidence tokens per brief down >= 50%.

    python -m bench.brief_bench [FOLDER ...] [--json]   (default: bundled C, bench/out/big)
"""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from pathlib import Path

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.model_backend import SUBMIT_FINDINGS
from pcscope.core.engine import evidence_text
from pcscope.core.engine.briefs import Brief, brief, pattern_rows
from pcscope.core.engine.candidates import first_wave_calls, plan
from pcscope.core.engine.presets import resolve
from pcscope.core.engine.system_prompt import SYSTEM, compact, tokens
from pcscope.core.engine.tools import SharedMemory, search_guides, tool_specs
from pcscope.core.evidence import EvidenceStore
from pcscope.index.store import open_workload
from pcscope.samples import bundled

BIG = Path("bench/out/big")
SHOWN = 10  # briefs listed one by one; the rest summarised
TARGET_REDUCTION = 0.50
TARGET_ALP_SHARE = 0.01
OLD_GUIDE_CUT = 600
ALP_DROP = ("id", "pc", "asm", "matched", "loops")


def old_brief(workload, sl: Brief) -> str:
    """The brief as the replaced rendering wrote it (plus its separate ID list)."""
    profile = workload.profile
    blocks = ["<evidence>"]
    for part in sl.parts:
        lines = list(part.header)
        alp_lines = []
        for pc in part.pcs:
            row = profile.row_of(pc)
            pats = [i for i in part.ids if i.startswith("pat:") and i.endswith(f":0x{pc:x}")]
            tag = f"  {' '.join(pats)}" if pats else ""
            lines.append(f"pc:0x{pc:x}  {profile.asm(row)}  share {profile.share(row):.3%}{tag}")
            record = workload.alp.get(pc) if workload.alp is not None else None
            if record is not None:
                data = {k: v for k, v in record.to_json(rounded=True).items()
                        if k not in ALP_DROP}
                alp_lines.append(f"{record.id} {compact(data)}")
        blocks.append("\n".join(lines + alp_lines))
    if sl.guides:
        blocks.append("guide sections:")
        for gid, heading, text in sl.guides:
            flat = " ".join(text.split())
            cut = flat if len(flat) <= OLD_GUIDE_CUT else flat[: OLD_GUIDE_CUT - 1] + "…"
            blocks.append(f'{gid} "{heading}": {cut}')
    blocks.append("</evidence>")
    ids = "\n".join(sl.given())
    return (request_bodies.data("evidence", "\n".join(blocks))
            + request_bodies.data("evidence-ids", ids))


def alp_part(line: str) -> str:
    """The ALP figures of a compact instruction line ('' without)."""
    return line.split("  | ", 1)[1] if "  | " in line else ""


def measure(folder: Path) -> dict:
    """Brief sizes of the profile and ALP in ``folder`` (profile.csv.gz, alp.jsonl.gz)."""
    profile, alp = folder / "profile.csv.gz", folder / "alp.jsonl.gz"
    settings = resolve("standard", {})
    with tempfile.TemporaryDirectory(prefix="pcscope-brief-bench-") as tmp:
        workload = open_workload(profile, alp=alp, guides=[str(g) for g in bundled().guides],
                                 index_dir=Path(tmp) / "idx")
        shared = SharedMemory(EvidenceStore(workload))
        selection = workload.hot(top=settings.top, coverage=settings.coverage)
        made = plan(workload, selection, calls=first_wave_calls(settings, False),
                    windows_per_call=settings.windows_per_slice)
        planned = made.candidates
        marked = pattern_rows(workload)

        def records(pcs: list[int]) -> list:
            shared.alp.preload(pcs)
            return [shared.alp.record(pc) for pc in pcs]

        slices = [brief(workload, group, token_cap=settings.slice_tokens,
                        guide_k=settings.guide_k, alp_records=records, marked=marked,
                        guide_search=lambda q, k: search_guides(shared, q, k))
                  for group in made.calls]  # the first wave, within the run's call bound
        tools = request_bodies.tool_definitions(tool_specs(), SUBMIT_FINDINGS)
        tool_tokens = tokens(json.dumps(tools))
        old_system = SYSTEM.replace("\n" + evidence_text.LEGEND + "\n", "")
        prefix_before = tokens(old_system) + tool_tokens
        prefix_after = tokens(SYSTEM) + tool_tokens
        rows = []
        alp_before = alp_after = 0
        for sl in slices:
            before = old_brief(workload, sl)
            after = request_bodies.data("evidence", sl.text())
            rows.append({"brief": sl.number, "windows": len(sl.parts),
                         "evidence_before": tokens(before), "evidence_after": tokens(after)})
            alp_before += sum(tokens(line) for line in before.splitlines()
                              if line.startswith("alp:"))
            alp_after += sum(tokens(alp_part(line)) for line in after.splitlines())
        raw_alp = 0
        with gzip.open(alp, "rt", encoding="utf-8") as f:
            for chunk in iter(lambda: f.read(1 << 24), ""):
                raw_alp += len(chunk)
        raw_alp = (raw_alp + 3) // 4  # tokens of the raw file, as tokens() counts
    total_before = sum(r["evidence_before"] for r in rows)
    total_after = sum(r["evidence_after"] for r in rows)
    return {"input": str(folder), "briefs": rows, "planned": planned,
            "max_calls": settings.max_calls, "prefix_before": prefix_before,
            "prefix_after": prefix_after, "evidence_before": total_before,
            "evidence_after": total_after,
            "reduction": round(1 - total_after / total_before, 3) if total_before else 0.0,
            "alp_before": alp_before, "alp_after": alp_after, "raw_alp": raw_alp,
            "alp_share_before": round(alp_before / raw_alp, 4) if raw_alp else 0.0,
            "alp_share_after": round(alp_after / raw_alp, 4) if raw_alp else 0.0}


def report(m: dict) -> list[str]:
    lines = [f"briefs of a standard run on {m['input']}: {len(m['briefs'])} first-wave calls "
             f"(on {m['planned']} candidates, --max-calls {m['max_calls']}); tokens = "
             f"characters / 4; stable prefix = system text + tools, cached:",
             f"{'brief':>5} {'windows':>7} {'prefix before':>13} {'prefix after':>12} "
             f"{'evidence before':>15} {'evidence after':>14} {'change':>7}"]
    shown = m["briefs"][:SHOWN]
    for r in shown:
        change = r["evidence_after"] / r["evidence_before"] - 1
        lines.append(f"{r['brief']:>5} {r['windows']:>7} {m['prefix_before']:>13,} "
                     f"{m['prefix_after']:>12,} {r['evidence_before']:>15,} "
                     f"{r['evidence_after']:>14,} {change:>7.0%}")
    n = len(m["briefs"]) or 1
    changes = sorted(r["evidence_after"] / r["evidence_before"] - 1 for r in m["briefs"])
    if len(m["briefs"]) > len(shown):
        lines.append(f"  … {len(m['briefs']) - len(shown)} more briefs; change per brief "
                     f"min {changes[0]:.0%}, median {changes[len(changes) // 2]:.0%}, max "
                     f"{changes[-1]:.0%}")
    lines += [f"evidence per brief: {m['evidence_before'] / n:,.0f} -> "
              f"{m['evidence_after'] / n:,.0f} tokens, down {m['reduction']:.0%} (target >= "
              f"{TARGET_REDUCTION:.0%})",
              f"ALP tokens sent in the run's briefs: {m['alp_before']:,} -> {m['alp_after']:,} "
              f"of {m['raw_alp']:,} in the raw ALP = {m['alp_share_before']:.2%} -> "
              f"{m['alp_share_after']:.2%} (article 1.3-1.5%; target <= {TARGET_ALP_SHARE:.0%})"]
    return lines


def main(argv: list[str] | None = None) -> int:
    args = argv if argv is not None else sys.argv[1:]
    folders = [Path(a) for a in args if a != "--json"] or [
        bundled("C").profile.parent, *([BIG] if (BIG / "alp.jsonl.gz").exists() else [])]
    for folder in folders:
        figures = measure(folder)
        print(json.dumps(figures) if "--json" in args else "\n".join(report(figures)),
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
