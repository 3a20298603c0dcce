"""``--review model``: the gatekeeper's review as one model call, applied by code.

After a wave the reviewer sees every accepted finding — its ID, title, category, claim,
PCs and evidence IDs, not the raw evidence — and the rule gatekeeper's ideas, and
proposes merges, rejections and questions for the next wave. Its output is validated
like any other: it may only name findings that exist (and not name one twice across
merges and rejections), and a question's text may only cite IDs that resolve. Invalid
proposals are dropped with a reason; valid ones are applied here, by code:
rejections remove findings, merges join the ideas holding the named findings, questions
go one wave deeper.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.conversation import Task
from pcscope.core.backends.llm.turns import TurnContext
from pcscope.core.contract.backend import ToolResult, Usage
from pcscope.core.engine.gatekeeper import Question, merge
from pcscope.core.engine.ideas import BASIS_STRENGTH, Accepted, Idea, shares_of
from pcscope.core.evidence import EvidenceStore
from pcscope.core.ids import hex_pc
from pcscope.core.mechanisms import MechanismTable
from pcscope.core.profile import Profile


class MergeProposal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    findings: list[str] = Field(min_length=2, max_length=32,
                                description="finding IDs that state the same idea")
    reason: str = Field(min_length=3, max_length=500)


class RejectProposal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    finding: str
    reason: str = Field(min_length=3, max_length=500)


class QuestionProposal(BaseModel):
    model_config = ConfigDict(extra="forbid")
    finding: str = Field(description="the finding the question follows up")
    question: str = Field(min_length=3, max_length=500)


class ReviewOutput(BaseModel):
    """The reviewer's answer (the ``submit_review`` tool input)."""

    model_config = ConfigDict(extra="forbid")
    merges: list[MergeProposal] = Field(default_factory=list, max_length=32)
    rejections: list[RejectProposal] = Field(default_factory=list, max_length=64)
    questions: list[QuestionProposal] = Field(default_factory=list, max_length=16)
    summary: str = Field(default="", max_length=2000)


_EMPTY = MechanismTable()
SUBMIT_REVIEW = request_bodies.answer_tool(
    "submit_review", "Submit the review: merges, rejections and follow-up questions.",
    ReviewOutput)

SYSTEM = """\
You review the findings of one wave of bounded analysis calls on an AArch64 workload
profile, as the gatekeeper before the next wave. For each finding you see its ID, title,
category, claim, recommendation, PCs and cited evidence IDs (the evidence was checked by
code: every ID resolves and was available to the call that cited it).
Propose:
- merges: findings that state the same idea about the same code (name them by ID);
- rejections: findings whose claim does not follow from what they cite, or that restate
  generic advice with no workload-specific cost (say why);
- questions: what a deeper call should measure or read next to confirm or sharpen a
  finding (name the finding).
Name only the finding IDs you were given. Code applies your proposals; invalid ones are
dropped."""

_ID = re.compile(r"\b(?:fn|win|pc|alp|pat|guide|finding|note|set|mca):[^\s,;)\]]+")


@dataclass
class Review:
    """What applying a review produced."""

    ideas: list[Idea]
    questions: list[Question]
    rejected: dict[str, str] = field(default_factory=dict)  # finding ID -> reason
    dropped: list[str] = field(default_factory=list)  # invalid proposals, with reasons
    error: str | None = None
    raw: str = ""  # the review call's answer as received
    usage: Usage = field(default_factory=Usage)


def review_task(accepted: list[Accepted], ideas: list[Idea], wave: int) -> Task:
    lines = []
    for a in accepted:
        f = a.finding
        lines.append(f"{a.id} [{f.category}, {f.target}, {f.basis}, confidence "
                     f"{f.confidence:.2f}] {f.title}\n  claim: {f.claim}\n"
                     f"  recommendation: {f.recommendation}\n"
                     f"  pcs: {' '.join(hex_pc(pc) for pc in a.pcs)}\n"
                     f"  evidence: {' '.join(f.evidence)}")
    grouping = [f"{i.id}: {' '.join(i.merged_from)}" for i in ideas]
    content = [{"type": "text", "text": request_bodies.data("findings", "\n".join(lines))},
               {"type": "text", "text": request_bodies.data("rule-merges", "\n".join(grouping))},
               {"type": "text", "text": f"Review wave {wave}, then call submit_review."}]
    return Task(SYSTEM, content, (), ReviewOutput, SUBMIT_REVIEW, max_turns=2, cache_first=None)


