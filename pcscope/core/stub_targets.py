"""Where a PLT stub leads, from exact counts: the function of another module entered as often.

A profile has no call graph, but with exact counts a stub runs once per call through it, and
the function it leads to is entered at least that often (its own module may call it directly
too: glibc's ``malloc`` is entered a few times more than libcrypto's stub to it). A stub leads
to a function of another module when that function's entry count is at least the stub's and
within STUB_MATCH of it, and clearly closer than any other function of any module (the next gap at
least CLEAR times larger); otherwise nothing is claimed. Names do not matter, so hidden
routines (an ifunc's ``<unknown_NN>`` memset) are matched like exported ones. Where one of
several near functions would do (all of them allocator routines, say), ``Entries.near``
gives them all.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile

STUB_MATCH = 0.001  # entry count at most this much above the stub's count
CLEAR = 5.0  # the next candidate's gap at least this many times the best one's


@dataclass(frozen=True)
class Target:
    function: str
    module: str
    entries: int


@dataclass(frozen=True)
class Entries:
    """Entry counts of some code (functions, or routines), ascending, with what each is."""

    counts: np.ndarray  # int64, ascending
    ids: np.ndarray  # what each count is the entry count of (a function code, a routine)

    @classmethod
    def of(cls, counts: np.ndarray, ids: np.ndarray) -> Entries:
        order = np.argsort(counts, kind="stable")
        return cls(counts[order], ids[order])

    def near(self, calls: int, exclude: set[int]) -> list[int]:
        """The ids a stub run ``calls`` times may lead to, nearest first: the one entered
        least above ``calls`` (within STUB_MATCH) and every other within CLEAR times its
        gap; ``exclude``\\ d ids (the stub's callers) never. Empty when none is near."""
        lo = int(np.searchsorted(self.counts, calls, "left"))
        hi = int(np.searchsorted(self.counts, calls * (1 + CLEAR * STUB_MATCH), "right"))
        near = sorted((int(self.counts[i]) - calls, int(self.ids[i])) for i in range(lo, hi)
                      if int(self.ids[i]) not in exclude)
        if not near or near[0][0] > STUB_MATCH * calls:
            return []
        return [i for gap, i in near if gap < CLEAR * max(near[0][0], 1)]


def entry_counts(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the codes of the functions with rows, their first rows, their entry counts)."""
    groups = profile.functions.groups
    codes = np.flatnonzero(groups.sizes() > 0)
    first = groups.rows[groups.offsets[codes]]
    return codes, first, profile.samples[first].astype(np.int64)


def stub_targets(profile: Profile, facts: CodeFacts, stubs: dict[int, int]) -> dict[int, Target]:
    """``stubs``: the ``br`` row of each stub -> the stub's first PC. Returns the stubs that
    lead to a function of another module, with that function. A function that calls or
    tail-calls the stub is not its target (a wrapper is entered as often as what it wraps:
    ``CRYPTO_malloc`` calls ``malloc`` once per call)."""
    callers = _callers(profile, facts, set(stubs.values()))
    codes, first, entries = entry_counts(profile)
    if not len(codes):
        return {}
    by_entries = Entries.of(entries, codes)
    out = {}
    for row, start in stubs.items():
        calls = int(profile.samples[row])
        if not calls:
            continue
        mine = callers.get(start, set()) | {int(profile.function[row])}  # not the stubs' own
        near = by_entries.near(calls, mine)
        if len(near) != 1:
            continue
        at = int(first[np.searchsorted(codes, near[0])])
        m = int(profile.module[at])
        if m == int(profile.module[row]):
            continue  # the module's own export
        out[row] = Target(profile.function_names[near[0]],
                          profile.modules[m] if m >= 0 else "", int(profile.samples[at]))
    return out


def _callers(profile: Profile, facts: CodeFacts, starts: set[int]) -> dict[int, set[int]]:
    """Stub start PC -> the function codes of the branches (calls or jumps) to it."""
    rows = np.flatnonzero(np.isin(facts.target, np.fromiter(starts, dtype=np.int64)))
    out: dict[int, set[int]] = {}
    for r, t in zip(rows.tolist(), facts.target[rows].tolist(), strict=True):
        out.setdefault(t, set()).add(int(profile.function[r]))
    return out
