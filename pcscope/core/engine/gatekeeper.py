"""The gatekeeper: merges duplicate findings into ideas, ranks them, and picks the open
questions that go one wave deeper.

One idea per mechanism. Two findings are duplicates (transitively) when they
- concern the same mechanism: both cite its ``mech:`` ID, or their PCs lie on its sites and
  their category is its category;
- or share a category and a function and the code shape (the mnemonics at their PCs);
- or share a category and a PC.
The merged idea keeps the text of the finding with the strongest evidence (basis, then
confidence, then evidence count), the union of PCs and evidence, and the IDs of every
finding merged into it. Ideas rank by their expected upside: own share (their PCs and their
mechanisms' sites, each instruction once) × the modelled penalty of their category
(penalties.py) × confidence.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pcscope.core.engine.ideas import BASIS_STRENGTH, Accepted, Idea, shares_of
from pcscope.core.ids import hex_pc
from pcscope.core.mechanisms import MechanismTable
from pcscope.core.profile import Profile

INDEX_KINDS = ("pc", "alp", "pat", "win", "fn", "guide", "mca", "mech")
_EMPTY = MechanismTable()


def merge(accepted: Iterable[Accepted], profile: Profile,
          mechanisms: MechanismTable = _EMPTY) -> list[Idea]:
    """Ideas from accepted findings, ranked (best first). Order-independent."""
    findings = sorted(accepted, key=lambda a: _order(a.id))
    tied = [mechanisms_of(a, mechanisms) for a in findings]
    groups = _groups(findings, tied, profile)
    ideas = [_idea(group, profile, mechanisms, tied_ids) for group, tied_ids in groups]
    return sorted(ideas, key=lambda i: (-i.score, -i.weight, i.id))


def mechanisms_of(a: Accepted, mechanisms: MechanismTable) -> tuple[str, ...]:
    """The mechanisms a finding is about: those it cites, and those on whose sites its PCs
    lie with the finding's category."""
    cited = [e for e in a.finding.evidence if e.startswith("mech:")]
    found = [m.id for pc in a.pcs for m in mechanisms.at(pc)
             if m.category == a.finding.category]
    return tuple(dict.fromkeys(cited + found))


def code_shape(a: Accepted, profile: Profile) -> tuple[str, tuple[str, ...]] | None:
    """(function, mnemonics at the finding's PCs in address order), or None when its PCs
    are not in the profile."""
    rows = sorted(r for r in (profile.row_of(pc) for pc in a.pcs) if r is not None)
    if not rows:
        return None
    function = profile.function_names[int(profile.function[rows[0]])] \
        if int(profile.function[rows[0]]) >= 0 else ""
    return function, tuple(profile.mnemonics[int(profile.mnemonic[r])] for r in rows)


def merge_reason(idea: Idea, findings: Iterable[Accepted], profile: Profile) -> str:
    """Why the gatekeeper made one idea of these findings, in the order it looks: one
    mechanism, one code shape in one function, or a PC they share."""
    if idea.mechanisms:
        return f"same mechanism {', '.join(idea.mechanisms)}"
    members = [a for a in findings if a.id in set(idea.merged_from)]
    shapes = {code_shape(a, profile) for a in members}
    if len(shapes) == 1 and None not in shapes:
        function = next(iter(shapes))[0] or "(no function)"  # type: ignore[index]
        return f"same category and code shape in {function}"
    shared = set.intersection(*(set(a.pcs) for a in members)) if members else set()
    if shared:
        return f"same category at {', '.join(hex_pc(pc) for pc in sorted(shared)[:3])}"
    return "same category, linked through other findings (shared PCs or shapes)"


def _order(finding_id: str) -> tuple:
    """Finding IDs sort by wave, call number, finding number (not as text: c10 > c9)."""
    parts = finding_id.removeprefix("finding:").split(".")
    return tuple(int(p[1:]) if p[1:].isdigit() else p for p in parts)


def _groups(findings: list[Accepted], tied: list[tuple[str, ...]],
            profile: Profile) -> list[tuple[list[Accepted], tuple[str, ...]]]:
    parent = list(range(len(findings)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    by_key: dict[tuple, int] = {}
    for i, a in enumerate(findings):
        keys: list[tuple] = [("pc", a.finding.category, pc) for pc in a.pcs]
        keys += [("mech", m) for m in tied[i]]
        shape = code_shape(a, profile)
        if shape is not None:
            keys.append(("shape", a.finding.category, *shape))
        for key in keys:
            if key in by_key:
                parent[root(i)] = root(by_key[key])
            else:
                by_key[key] = i
    groups: dict[int, tuple[list[Accepted], list[str]]] = {}
    for i, a in enumerate(findings):
        members, ids = groups.setdefault(root(i), ([], []))
        members.append(a)
        ids += tied[i]
    return [(members, tuple(dict.fromkeys(ids))) for members, ids in groups.values()]


def _idea(group: list[Accepted], profile: Profile, mechanisms: MechanismTable,
          tied: tuple[str, ...]) -> Idea:
    # Groups keep acceptance order, so the earliest of equally strong findings wins.
    best = max(group, key=lambda a: a.strength)
    pcs = _union([best.pcs] + [a.pcs for a in group])
    # Links to other calls' findings, sets and notes live in the record and in merged_from;
    # an idea's evidence keeps what resolves in the index itself.
    evidence = tuple(e for e in _union([tuple(best.finding.evidence)]
                                       + [tuple(a.finding.evidence) for a in group])
                     if e.partition(":")[0] in INDEX_KINDS)
    shares = shares_of(profile, pcs, mechanisms, tied)
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
        weight=shares.own,
        window_weight=shares.windows,
        pc_weight=shares.pcs,
        confidence=max(a.finding.confidence for a in group),
        basis=basis,
        merged_from=tuple(a.id for a in group),
        questions=questions,
        mechanisms=tied,
        removes=f.removes,
        checks=tuple(f.checks),
        numbers=f.numbers,
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
