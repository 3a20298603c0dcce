"""Validation: fabricated, foreign, non-existent and unsupported evidence is rejected with a
reason, kept in the record and the report, and the run goes on."""

from __future__ import annotations

import pytest
from engine_helpers import mini_workload, run

from pcscope.core.contract.findings import CallOutput, Finding
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.engine.validation import validate
from pcscope.core.evidence import EvidenceStore


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    return mini_workload(tmp_path_factory.mktemp("validation"))


def _finding(**kw) -> Finding:
    base = dict(title="a finding", category="indirect-branch", target="software",
                claim="the blr mispredicts", recommendation="devirtualize", pcs=["0x2004"],
                evidence=["pc:0x2004", "alp:0x2004"], confidence=0.8, basis="measured")
    return Finding(**{**base, **kw})


def _reasons(workload, allowed, **kw) -> list[str]:
    output = CallOutput(findings=[_finding(**kw)])
    verdict = validate(output, output.model_dump_json(), set(allowed), EvidenceStore(workload))
    return [r.reason for r in verdict.rejections]


def test_a_well_grounded_finding_is_accepted(workload):
    assert _reasons(workload, {"pc:0x2004", "alp:0x2004"}) == []


@pytest.mark.parametrize("kw, allowed, reason", [
    ({"evidence": ["pc:0x2004", "guide:uarch/made-up"]}, {"pc:0x2004", "guide:uarch/made-up"},
     "evidence id does not resolve: guide:uarch/made-up"),
    ({"evidence": ["pc:0x2004", "alp:0x2004"]}, {"pc:0x2004"},
     "evidence id not given to this call: alp:0x2004"),
    ({"evidence": ["bogus"]}, {"bogus"}, "malformed evidence id: bogus"),
    ({"pcs": ["0x9999"]}, {"pc:0x2004", "alp:0x2004"}, "pc not in the profile: 0x9999"),
    ({"pcs": ["0x2004", "0x3000"]}, {"pc:0x2004", "alp:0x2004"},
     "pc not in cited evidence: 0x3000"),
    ({"pcs": ["zz"]}, {"pc:0x2004", "alp:0x2004"}, "malformed pc: zz"),
    ({"pcs": ["0x2000"], "evidence": ["pc:0x2000", "alp:0x2000"]}, {"pc:0x2000", "alp:0x2000"},
     "category indirect-branch not supported by the evidence: no br/blr indirect branch among "
     "its PCs"),
    ({"evidence": ["pc:0x2004"]}, {"pc:0x2004"},
     "basis measured without a alp: record at its PCs"),
    ({"category": "division", "pcs": ["0x1000"], "evidence": ["win:0x1000"],
      "basis": "profile-only"}, {"win:0x1000"},
     "category division not supported by the evidence: no divide or square root "
     "(udiv/sdiv/fdiv/fsqrt) among its PCs"),
])
def test_each_kind_of_bad_evidence_is_rejected_with_its_reason(workload, kw, allowed, reason):
    assert _reasons(workload, allowed, **kw) == [reason]


def test_a_window_id_covers_its_pcs_and_an_exclusive_supports_atomic_llsc(workload):
    assert _reasons(workload, {"win:0x3000"}, category="atomic-llsc", pcs=["0x3000", "0x3008"],
                    evidence=["win:0x3000"], basis="profile-only") == []


def test_malformed_output_is_rejected_as_a_whole(workload):
    verdict = validate(None, '{"findings": [{"title": 3}]', set(), EvidenceStore(workload))
    assert verdict.malformed
    assert verdict.rejections[0].reason.startswith("malformed output:")


def test_an_object_built_around_the_schema_is_validated_again(workload):
    sneaky = CallOutput.model_construct(findings=[Finding.model_construct(
        title="x", category="nonsense", target="software", claim="c", recommendation="r",
        pcs=["0x2004"], evidence=["pc:0x2004"], confidence=2.0, basis="measured", questions=[])])
    verdict = validate(sneaky, "", {"pc:0x2004"}, EvidenceStore(workload))
    assert verdict.malformed


def test_scripted_bad_outputs_are_all_rejected_and_the_run_goes_on(workload, tmp_path):
    # The mini workload has 4 windows: one slice and one call each, modes in turn.
    result = run(workload, "scripted:ok+fabricate+foreign+bad-pc", session=tmp_path / "s.sqlite",
                 windows_per_slice=1, concurrency=1, depth=1, coverage=1.0)
    assert [c.id for c in result.calls] == ["w1.c1", "w1.c2", "w1.c3", "w1.c4"]
    assert all(c.status == "ok" for c in result.calls)  # parsed; findings judged one by one
    reasons = {r["call"]: r["reason"] for r in result.rejected}
    assert "w1.c1" not in reasons
    assert reasons["w1.c2"] == "evidence id not given to this call: guide:uarch/made-up/section"
    # w1.c3 cites a PC that was given to w1.c1 only
    assert reasons["w1.c3"] == "evidence id not given to this call: pc:0x1000"
    assert reasons["w1.c4"] == "pc not in the profile: 0x1"
    assert len(result.ideas) == 1 and result.ideas[0].merged_from == ("finding:w1.c1.f1",)
    with SessionStore(tmp_path / "s.sqlite") as store:
        stored = {c.id: c for c in store.calls(result.run)}
    assert stored["w1.c2"].rejections[0]["reason"] == reasons["w1.c2"]
    assert "made-up" in stored["w1.c2"].raw  # the rejected output is kept as it came


def test_more_bad_modes_each_rejected(workload, tmp_path):
    result = run(workload, "scripted:uncovered+category+malformed+fail",
                 session=tmp_path / "s.sqlite", windows_per_slice=1, concurrency=1, depth=1,
                 coverage=1.0)
    status = {c.id: c.status for c in result.calls}
    reasons = {r["call"]: r["reason"] for r in result.rejected}
    assert reasons["w1.c1"].startswith("pc not in cited evidence")
    assert reasons["w1.c2"].startswith("category indirect-branch not supported")
    assert reasons["w1.c3"].startswith("malformed output")
    assert status == {"w1.c1": "ok", "w1.c2": "ok", "w1.c3": "rejected", "w1.c4": "failed"}
    assert "scripted backend failure" in result.calls[3].error
    assert result.ideas == []
    assert result.stop_reason == "complete"


def test_ids_fetched_through_a_tool_may_be_cited(workload, tmp_path):
    result = run(workload, "scripted:tool", session=tmp_path / "s.sqlite", depth=1)
    assert result.rejected == []
    assert all(c.tools and c.tools[0].tool == "asm_around" for c in result.calls)
    assert result.ideas
