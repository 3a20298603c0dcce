"""Analysis reports: the JSON of docs/formats.md §4 and a Markdown report an engineer can forward.

The JSON holds exactly the spec's keys plus ``run`` (the resolved settings, stop reason,
hints and coverage, so any run can be repeated and its reach judged). The Markdown opens
with a coverage table (the top functions and mechanisms: idea, or why not), then ranks the
ideas by expected upside; each names its analyst once and shows its claim, what its
numbers are (exact counts or samples, and what they cannot tell), the checks that back it
(and the items of any list the claim shortened), its recommendation and an evidence
table (PC, asm, share, ALP figures with their units; instructions without samples left
out) and the guide sections it cites, quoted briefly. The calls are listed in an appendix.
"""

from __future__ import annotations

import re
import textwrap
from collections import Counter
from typing import TYPE_CHECKING

from pcscope import __version__
from pcscope.core.alp import AlpRecord
from pcscope.core.engine.coverage import coverage_rows
from pcscope.core.evidence import EvidenceStore
from pcscope.core.ids import hex_pc, kind_of
from pcscope.core.summary import profile_summary
from pcscope.core.workload import Workload

if TYPE_CHECKING:
    from pcscope.core.engine.orchestrator import RunResult

RULE_BASED = "offline"
RULE_LABEL = "[rule-based]"  # the offline analyst's mark on each text it writes
QUOTE_CHARS = 220
WRAP = 100  # characters per line of an evidence list


def analyst_label(model: str) -> str:
    if model == RULE_BASED:
        return "offline (rule-based: ideas come from a fixed rules catalog, not a model)"
    return model


def build_report(result: RunResult, workload: Workload) -> dict:
    calls = result.calls
    return {
        "pcscope": __version__,
        "profile": profile_summary(workload.profile, result.selection),
        "model": result.model,
        "ideas": [idea.to_json() for idea in result.ideas],
        "rejected": result.rejected,
        "calls": [c.summary() for c in calls],
        "cost": {
            "calls": len(calls),
            "input_tokens": sum(c.input_tokens for c in calls),
            "cache_write_tokens": sum(c.cache_write_tokens for c in calls),
            "cache_read_tokens": sum(c.cached_tokens for c in calls),
            "output_tokens": sum(c.output_tokens for c in calls),
            "seconds": round(result.seconds, 3),
        },
        "run": {
            "id": result.run,
            "analyst": "rule-based" if result.model == RULE_BASED else "model",
            "stop_reason": result.stop_reason,
            "resumed": result.resumed,
            "skipped_calls": len(result.records) - len(calls),
            "cached_tokens": sum(c.cached_tokens for c in calls),
            "settings": result.settings.to_json(),
            "inputs": {
                "alp": str(workload.alp_path) if workload.alp_path else None,
                "guides": [str(p) for p in workload.guide_paths],
            },
            "hints": [h.to_json() for h in result.hints],
            "plan_seconds": round(result.plan_seconds, 3),
            "coverage": {
                **(result.plan.to_json() if result.plan is not None else {}),
                "table": [row.to_json() for row in coverage_rows(result, workload)],
            },
        },
    }


