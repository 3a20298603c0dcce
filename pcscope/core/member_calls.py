"""The calls a routine makes on every entry and where each leads, from exact counts.

A call (``bl``) or tail call (``b`` out of its function) run as often as the routine is
entered (up to EVERY fewer times: a null check may return first) is made on every entry.
It leads to the routine starting at its target or, when the target is a PLT stub or veneer
(the pattern pass's call-overhead hits, pcscope.core.patterns) or starts no routine, to the
routines entered about as often as the stub runs
(pcscope.core.stub_targets.Entries.near, the stub's callers left out): one, or several whose
counts the stub's cannot tell apart. A profile has no call graph; with exact counts this is
as far as one goes, so the caller decides what to make of several candidates (all of them
allocator routines, say). Read the other way (calls_into), the same leads give the calls
entering a set of routines from outside it: where a per-operation tree is entered from.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile
from pcscope.core.stub_targets import CLEAR, STUB_MATCH, Entries

EVERY = 0.01  # a call run on all but this part of the routine's entries runs on every entry


@dataclass(frozen=True)
class Callees:
    """Where the calls of the profile's routines lead (routine ``i`` starts at row
    ``firsts[i]``, is part of function ``codes[i]`` and is entered ``entries[i]`` times;
    a PLT stub or veneer starts at each row of ``stubs``)."""

    profile: Profile
    facts: CodeFacts
    codes: np.ndarray
    starting: dict[int, int]  # first row -> routine
    entries: Entries  # the routines' entry counts
    branches: np.ndarray  # the rows of direct branches, by ascending target
    targets: np.ndarray  # their targets, ascending
    stubs: frozenset[int]  # the first rows of the PLT stubs and veneers

    @classmethod
    def of(cls, profile: Profile, facts: CodeFacts, firsts: np.ndarray, codes: np.ndarray,
           entries: np.ndarray, stubs: frozenset[int]) -> Callees:
        branches = np.flatnonzero(facts.target >= 0)
        branches = branches[np.argsort(facts.target[branches], kind="stable")]
        return cls(profile, facts, codes, {row: i for i, row in enumerate(firsts.tolist())},
                   Entries.of(entries, np.arange(len(entries))), branches,
                   facts.target[branches], stubs)

    def every_entry(self, rows: np.ndarray, entries: int) -> list[list[int]]:
        """Per call the routine of ``rows`` (entered ``entries`` times) makes on every entry,
        the routines it may lead to, nearest first (empty: not known)."""
        p = self.profile
        return [self._leads_to(r) for r in rows.tolist()
                if int(p.samples[r]) >= (1 - EVERY) * entries and self._calls(r)]

    def calls_into(self, routines: set[int], outside: np.ndarray) -> list[tuple[int, list[int]]]:
        """The calls run at least once from rows where ``outside`` is set that lead only to
        ``routines``: per call row, the routines it may lead to (several when a stub's count
        cannot tell them apart)."""
        p, facts = self.profile, self.facts
        rows = np.flatnonzero((facts.target >= 0) & (p.samples > 0) & outside)
        # only a call to a routine's first row, or to a stub run about as often as one is
        # entered (Entries.near), can lead there: the rest never reach the per-row reading
        at = np.minimum(np.searchsorted(p.pc, facts.target[rows].astype(np.uint64)),
                        len(p.pc) - 1)
        hit = p.pc[at] == facts.target[rows].astype(np.uint64)
        rows, at = rows[hit], at[hit]
        ids = np.fromiter(routines, dtype=np.int64, count=len(routines))
        firsts = np.fromiter((row for row, i in self.starting.items() if i in routines),
                             dtype=np.int64)
        entered = np.sort(self.entries.counts[np.isin(self.entries.ids, ids)])
        counts = p.samples[at].astype(np.int64)
        lo = np.minimum(np.searchsorted(entered, counts), max(len(entered) - 1, 0))
        near = (entered[lo] >= counts) & (entered[lo] <= counts * (1 + CLEAR * STUB_MATCH)) \
            if len(entered) else np.zeros(len(rows), dtype=bool)
        out = []
        for r in rows[near | np.isin(at, firsts)].tolist():
            if self._calls(r) and (led := self._leads_to(r)) and set(led) <= routines:
                out.append((r, led))
        return out

    def _calls(self, row: int) -> bool:
        """Whether ``row`` is a call or a tail call."""
        target = int(self.facts.target[row])
        return target >= 0 and bool(self.facts.call[row] or self._tail_call(row, target))

    def _leads_to(self, row: int) -> list[int]:
        """The routines the call at ``row`` may lead to, nearest first (empty: not known)."""
        at = self.profile.row_of(int(self.facts.target[row]))
        if at is None:
            return []
        if at in self.starting and at not in self.stubs:  # a stub may be named (malloc@plt)
            return [self.starting[at]]
        return self.entries.near(int(self.profile.samples[at]), self._not_led_to(at))

    def _tail_call(self, row: int, target: int) -> bool:
        """Whether ``row`` is a ``b`` leaving its function for ``target``."""
        if self.facts.code.op(row).mnemonic != "b":
            return False
        at = self.profile.row_of(target)
        return at is None or int(self.profile.function[at]) != int(self.profile.function[row])

    def _not_led_to(self, at: int) -> set[int]:
        """The routines a stub at row ``at`` does not lead to, though entered as often as it
        runs: those of its own function and of the functions branching to it."""
        target = int(self.profile.pc[at])
        lo, hi = np.searchsorted(self.targets, [target, target + 1])
        functions = np.unique(np.r_[self.profile.function[self.branches[lo:hi]],
                                    self.profile.function[at]])
        return set(np.flatnonzero(np.isin(self.codes, functions)).tolist())
