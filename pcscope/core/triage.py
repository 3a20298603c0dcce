"""An engineer's triage of a run's ideas, and the report as they hand it on.

Verdicts and notes live in the session store beside the run. An exported report keeps
the accepted and undecided ideas as recommendations, each with its verdict and note,
and lists the rejected ones apart with the reason the engineer gave — a rejected idea
is never forwarded as a recommendation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

VERDICTS = ("proposed", "accepted", "rejected")


@dataclass(frozen=True)
class Verdict:
    """An engineer's triage of one idea."""

    verdict: str = "proposed"  # proposed | accepted | rejected
    note: str = ""


def triaged_report(report: dict[str, Any], verdicts: Mapping[str, Verdict]) -> dict[str, Any]:
    """The JSON report (docs/formats.md §4) with the triage applied: ``ideas`` without the
    rejected ones, each idea with ``verdict`` and ``note``, and ``rejected_ideas`` (id,
    title, note) for what the engineer turned down."""
    kept, turned_down = [], []
    for idea in report.get("ideas", []):
        verdict = verdicts.get(idea["id"], Verdict())
        if verdict.verdict == "rejected":
            turned_down.append({"id": idea["id"], "title": idea["title"], "note": verdict.note})
        else:
            kept.append({**idea, "verdict": verdict.verdict, "note": verdict.note})
    return {**report, "ideas": kept, "rejected_ideas": turned_down}


def triage_markdown(report: dict[str, Any]) -> list[str]:
    """The triage section of a triaged report's Markdown."""
    rows = [i for i in report["ideas"] if i.get("verdict") != "proposed" or i.get("note")]
    out = ["## Engineer's triage", ""]
    if not rows and not report["rejected_ideas"]:
        return out + ["No idea was accepted, rejected or annotated.", ""]
    out += ["| idea | verdict | note |", "| --- | --- | --- |"]
    out += [f"| {i['title']} (`{i['id']}`) | {i['verdict']} | {_cell(i['note'])} |" for i in rows]
    out += [f"| {i['title']} (`{i['id']}`) | rejected — not recommended | {_cell(i['note'])} |"
            for i in report["rejected_ideas"]]
    return out + [""]


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")
