"""An idea as the explorer shows it: typed once where report-form ideas (docs/formats.md
§4: from the engine's events, its result or the session store) enter the UI."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class ShownIdea:
    id: str
    title: str
    category: str
    target: str
    claim: str
    recommendation: str
    pcs: tuple[str, ...]
    evidence: tuple[str, ...]
    weight: float  # own share
    window_weight: float
    upside: float
    upside_how: str
    confidence: float
    basis: str
    mechanisms: tuple[str, ...]
    merged_from: tuple[str, ...]
    checks: tuple[str, ...] = ()  # the checks backing the claim, the items it left out
    numbers: str = ""  # what its numbers are and what they cannot tell

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ShownIdea:
        """Keys a report of an older format lacks (``window_weight``, ``mechanisms``,
        ``upside``, ``checks``, ``numbers``) read as empty."""
        return cls(
            id=data["id"], title=data.get("title", ""), category=data.get("category", ""),
            target=data.get("target", ""), claim=data.get("claim", ""),
            recommendation=data.get("recommendation", ""), pcs=tuple(data.get("pcs", ())),
            evidence=tuple(data.get("evidence", ())), weight=float(data.get("weight", 0.0)),
            window_weight=float(data.get("window_weight", 0.0)),
            upside=float(data.get("upside", 0.0)), upside_how=data.get("upside_how", ""),
            confidence=float(data.get("confidence", 0.0)), basis=data.get("basis", ""),
            mechanisms=tuple(data.get("mechanisms", ())),
            merged_from=tuple(data.get("merged_from", ())),
            checks=tuple(data.get("checks", ())), numbers=data.get("numbers", ""),
        )

    @property
    def evidence_links(self) -> list[str]:
        """Its mechanisms, then its evidence, each once."""
        return list(dict.fromkeys([*self.mechanisms, *self.evidence]))