def check(review: ReviewOutput, accepted: list[Accepted],
          store: EvidenceStore) -> tuple[ReviewOutput, list[str]]:
    """The valid part of ``review`` and the reasons each invalid proposal was dropped."""
    known = {a.id for a in accepted}
    dropped: list[str] = []
    claimed: set[str] = set()
    rejections = []
    for r in review.rejections:
        if r.finding not in known:
            dropped.append(f"rejection of unknown finding {r.finding}")
        elif r.finding in claimed:
            dropped.append(f"{r.finding} rejected twice")
        else:
            claimed.add(r.finding)
            rejections.append(r)
    merges = []
    for m in review.merges:
        unknown = [f for f in m.findings if f not in known]
        reused = [f for f in m.findings if f in claimed]
        if unknown or reused or len(set(m.findings)) < 2:
            why = (f"unknown {', '.join(unknown)}" if unknown else
                   f"already merged or rejected {', '.join(reused)}" if reused else
                   "fewer than two distinct findings")
            dropped.append(f"merge of {' '.join(m.findings)}: {why}")
            continue
        claimed.update(m.findings)
        merges.append(m)
    rejected = {r.finding for r in rejections}
    questions = []
    for q in review.questions:
        bad = [i for i in _ID.findall(q.question) if not store.exists(i) and i not in known]
        if q.finding not in known or q.finding in rejected or bad:
            why = f"cites unknown {', '.join(bad)}" if bad else f"finding {q.finding} " \
                  f"{'rejected' if q.finding in rejected else 'unknown'}"
            dropped.append(f"question {q.question[:60]!r}: {why}")
            continue
        questions.append(q)
    return ReviewOutput(merges=merges, rejections=rejections, questions=questions,
                        summary=review.summary), dropped


def apply(review: ReviewOutput, accepted: list[Accepted], profile: Profile,
          limit: int, mechanisms: MechanismTable = _EMPTY) -> Review:
    """Rejections out, the rule merge, then the model's merges on top; its questions."""
    rejected = {r.finding: r.reason for r in review.rejections}
    kept = [a for a in accepted if a.id not in rejected]
    ideas = merge(kept, profile, mechanisms)
    for proposal in review.merges:
        named = set(proposal.findings)
        joined = [i for i in ideas if named & set(i.merged_from)]
        if len(joined) > 1:
            ideas = [i for i in ideas if i not in joined] + [combine(joined, profile,
                                                                     mechanisms)]
    ideas.sort(key=lambda i: (-i.score, -i.weight, i.id))
    by_id = {a.id: a for a in kept}
    idea_of = {fid: i.id for i in ideas for fid in i.merged_from}
    asked = [Question(q.question, by_id[q.finding], idea_of[q.finding])
             for q in review.questions[:limit] if q.finding in by_id]
    return Review(ideas, asked, rejected)


def combine(ideas: list[Idea], profile: Profile, mechanisms: MechanismTable = _EMPTY) -> Idea:
    """One idea from several: the strongest one's text, the union of the rest."""
    best = max(ideas, key=lambda i: (BASIS_STRENGTH[i.basis], i.confidence, len(i.evidence)))
    pcs = tuple(dict.fromkeys(pc for i in [best, *ideas] for pc in i.pcs))
    evidence = tuple(dict.fromkeys(e for i in [best, *ideas] for e in i.evidence))
    merged = tuple(dict.fromkeys(f for i in ideas for f in i.merged_from))
    tied = tuple(dict.fromkeys(m for i in ideas for m in i.mechanisms))
    shares = shares_of(profile, pcs, mechanisms, tied)
    return Idea(id=f"idea:{best.category}:{hex_pc(min(pcs))}", title=best.title,
                category=best.category, target=best.target, claim=best.claim,
                recommendation=best.recommendation, checks=best.checks,
                numbers=best.numbers, pcs=pcs,
                evidence=evidence,
                weight=shares.own, window_weight=shares.windows, pc_weight=shares.pcs,
                mechanisms=tied,
                confidence=max(i.confidence for i in ideas),
                basis=max((i.basis for i in ideas), key=BASIS_STRENGTH.__getitem__),
                merged_from=merged,
                questions=tuple(dict.fromkeys(q for i in ideas for q in i.questions)))


async def review_wave(backend, accepted: list[Accepted], store: EvidenceStore, wave: int,
                      limit: int, *, call_id: str | None = None) -> Review:
    """Ask the model, check its proposals, apply the valid ones. A failed review call
    falls back to the rule gatekeeper (its error kept)."""
    profile = store.profile
    mechanisms = store.workload.mechanisms
    rule_ideas = merge(accepted, profile, mechanisms)
    ctx = TurnContext(call_id or f"review.w{wave}", wave=wave, depth=wave)

    async def no_tools(name: str, _args: dict) -> ToolResult:
        return ToolResult("", error=f"no tools in a review ({name})")

    outcome = await backend.ask(review_task(accepted, rule_ideas, wave), no_tools, ctx)
    if outcome.output is None:
        return Review(rule_ideas, [], error=outcome.error or "review failed",
                      raw=outcome.raw, usage=outcome.usage)
    valid, dropped = check(outcome.output, accepted, store)
    result = apply(valid, accepted, profile, limit, mechanisms)
    result.dropped, result.raw, result.usage = dropped, outcome.raw, outcome.usage
    return result


def model_reviewer(backend):
    """The orchestrator's ``reviewer`` hook for ``--review model``."""
    async def reviewer(accepted: list[Accepted], store: EvidenceStore, wave: int,
                       limit: int) -> Review:
        return await review_wave(backend, accepted, store, wave, limit)

    return reviewer
