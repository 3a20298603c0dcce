"""The gatekeeper: merges duplicate findings into ideas, ranks them, and picks the open
questions that go one wave deeper.

Two findings are duplicates when they share a category and overlap in PCs or windows, or
cite the same mechanism (``mech:`` ID), transitively. The merged idea keeps the text of the finding with the strongest evidence
(basis, then confidence, then evidence count), the union of PCs and evidence, and the IDs
of every finding merged into it. Ideas rank by weight × confidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pcscope.core.engine.ideas import BASIS_STRENGTH, Accepted, Idea, weights_of
from pcscope.core.ids import hex_pc, kind_of
from pcscope.core.profile import Profile

INDEX_KINDS = ("pc", "alp", "pat", "win", "fn", "guide", "mca", "mech")


def merge(accepted: Iterable[Accepted], profile: Profile) -> list[Idea]:
    """Ideas from accepted findings, ranked (best first). Order-independent."""
    findings = sorted(accepted, key=lambda a: _order(a.id))
    groups = _groups(findings)
    ideas = [_idea(group, profile) for group in groups]
    return sorted(ideas, key=lambda i: (-i.score, -i.weight, i.id))


def _order(finding_id: str) -> tuple:
    """Finding IDs sort by wave, call number, finding number (not as text: c10 > c9)."""
    parts = finding_id.removeprefix("finding:").split(".")
    return tuple(int(p[1:]) if p[1:].isdigit() else p for p in parts)


def _groups(findings: list[Accepted]) -> list[list[Accepted]]:
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_key: dict[tuple, int] = {}
    for i, a in enumerate(findings):
        keys: list[tuple] = [("pc", a.finding.category, pc) for pc in a.pcs]
        keys += [("win", a.finding.category, w) for w in a.windows]
        # Findings that cite one mechanism are one idea, whatever their category.
        keys += [("mech", e) for e in a.finding.evidence if e.startswith("mech:")]
        for key in keys:
            if key in by_key:
                parent[root(i)] = root(by_key[key])
            else:
                by_key[key] = i
    groups: dict[int, list[Accepted]] = {}
    for i, a in enumerate(findings):
        groups.setdefault(root(i), []).append(a)
    return list(groups.values())


def _idea(group: list[Accepted], profile: Profile) -> Idea:
    # Groups keep acceptance order, so the earliest of equally strong findings wins.
    best = max(group, key=lambda a: a.strength)
    pcs = _union([best.pcs] + [a.pcs for a in group])
    # Links to other calls' findings, sets and notes live in the record and in merged_from;
    # an idea's evidence keeps what resolves in the index itself.
    evidence = tuple(e for e in _union([tuple(best.finding.evidence)]
                                       + [tuple(a.finding.evidence) for a in group])
                     if kind_of(e) in INDEX_KINDS)
    weight, pc_weight = weights_of(profile, pcs)
    f = best.finding
    basis = max((a.finding.basis for a in group), key=BASIS_STRENGTH.__getitem__)
    questions = _union([tuple(a.finding.questions) for a in group])
    return Idea(
        id=f"idea:{f.category}:{hex_pc(min(pcs))}",
        title=f.title,
        category=f.category,
        target=f.target,
        claim=f.claim,
        recommendation=f.recommendation,
        pcs=pcs,
        evidence=evidence,
        weight=weight,
        pc_weight=pc_weight,
        confidence=max(a.finding.confidence for a in group),
        basis=basis,
        merged_from=tuple(a.id for a in group),
        questions=questions,
    )


def _union(parts: list[tuple]) -> tuple:
    seen: dict = {}
    for part in parts:
        for item in part:
            seen.setdefault(item, None)
    return tuple(seen)


@dataclass(frozen=True)
class Question:
    text: str
    finding: Accepted
    idea: str


def questions(ideas: list[Idea], fresh: Iterable[Accepted], limit: int) -> list[Question]:
    """Open questions of this wave's accepted findings, in idea rank order, one per
    distinct text, at most ``limit``."""
    by_id = {a.id: a for a in fresh}
    out: list[Question] = []
    seen: set[str] = set()
    for idea in ideas:
        for fid in idea.merged_from:
            finding = by_id.get(fid)
            if finding is None:
                continue
            for text in finding.finding.questions:
                key = " ".join(text.lower().split())
                if key in seen or len(out) >= limit:
                    continue
                seen.add(key)
                out.append(Question(text, finding, idea.id))
    return out
