"""Accepted findings and the ideas the gatekeeper makes of them (formats.md §4)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core.contract.findings import Finding
from pcscope.core.ids import hex_pc
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
    weight: float
    pc_weight: float
    confidence: float
    basis: str
    merged_from: tuple[str, ...]
    questions: tuple[str, ...] = ()

    @property
    def score(self) -> float:
        return self.weight * self.confidence

    def to_json(self) -> dict:
        """Exactly the keys of a report idea (formats.md §4)."""
        return {
            "id": self.id,
            "title": self.title,
            "category": self.category,
            "target": self.target,
            "claim": self.claim,
            "recommendation": self.recommendation,
            "pcs": [hex_pc(pc) for pc in self.pcs],
            "evidence": list(self.evidence),
            "weight": round(self.weight, 6),
            "pc_weight": round(self.pc_weight, 6),
            "confidence": round(self.confidence, 3),
            "basis": self.basis,
            "merged_from": list(self.merged_from),
        }


def windows_of(profile: Profile, pcs: tuple[int, ...]) -> frozenset[int]:
    rows = [profile.row_of(pc) for pc in pcs]
    return frozenset(int(profile.window[r]) for r in rows if r is not None)


def weights_of(profile: Profile, pcs: tuple[int, ...]) -> tuple[float, float]:
    """(share of the windows holding ``pcs``, each once; share of the PCs themselves)."""
    if not profile.total:
        return 0.0, 0.0
    rows = [r for r in (profile.row_of(pc) for pc in pcs) if r is not None]
    windows = {int(profile.window[r]) for r in rows}
    window_value = int(np.sum(profile.windows.value[sorted(windows)])) if windows else 0
    pc_value = int(np.sum(profile.value[rows])) if rows else 0
    return window_value / profile.total, pc_value / profile.total
