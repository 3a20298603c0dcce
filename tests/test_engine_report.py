"""Reports and the CLI: JSON exactly as docs/formats.md §4, Markdown an engineer can forward,
`pcscope analyze` / `calls` / `call` end to end."""

from __future__ import annotations

import json

from engine_helpers import write_mini

from pcscope.cli.main import main
from pcscope.core.evidence import EvidenceStore
from pcscope.index.store import open_workload

TOP = {"pcscope", "profile", "model", "ideas", "rejected", "calls", "cost", "run"}
PROFILE = {"path", "instructions", "windows", "functions", "total", "selected_windows",
           "coverage"}
IDEA = {"id", "title", "category", "target", "claim", "numbers", "recommendation", "checks",
        "pcs",
        "evidence",
        "window_weight", "mechanisms", "upside", "upside_how",
        "weight", "pc_weight", "confidence", "basis", "merged_from"}
# uncached input, cache writes (cache_write_tokens) and cache reads (cached_tokens) apart
CALL = {"id", "wave", "parent", "model", "status", "input_tokens", "output_tokens",
        "cached_tokens", "cache_write_tokens", "seconds"}
COST = {"calls", "input_tokens", "cache_write_tokens", "cache_read_tokens", "output_tokens",
        "seconds"}


def check_report(report: dict, workload) -> None:
    assert set(report) == TOP
    assert PROFILE <= set(report["profile"])
    assert set(report["cost"]) == COST
    assert report["cost"]["calls"] == len(report["calls"])
    assert all(set(c) == CALL for c in report["calls"])
    assert all(set(r) == {"reason", "call"} for r in report["rejected"])
    store = EvidenceStore(workload)
    for idea in report["ideas"]:
        assert set(idea) == IDEA
        assert idea["pcs"], idea["id"]
        for evidence_id in idea["evidence"]:
            assert store.exists(evidence_id), evidence_id
        for pc in idea["pcs"]:
            assert store.row(int(pc, 16)) is not None
    scores = [i["upside"] for i in report["ideas"]]
    assert scores == sorted(scores, reverse=True)


def check_forwardable(report: dict, markdown: str, workload) -> None:
    """Coverage table first (every top function in it), ideas, calls in an appendix; one
    analyst label per idea; no 0.000% rows; units on the ALP column; evidence wrapped."""
    profile = workload.profile
    top = sorted((f for f in profile.functions if f.value > 0),
                 key=lambda f: (-f.value, f.first_pc))[:10]
    table = report["run"]["coverage"]["table"]
    listed = [row["id"] for row in table if row["what"] == "function"]
    assert listed == [f.id for f in top]
    ranks = {n for row in table for n in row["ideas"]}
    assert ranks <= set(range(1, len(report["ideas"]) + 1))
    for row in table:
        assert (row["status"] == "idea") == bool(row["ideas"])
        if workload.alp is None:  # nothing measured: nothing can be called healthy
            assert row["status"] != "healthy figures", row
        assert f"| function `{row['id']}` |" in markdown or row["what"] != "function"
    assert markdown.index("## Coverage") < markdown.index("## Ideas") \
        < markdown.index("## Appendix: calls")
    assert "[rule-based]" not in markdown
    assert "| 0.000% |" not in markdown
    assert "ALP (rates %, latencies cycles)" in markdown
    assert all(len(line) <= 102 for line in markdown.splitlines()
               if line.startswith(("Evidence:", "Merged from:")))


def analyze(tmp_path, *extra: str) -> tuple[int, dict, str]:
    out_json, out_md = tmp_path / "report.json", tmp_path / "report.md"
    code = main(["analyze", *extra, "--index-dir", str(tmp_path / "idx"), "--json",
                 str(out_json), "--markdown", str(out_md), "--quiet"])
    return code, json.loads(out_json.read_text()), out_md.read_text()