def markdown_report(report: dict, workload: Workload) -> str:
    store = EvidenceStore(workload)
    p = report["profile"]
    run = report["run"]
    cost = report["cost"]
    offline = report["model"] == RULE_BASED
    out = [
        f"# pcscope analysis: {p['path']}",
        "",
        f"- Analyst: {analyst_label(report['model'])}",
        f"- Profile: {p['instructions']:,} instructions, {p['windows']:,} windows, "
        f"{p['functions']:,} functions; total {p['total']:,} {p.get('basis', '')}".rstrip(),
        f"- Selection: {p['selected_windows']:,} hot windows covering {p['coverage']:.1%}",
        f"- Run {run['id']}: preset `{run['settings']['preset']}`, depth "
        f"{run['settings']['depth']}, stopped: {run['stop_reason']}; {cost['calls']} calls, "
        f"{cost['input_tokens']:,} input / {cost['output_tokens']:,} output tokens"
        f"{' (estimated: what a model would read and write)' if offline else ''}, "
        f"{cost['seconds']:.1f} s",
    ]
    coverage = run.get("coverage", {})
    if "examined_share" in coverage:
        out.append(f"- Coverage: the calls examined {coverage['examined_share']:.1%} of the "
                   f"selected cycles ({coverage['candidates']:,} candidates, "
                   f"{coverage['calls']} first-wave calls); left out "
                   f"{coverage['left_out_count']:,} candidates holding "
                   f"{coverage['left_out_share']:.2%} of the total; the rest of the selection "
                   f"held no pattern, mechanism or measured cost to examine")
        if coverage.get("small_count"):
            floor = coverage["small_floor"]
            out.append(f"- Not examined: {coverage['small_count']:,} candidates below "
                       f"{floor:.1%} each with nothing measured ({coverage['small_share']:.2%} "
                       f"of the total together), as no idea that small is reported"
                       + (f"; no candidate above {floor:.1%} was left without a look"
                          if not coverage["left_out_count"] else ""))
    if run["hints"]:
        out.append("- Engineers' notes: " + "; ".join(
            f"{h['id']} ({h['scope']}): {h['text']}" for h in run["hints"]))
    out += ["", *_coverage_md(coverage.get("table", []))]
    out += [f"## Ideas ({len(report['ideas'])}, ranked by expected upside: own share × "
            f"modelled penalty (or the part the advice deletes) × confidence)", ""]
    if not report["ideas"]:
        out += ["No idea passed validation.", ""]
    ranks = {m: rank for rank, idea in enumerate(report["ideas"], 1)
             for m in idea.get("mechanisms") or []}
    shared = _shared_numbers(report["ideas"])
    if shared:
        out += [f"**What the numbers are** (every idea below unless it says otherwise). "
                f"{shared}", ""]
    for rank, idea in enumerate(report["ideas"], 1):
        out += _idea_md(rank, idea, store, report["model"], ranks, shared)
    if report["rejected"]:
        out += ["## Rejected outputs", "", "| call | reason |", "| --- | --- |"]
        out += [f"| {r['call']} | {_cell(r['reason'])} |" for r in report["rejected"]]
        out.append("")
    out += ["## Appendix: calls", "",
            "| call | wave | parent | status | input (tokens) | cache write (tokens) | "
            "cache read (tokens) | output (tokens) | time (s) |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: |"]
    out += [f"| {c['id']} | {c['wave']} | {c['parent'] or ''} | {c['status']} | "
            f"{c['input_tokens']:,} | {c['cache_write_tokens']:,} | {c['cached_tokens']:,} | "
            f"{c['output_tokens']:,} | {c['seconds']:.2f} |" for c in report["calls"]]
    return "\n".join(out) + "\n"


def _coverage_md(table: list[dict]) -> list[str]:
    if not table:
        return []
    out = ["## Coverage", "",
           "| what | name | share (%) | idea | why not |",
           "| --- | --- | ---: | --- | --- |"]
    for row in table:
        ideas = ", ".join(f"#{n}" for n in row["ideas"])
        found = row["status"] == "idea"
        out.append(f"| {row['what']} `{row['id']}` | {_cell(row['name'])} | "
                   f"{row['share']:.2%} | {ideas if found else 'no idea'} | "
                   f"{'' if found else _cell(_why_not(row))} |")
    # the measurement that decides is the same for many rows: said once, below the table
    decides = list(dict.fromkeys(d for row in table if (d := row.get("decides"))))
    if decides:
        out += ["", f"Where no rule applies: {'; '.join(decides)}."]
    return [*out, ""]


def _why_not(row: dict) -> str:
    """The status, then what the code is (functions without an idea)."""
    code = row.get("code") or ""
    return f"{row['status']}; {code}" if code else row["status"]


def _shared_numbers(ideas: list[dict]) -> str | None:
    """The note on what the numbers are that most ideas share, if two or more do: said
    once above the ideas (the same ~190 characters under every idea was noise), each
    idea's own note shown only where it differs. The JSON keeps every idea's."""
    notes = Counter(n for idea in ideas if (n := idea.get("numbers")))
    if not notes:
        return None
    text, count = notes.most_common(1)[0]
    return text if count > 1 else None


