"""Checks one call's output against the evidence that call was allowed to see.

A finding is rejected, with the reason kept, when it cites an ID that was neither given
to the call nor returned by one of its tools, an ID that does not resolve, a PC outside
the profile or not covered by its cited evidence, a category that none of its PCs
supports, or a basis its evidence does not carry (``measured`` needs an ``alp:`` record at
one of its PCs, ``predicted`` an ``mca:`` one). Output that does not parse as the schema is
rejected as a whole. Nothing is ever repaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pydantic import ValidationError

from pcscope.core.contract.findings import CallOutput, Finding
from pcscope.core.engine.support import SUPPORT, supports
from pcscope.core.errors import EvidenceError
from pcscope.core.evidence import EvidenceStore
from pcscope.core.ids import hex_pc, kind_of, parse_pc, pc_of

_MEASURED_KINDS = ("alp",)
_PREDICTED_KINDS = ("mca",)


@dataclass(frozen=True)
class Rejection:
    reason: str
    title: str | None = None  # None when the whole output was rejected


@dataclass
class Verdict:
    output: CallOutput | None
    accepted: list[tuple[int, Finding, tuple[int, ...]]] = field(default_factory=list)
    rejections: list[Rejection] = field(default_factory=list)

    @property
    def malformed(self) -> bool:
        return self.output is None


def parse_output(output: CallOutput | None, raw: str) -> CallOutput | str:
    """The call's output re-validated from scratch, or why it is malformed. A backend's
    already-built object is dumped and validated again, so nothing bypasses the schema."""
    try:
        if output is not None:
            return CallOutput.model_validate(output.model_dump())
        return CallOutput.model_validate_json(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first.get("loc", ())) or "output"
        return f"malformed output: {where}: {first.get('msg', 'invalid')}"


def validate(output: CallOutput | None, raw: str, allowed: set[str],
             store: EvidenceStore) -> Verdict:
    parsed = parse_output(output, raw)
    if isinstance(parsed, str):
        return Verdict(None, rejections=[Rejection(parsed)])
    verdict = Verdict(parsed)
    for n, finding in enumerate(parsed.findings, 1):
        reason, pcs = check_finding(finding, allowed, store)
        if reason is None:
            verdict.accepted.append((n, finding, pcs))
        else:
            verdict.rejections.append(Rejection(reason, finding.title))
    return verdict


def check_finding(finding: Finding, allowed: set[str],
                  store: EvidenceStore) -> tuple[str | None, tuple[int, ...]]:
    """(None, parsed PCs) when the finding stands, else (the first reason, ())."""
    for evidence_id in finding.evidence:
        reason = _check_id(evidence_id, allowed, store)
        if reason:
            return reason, ()
    pcs: list[int] = []
    for text in finding.pcs:
        try:
            pc = parse_pc(text)
        except ValueError:
            return f"malformed pc: {text}", ()
        if store.row(pc) is None:
            return f"pc not in the profile: {hex_pc(pc)}", ()
        if not _covered(pc, finding.evidence, store):
            return f"pc not in cited evidence: {hex_pc(pc)}", ()
        pcs.append(pc)
    reason = _check_category(finding.category, pcs, store) or _check_basis(finding, pcs)
    return (reason, ()) if reason else (None, tuple(dict.fromkeys(pcs)))


def _check_id(evidence_id: str, allowed: set[str], store: EvidenceStore) -> str | None:
    try:
        kind_of(evidence_id)
    except ValueError:
        return f"malformed evidence id: {evidence_id}"
    if evidence_id not in allowed:
        return f"evidence id not given to this call: {evidence_id}"
    if not store.exists(evidence_id):
        return f"evidence id does not resolve: {evidence_id}"
    return None


def _covered(pc: int, evidence: list[str], store: EvidenceStore) -> bool:
    """A PC is covered by a cited ID at that PC, or by a cited window, function, finding,
    set or note that holds it."""
    window = store.window_of(pc)
    function = store.function_of(pc)
    for evidence_id in evidence:
        kind = kind_of(evidence_id)
        if kind in ("pc", "alp", "pat", "mca") and pc_of(evidence_id) == pc:
            return True
        if kind == "win" and window is not None and window.id == evidence_id:
            return True
        if kind == "fn" and function is not None and function.id == evidence_id:
            return True
        if kind in ("finding", "set", "note", "mech"):
            try:
                if pc in store.resolve(evidence_id).pcs:
                    return True
            except EvidenceError:
                continue
    return False


def _check_category(category: str, pcs: list[int], store: EvidenceStore) -> str | None:
    profile = store.profile
    patterns = store.workload.patterns
    for pc in pcs:
        if supports(category, profile.asm(store.row(pc)), patterns.categories_at(pc)):
            return None
    return (f"category {category} not supported by the evidence: no "
            f"{SUPPORT[category].what} among its PCs")


def _check_basis(finding: Finding, pcs: list[int]) -> str | None:
    kinds = {"measured": _MEASURED_KINDS, "predicted": _PREDICTED_KINDS}.get(finding.basis)
    if kinds is None:
        return None
    at_pcs = {pc_of(e) for e in finding.evidence if kind_of(e) in kinds}
    if not at_pcs & set(pcs):
        return (f"basis {finding.basis} without a {'/'.join(k + ':' for k in kinds)} record "
                f"at its PCs")
    return None
