"""Accepted findings and the ideas the gatekeeper makes of them (docs/formats.md §4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core.contract.findings import Finding
from pcscope.core.engine.penalties import Penalty, penalty
from pcscope.core.ids import hex_pc
from pcscope.core.mechanisms import MechanismTable
from pcscope.core.profile import Profile

BASIS_STRENGTH = {"measured": 2, "predicted": 1, "profile-only": 0}


def finding_id(call: str, n: int) -> str:
    return f"finding:{call}.f{n}"


@dataclass(frozen=True)
class Accepted:
    """A finding that passed validation, with its PCs parsed and their windows."""

    id: str  # finding:<call>.f<n>
    call: str
    wave: int
    model: str
    finding: Finding
    pcs: tuple[int, ...]
    windows: frozenset[int]

    @property
    def strength(self) -> tuple:
        """Which of several duplicate findings carries the strongest evidence."""
        f = self.finding
        return (BASIS_STRENGTH[f.basis], f.confidence, len(f.evidence))

    def to_json(self) -> dict:
        return {"id": self.id, "call": self.call, "wave": self.wave, "model": self.model,
                **self.finding.model_dump()}


@dataclass(frozen=True)
class Idea:
    id: str
    title: str
    category: str
    target: str
    claim: str
    recommendation: str
    pcs: tuple[int, ...]
    evidence: tuple[str, ...]
    weight: float  # own share: its PCs and its mechanisms' sites, each counted once
    window_weight: float  # share of the windows holding its PCs and mechanism sites, each once
    pc_weight: float  # share of its cited PCs alone
    confidence: float
    basis: str
    merged_from: tuple[str, ...]
    questions: tuple[str, ...] = ()
    mechanisms: tuple[str, ...] = ()  # mech: IDs it is about
    removes: float | None = None  # of the own share the recommendation deletes outright
    checks: tuple[str, ...] = ()  # the claim's checks and the items it left out
    numbers: str = ""  # what its numbers are and what they cannot tell

    @property
    def penalty(self) -> Penalty:
        return penalty(self.category)

    @property
    def score(self) -> float:
        """The expected upside: own share × modelled penalty × confidence, where advice
        that deletes instructions gives back their part of the share instead of the
        penalty of the category (whose usual fix the advice may have ruled out)."""
        fraction = self.removes if self.removes is not None else self.penalty.fraction
        return self.weight * fraction * self.confidence

    def upside_how(self) -> str:
        if self.removes is not None:
            return (f"own share {self.weight:.2%} × {self.removes:.2f} (the part of it the "
                    f"recommendation deletes) × confidence {self.confidence:.2f}")
        return (f"own share {self.weight:.2%} × modelled penalty {self.penalty.fraction:.2f} "
                f"({self.category}: {self.penalty.why}) × confidence {self.confidence:.2f}")

    def to_json(self) -> dict:
        """Exactly the keys of a report idea (docs/formats.md §4)."""
        return {
            "id": self.id,
            "title": self.title,
            "category": self.category,
            "target": self.target,
            "claim": self.claim,
            "numbers": self.numbers,
            "recommendation": self.recommendation,
            "checks": list(self.checks),
            "pcs": [hex_pc(pc) for pc in self.pcs],
            "evidence": list(self.evidence),
            "weight": round(self.weight, 6),
            "window_weight": round(self.window_weight, 6),
            "pc_weight": round(self.pc_weight, 6),
            "mechanisms": list(self.mechanisms),
            "upside": round(self.score, 6),
            "upside_how": self.upside_how(),
            "confidence": round(self.confidence, 3),
            "basis": self.basis,
            "merged_from": list(self.merged_from),
        }


def windows_of(profile: Profile, pcs: tuple[int, ...]) -> frozenset[int]:
    rows = [profile.row_of(pc) for pc in pcs]
    return frozenset(int(profile.window[r]) for r in rows if r is not None)


@dataclass(frozen=True)
class Shares:
    own: float  # the PCs and the mechanisms' sites, each instruction once
    windows: float  # the windows holding the PCs and the mechanisms' sites, each once
    pcs: float  # the PCs alone


def shares_of(profile: Profile, pcs: tuple[int, ...], mechanisms: MechanismTable,
              mechanism_ids: tuple[str, ...]) -> Shares:
    if not profile.total:
        return Shares(0.0, 0.0, 0.0)
    rows = [r for r in (profile.row_of(pc) for pc in pcs) if r is not None]
    own_pcs = {pc for i in mechanism_ids if (m := mechanisms.get(i)) is not None
               for pc in m.pcs}
    own_rows = set(rows) | {r for r in (profile.row_of(pc) for pc in own_pcs) if r is not None}
    # The windows of every instruction the own share counts, so a mechanism's windows are
    # never smaller than its own share (an idea cites a few of its 400 stubs' PCs).
    windows = sorted({int(profile.window[r]) for r in own_rows})
    window_value = int(np.sum(profile.windows.value[windows])) if windows else 0
    pc_value = int(np.sum(profile.value[rows])) if rows else 0
    own_value = int(np.sum(profile.value[sorted(own_rows)])) if own_rows else 0
    total = profile.total
    return Shares(own_value / total, window_value / total, pc_value / total)