def test_analyze_the_mini_profile_end_to_end(bundled_guides, tmp_path, capsys):
    profile, alp = write_mini(tmp_path / "in")
    code, report, markdown = analyze(tmp_path, str(profile), "--alp", str(alp),
                                     "--coverage", "1", "--hint", "0x2004 virtual call in a "
                                     "visitor loop")
    assert code == 0
    workload = open_workload(profile, alp=alp, guides=bundled_guides, index_dir=tmp_path / "idx")
    check_report(report, workload)
    assert report["model"] == "offline"
    assert report["run"]["settings"]["preset"] == "standard"
    assert report["run"]["settings"]["coverage"] == 1.0
    assert report["run"]["hints"][0]["id"] == "note:1"
    blr = next(i for i in report["ideas"] if i["category"] == "indirect-branch")
    assert "note:1" in blr["claim"]  # the hint reached the call that concerns 0x2004
    # Markdown: ranked ideas, claim, recommendation, evidence table with ALP, guide quote
    assert "## Ideas" in markdown and f"### 1. {report['ideas'][0]['title']}" in markdown
    assert "| `0x2004` | `blr x3` |" in markdown and "indirect_call mispredict 23.0%" in markdown
    assert "> `guide:uarch/branch-prediction/indirect-branches`" in markdown
    check_forwardable(report, markdown, workload)

    assert main(["calls", str(profile), "--index-dir", str(tmp_path / "idx")]) == 0
    listing = capsys.readouterr().out
    assert "w1.c1" in listing and "run 1:" in listing
    assert main(["call", "w1.c1", "--index-dir", str(tmp_path / "idx"), "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["id"] == "w1.c1" and shown["given"] and shown["tools"]
    assert main(["call", "w9.c9", str(profile), "--index-dir", str(tmp_path / "idx")]) == 2
    assert "no recorded call w9.c9" in capsys.readouterr().err


def test_presets_and_flags_resolve_into_the_report(tmp_path):
    profile, alp = write_mini(tmp_path / "in")
    code, report, _md = analyze(tmp_path, str(profile), "--alp", str(alp), "--preset", "quick",
                                "--depth", "3", "--max-calls", "2")
    settings = report["run"]["settings"]
    assert code == 0 and settings["preset"] == "quick"
    assert settings["depth"] == 3 and settings["max_calls"] == 2  # flags win
    assert settings["coverage"] == 0.5  # from the preset


def test_bad_options_are_one_line_errors(tmp_path, capsys):
    profile, _alp = write_mini(tmp_path / "in")
    base = [str(profile), "--index-dir", str(tmp_path / "idx"), "--quiet"]
    assert main(["analyze", *base, "--preset", "nope"]) == 2
    assert "no preset named 'nope'" in capsys.readouterr().err
    assert main(["analyze", *base, "--model", "gpt:x"]) == 2
    assert "unknown model 'gpt:x'" in capsys.readouterr().err
    assert main(["analyze", *base, "--focus", "teleportation"]) == 2
    assert "unknown focus categories: teleportation" in capsys.readouterr().err
    assert main(["analyze", *base, "--hint", "0x9999 nothing here"]) == 2
    assert "pc 0x9999 is not in the profile" in capsys.readouterr().err


def test_analyze_the_bundled_planted_sample(planted_sample, bundled_guides, tmp_path):
    sample = planted_sample  # the small bundled set; bench/engine_bench.py times C
    code, report, markdown = analyze(tmp_path, str(sample.profile), "--alp", str(sample.alp))
    assert code == 0 and report["run"]["stop_reason"] == "complete"
    workload = open_workload(sample.profile, alp=sample.alp, guides=bundled_guides,
                             index_dir=tmp_path / "idx")
    check_report(report, workload)
    assert markdown.count("\n### ") == len(report["ideas"])
    check_forwardable(report, markdown, workload)
    coverage = report["run"]["coverage"]
    assert 0 < coverage["examined_share"] <= 1 and coverage["calls"] <= 60
    truth = json.loads(sample.truth.read_text())
    found = {(i["category"], pc) for i in report["ideas"] for pc in i["pcs"]}
    assert all((t["category"], t["pc"]) in found for t in truth["planted"])


def test_analyze_the_real_bzip2_profile(bzip2, bundled_guides, tmp_path):
    code, report, markdown = analyze(tmp_path, str(bzip2.profile))
    assert code == 0 and report["ideas"]
    workload = open_workload(bzip2.profile, guides=bundled_guides, index_dir=tmp_path / "idx")
    check_report(report, workload)
    assert {i["basis"] for i in report["ideas"]} == {"profile-only"}
    assert "no ALP record covers the rows cited" in markdown
    # what the numbers are is the idea's own field, shown once per idea under a label; the
    # claim keeps what would confirm it
    for idea in report["ideas"]:
        assert "no ALP record covers the rows cited" in idea["numbers"]
        assert "no ALP record" not in idea["claim"] and "To confirm, measure " in idea["claim"]
    # said once above the ideas when they share it, under an idea only where it differs
    shared = max({i["numbers"] for i in report["ideas"]},
                 key=[i["numbers"] for i in report["ideas"]].count)
    assert markdown.count(f"(every idea below unless it says otherwise). {shared}") == 1
    assert markdown.count("**What the numbers are.** ") == \
        sum(i["numbers"] != shared for i in report["ideas"])
    # the checks are their own field and section, not a tail of the claim its length cuts
    checked = [i for i in report["ideas"] if i["checks"]]
    assert checked and not any("Checks passed" in i["claim"] for i in report["ideas"])
    assert markdown.count("**Checks passed.**") == len(checked)
    for idea in checked:
        section = markdown.split(idea["title"])[1].split("**Recommendation.**")[0]
        assert all(f"- {check}" in section for check in idea["checks"])


def test_mechanism_ids_of_other_ideas_are_linked_by_number():
    from pcscope.core.engine.report import _linked

    ranks = {"mech:libc-routine:0x10": 4, "mech:per-operation:0x20": 2}
    text = ("made by its members, counted in `mech:libc-routine:0x10`; this tree "
            "`mech:per-operation:0x20`; no idea `mech:plt:0x30`")
    assert _linked(text, ranks, 2) == (
        "made by its members, counted in idea #4 (`mech:libc-routine:0x10`); this tree "
        "`mech:per-operation:0x20`; no idea `mech:plt:0x30`")


def test_the_numbers_note_most_ideas_share_is_said_once():
    from pcscope.core.engine.report import _shared_numbers

    assert _shared_numbers([{"numbers": "a"}, {"numbers": "b"}, {"numbers": "a"}]) == "a"
    assert _shared_numbers([{"numbers": "a"}, {"numbers": "b"}]) is None  # none shared
    assert _shared_numbers([{"numbers": ""}, {}]) is None
