"""A mechanism as the tools hand it to an analyst, and as the offline advice reads it back.

The ``window`` and ``mechanisms`` tools give each mechanism as builtins (JSON for a model);
the offline advice converts those once per idea into this type, so the tools' data and the
advice's reading of it have one shape: its kind, own share, the hottest sites' PCs, its
functions, metrics, checks and typed values (pcscope.core.mechanisms.Values).
"""

from __future__ import annotations

from typing import Any

import msgspec

from pcscope.core.mechanism_values import V, Values, value_of
from pcscope.core.mechanisms import Mechanism, Metric

FUNCTIONS, SITES = 8, 12  # functions and sites handed over: the heaviest


class MechanismData(msgspec.Struct, frozen=True):
    id: str
    kind: str
    category: str
    share: float
    sites: int  # how many sites it has (``site_pcs`` holds the heaviest)
    functions: tuple[str, ...]
    site_pcs: tuple[tuple[int, ...], ...]  # each site's key PC, then its other PCs
    metrics: tuple[Metric, ...]
    checks: tuple[str, ...]
    values: tuple[Values, ...]

    def value(self, of: type[V]) -> V | None:
        return value_of(self.values, of)


def data_of(m: Mechanism) -> MechanismData:
    return MechanismData(
        m.id, m.kind, m.category, m.share, len(m.sites), m.functions[:FUNCTIONS],
        tuple((s.pc, *[p for p in s.pcs if p != s.pc]) for s in m.sites[:SITES]),
        m.metrics, m.checks, m.values)


def builtins_of(m: Mechanism) -> dict[str, Any]:
    """The tools' data: ``data_of(m)`` as builtins (None where there is none)."""
    data: dict[str, Any] = msgspec.to_builtins(data_of(m))
    return data


def read(data: dict[str, Any]) -> MechanismData:
    """The tools' data back as its type (what the offline advice reads)."""
    return msgspec.convert(data, MechanismData)
