"""Mechanisms: pattern sites grouped into the one thing an engineer would fix.

A mechanism is, say, every dispatch site of one interpreter loop, every PLT stub with the
calls that reach it, every use of one outline-atomic helper family, or one spin loop and
its callers. Its share is its own (summed over its sites' instructions, each counted once),
never the share of the windows around it. IDs are ``mech:<kind>:<anchor pc>``.

This module holds the values only; the finder that builds them from a profile and its
pattern table lives beside it, and the index stores them with the profile.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

# The values' types are msgspec Structs: named through the package (``values`` below), they
# load msgspec only where a mechanism is built or decoded (pcscope.index.mechanism_store
# imports them first), not in a command that only names the mechanisms at a PC.
import pcscope.core
from pcscope.core.ids import hex_pc

if TYPE_CHECKING:
    import pcscope.core.mechanism_values
    from pcscope.core.mechanism_values import V


def mech_id(kind: str, anchor: int) -> str:
    return f"mech:{kind}:{hex_pc(anchor)}"


@dataclass(frozen=True)
class Metric:
    """A figure computed from the profile's own counts (e.g. taken rate, trips per entry)."""

    name: str
    value: float
    unit: str  # "%", "x", "instructions", "calls", ...
    how: str  # one line: which counts it came from


@dataclass(frozen=True)
class Site:
    """One place the mechanism happens: its key instruction and the instructions counted."""

    pc: int
    function: str
    pcs: tuple[int, ...]
    share: float  # sum over ``pcs`` / profile total


@dataclass(frozen=True)
class Mechanism:
    kind: str  # e.g. "dispatch", "plt", "outline-atomic", "llsc", "spin-wait", "pointer-chase"
    category: str  # the idea category it maps to (pcscope.core.contract.categories)
    anchor: int  # the PC that names it: the hottest site's key instruction
    sites: tuple[Site, ...]
    functions: tuple[str, ...]
    share: float  # own share: every instruction of every site counted once
    metrics: tuple[Metric, ...] = ()
    checks: tuple[str, ...] = ()  # code-shape checks that passed (why we believe it)
    # the values its advice names that no metric holds (lists of named parts, registers,
    # instructions), at most one of each type: the kind's own (a tree's callers, a chase's
    # budget, ...) and what any loop mechanism may carry besides (its recomputed work, its
    # nest); read with ``value``
    values: tuple[pcscope.core.mechanism_values.Values, ...] = ()

    def value(self, of: type[V]) -> V | None:
        """The value of type ``of`` it carries (None: none)."""
        return next((v for v in self.values if isinstance(v, of)), None)

    @property
    def id(self) -> str:
        return mech_id(self.kind, self.anchor)

    @property
    def pcs(self) -> tuple[int, ...]:
        return tuple(sorted({pc for site in self.sites for pc in site.pcs}))


@dataclass(frozen=True)
class MechanismSites:
    """Which mechanisms hold each PC: (PC, table position) pairs in ascending order, and
    every mechanism's ID by position. An index stores them beside its mechanisms, so the
    mechanisms at one PC are named without decoding the table (`pcscope show`)."""

    ids: tuple[str, ...]
    pc: np.ndarray  # uint64, ascending
    position: np.ndarray  # int32: table position of the mechanism holding ``pc[i]``

    @classmethod
    def of(cls, mechanisms: Sequence[Mechanism]) -> MechanismSites:
        pairs = sorted({(pc, i) for i, m in enumerate(mechanisms)
                        for site in m.sites for pc in site.pcs})
        return cls(tuple(m.id for m in mechanisms),
                   np.array([pc for pc, _ in pairs], dtype=np.uint64),
                   np.array([i for _, i in pairs], dtype=np.int32))

    def positions(self, pc: int) -> list[int]:
        """Table positions of the mechanisms holding ``pc``, ascending (heaviest first)."""
        if not 0 <= pc < 1 << 64:
            return []
        key = np.uint64(pc)
        lo, hi = np.searchsorted(self.pc, key, "left"), np.searchsorted(self.pc, key, "right")
        return [int(i) for i in self.position[lo:hi]]


class MechanismTable:
    """Every mechanism of a workload, heaviest first.

    Made in memory from ``mechanisms``, or reopened from an index from its ``sites`` and a
    ``decode`` that makes the mechanisms on first use: counting them and naming those at a
    PC (``ids_at``) decode nothing (an 800 KB table took a third of `pcscope show`)."""

    def __init__(self, mechanisms: Sequence[Mechanism] = (), *,
                 sites: MechanismSites | None = None,
                 decode: Callable[[], tuple[Mechanism, ...]] | None = None) -> None:
        self._mechanisms = tuple(mechanisms) if decode is None else None
        self._decode = decode
        self._sites = sites

    @property
    def mechanisms(self) -> tuple[Mechanism, ...]:
        if self._mechanisms is None:
            assert self._decode is not None  # a table without mechanisms has a decode
            self._mechanisms = self._decode()
        return self._mechanisms

    @property
    def sites(self) -> MechanismSites:
        if self._sites is None:
            self._sites = MechanismSites.of(self.mechanisms)
        return self._sites

    def __len__(self) -> int:
        return len(self.sites.ids)

    def __iter__(self) -> Iterator[Mechanism]:
        return iter(self.mechanisms)

    def get(self, mechanism_id: str) -> Mechanism | None:
        ids = self.sites.ids
        return self.mechanisms[ids.index(mechanism_id)] if mechanism_id in ids else None

    def at(self, pc: int) -> list[Mechanism]:
        """The mechanisms one of whose sites holds ``pc`` (heaviest first)."""
        return [self.mechanisms[i] for i in self.sites.positions(pc)]

    def ids_at(self, pc: int) -> list[str]:
        """The IDs of ``at(pc)``, without decoding a reopened table."""
        return [self.sites.ids[i] for i in self.sites.positions(pc)]


def describe(mechanism: Mechanism) -> str:
    """A short rendering: kind, share, sites, functions, metrics, checks."""
    lines = [f"{mechanism.id}: {mechanism.kind} ({mechanism.category}), own share "
             f"{mechanism.share:.3%} over {len(mechanism.sites)} site(s), "
             f"{len(mechanism.pcs)} instruction(s)"]
    lines.append("functions: " + ", ".join(mechanism.functions[:8]))
    for metric in mechanism.metrics:
        lines.append(f"{metric.name}: {number(metric.value)} {metric.unit} ({metric.how})")
    for check in mechanism.checks:
        lines.append(f"check: {check}")
    for site in mechanism.sites[:8]:
        lines.append(f"site {hex_pc(site.pc)} in {site.function}: {len(site.pcs)} "
                     f"instruction(s), {site.share:.3%}")
    return "\n".join(lines)


def number(value: float) -> str:
    """``13791590`` -> ``13,791,590``; ``37.8`` stays ``37.8``."""
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.4g}"
