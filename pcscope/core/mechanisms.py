"""Mechanisms: pattern sites grouped into the one thing an engineer would fix.

A mechanism is, say, every dispatch site of one interpreter loop, every PLT stub with the
calls that reach it, every use of one outline-atomic helper family, or one spin loop and
its callers. Its share is its own (summed over its sites' instructions, each counted once),
never the share of the windows around it. IDs are ``mech:<kind>:<anchor pc>``.

This module holds the values only; the finder that builds them from a profile and its
pattern table lives beside it, and the index stores them with the profile.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cached_property

from pcscope.core.ids import hex_pc


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

    @property
    def id(self) -> str:
        return mech_id(self.kind, self.anchor)

    @property
    def pcs(self) -> tuple[int, ...]:
        return tuple(sorted({pc for site in self.sites for pc in site.pcs}))


@dataclass(frozen=True)
class MechanismTable:
    """Every mechanism of a workload, heaviest first."""

    mechanisms: tuple[Mechanism, ...] = ()

    def __len__(self) -> int:
        return len(self.mechanisms)

    def __iter__(self) -> Iterator[Mechanism]:
        return iter(self.mechanisms)

    def get(self, mechanism_id: str) -> Mechanism | None:
        return next((m for m in self.mechanisms if m.id == mechanism_id), None)

    def at(self, pc: int) -> list[Mechanism]:
        """The mechanisms one of whose sites holds ``pc`` (heaviest first)."""
        return [self.mechanisms[i] for i in self._by_pc.get(pc, ())]

    @cached_property
    def _by_pc(self) -> dict[int, tuple[int, ...]]:
        out: dict[int, list[int]] = {}
        for i, m in enumerate(self.mechanisms):
            for pc in m.pcs:
                out.setdefault(pc, []).append(i)
        return {pc: tuple(ix) for pc, ix in out.items()}


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