def _idea_md(rank: int, idea: dict, store: EvidenceStore, model: str,
             ranks: dict[str, int], shared: str | None) -> list[str]:
    label = " (rule-based)" if model == RULE_BASED else ""
    mechanisms = idea.get("mechanisms") or []
    out = [
        f"### {rank}. {idea['title']}{label}",
        "",
        f"`{idea['category']}` · target {idea['target']} · basis {idea['basis']} · confidence "
        f"{idea['confidence']:.2f} · own share {idea['weight']:.2%} of the total (its windows "
        f"{idea['window_weight']:.2%})"
        + (f" · mechanism {', '.join(f'`{m}`' for m in mechanisms)}" if mechanisms else ""),
        "",
        f"**Expected upside** ≈ {idea['upside']:.2%} of the total = {idea['upside_how']}.",
        "",
        f"**Claim.** {_linked(_unlabelled(idea['claim']), ranks, rank)}",
        "",
        *([f"**What the numbers are.** {numbers}", ""]
          if (numbers := idea.get("numbers")) and numbers != shared else []),
        *_checks_md(idea.get("checks") or [], ranks, rank),
        f"**Recommendation.** {_linked(_unlabelled(idea['recommendation']), ranks, rank)}",
        "",
        "| PC | asm | share (%) | ALP (rates %, latencies cycles) |",
        "| --- | --- | ---: | --- |",
    ]
    profile = store.profile
    cold = 0
    for text in idea["pcs"]:
        pc = int(text, 16)
        row = store.row(pc)
        share = profile.share(row)
        if round(share * 100, 3) == 0:
            cold += 1
            continue
        record = store.alp(pc)
        figures = alp_figures(record, idea["category"]) if record is not None else "—"
        out.append(f"| `{hex_pc(pc)}` | `{_cell(profile.asm(row))}` | {share:.3%} | "
                   f"{figures} |")
    if cold:
        # "no samples" would be false of exact counts: these ran, just rarely
        out.append(f"\n({cold} cited instruction{'s' if cold > 1 else ''} under 0.0005% of "
                   f"the total each left out of the table)")
    guides = [e for e in idea["evidence"] if kind_of(e) == "guide"]
    if guides:
        out.append("")
        for gid in guides:
            section = store.resolve(gid)
            out.append(f"> `{gid}` — *{section.title}*: {quote(section.text)}")
    others = [e for e in idea["evidence"] if kind_of(e) not in ("guide",)]
    out += ["", *_wrapped("Evidence:", [f"`{e}`" for e in others])]
    if len(idea["merged_from"]) > 1:
        out += _wrapped("Merged from:", idea["merged_from"])
    out.append("")
    return out


def _checks_md(checks: list[str], ranks: dict[str, int], rank: int) -> list[str]:
    """The idea's checks, one item each, under the claim they back (none: no lines)."""
    if not checks:
        return []
    return ["**Checks passed.**", "", *(f"- {_linked(c, ranks, rank)}" for c in checks), ""]


def _wrapped(head: str, items: list[str]) -> list[str]:
    """A list of IDs as lines of at most ``WRAP`` characters (an ID is never cut); a
    Markdown hard break ends each line but the last."""
    lines = textwrap.wrap(f"{head} {', '.join(items)}", WRAP, break_long_words=False,
                          break_on_hyphens=False)
    return [line + "  " for line in lines[:-1]] + lines[-1:]


_MECH_ID = re.compile(r"`?(mech:[a-z-]+:0x[0-9a-f]+)`?")


def _linked(text: str, ranks: dict[str, int], rank: int) -> str:
    """``text`` with each mechanism ID that another idea of the report is about followed by
    that idea's number, so ideas that are one chain of cause point at each other."""
    def link(match: re.Match) -> str:
        other = ranks.get(match.group(1))
        return (f"idea #{other} (`{match.group(1)}`)" if other is not None and other != rank
                else match.group(0))
    return _MECH_ID.sub(link, text)


def _unlabelled(text: str) -> str:
    """An idea's text without the analyst's per-paragraph mark (the heading carries it)."""
    return text.replace(f"{RULE_LABEL} ", "").replace(RULE_LABEL, "")


def alp_figures(record: AlpRecord, category: str = "") -> str:
    """The derived ALP figures of one PC in a few words (3 significant digits); zero miss
    rates are left out, the forwarded share only shown where forwarding is the question."""
    parts = []
    b, m = record.branch, record.mem
    if b is not None and b.mispredict_rate is not None:
        parts.append(f"{b.kind} mispredict {b.mispredict_rate:.1%} of {b.executed:,} "
                     "executions")
    if m is not None:
        for name, label in (("l1d_miss_rate", "L1D miss"), ("l2_miss_rate", "L2 miss"),
                            ("tlb_miss_rate", "TLB miss")):
            value = getattr(m, name)
            if value:
                parts.append(f"{label} {value:.1%}")
        if category == "store-forwarding" and m.store_forward_rate is not None:
            parts.append(f"forwarded {m.store_forward_rate:.1%}")
        if m.avg_latency is not None:
            parts.append(f"latency {m.avg_latency:.3g} cycles")
    for name, label in (("issue_wait", "issue wait"), ("execute_latency", "execute"),
                        ("retire_wait", "retire wait")):
        value = getattr(record, name)
        if value is not None:
            parts.append(f"{label} {value:.3g} cycles")
    return _cell("; ".join(parts)) or "—"


def quote(text: str) -> str:
    """The start of a guide section, without Markdown emphasis, cut at a word."""
    flat = re.sub(r"\*\*([^*]+)\*\*", r"\1", " ".join(text.split()))
    if len(flat) <= QUOTE_CHARS:
        return flat
    return flat[:QUOTE_CHARS].rsplit(" ", 1)[0] + " …"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")
