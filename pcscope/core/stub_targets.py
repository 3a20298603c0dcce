"""Where a PLT stub leads, from exact counts: the function of another module entered as often.

A profile has no call graph, but with exact counts a stub runs once per call through it, and
the function it leads to is entered at least that often (its own module may call it directly
too: glibc's ``malloc`` is entered a few times more than libcrypto's stub to it). A stub leads
to a function of another module when that function's entry count is at least the stub's and
within STUB_MATCH of it, and clearly closer than any other function of any module (the next gap at
least CLEAR times larger); otherwise nothing is claimed. Names do not matter, so hidden
routines (an ifunc's ``<unknown_NN>`` memset) are matched like exported ones.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from pcscope.core.call_cohorts import entry_counts
from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile

STUB_MATCH = 0.001  # entry count at most this much above the stub's count
CLEAR = 5.0  # the next candidate's gap at least this many times the best one's


@dataclass(frozen=True)
class Target:
    function: str
    module: str
    entries: int


def stub_targets(profile: Profile, facts: CodeFacts, stubs: dict[int, int]) -> dict[int, Target]:
    """``stubs``: the ``br`` row of each stub -> the stub's first PC. Returns the stubs that
    lead to a function of another module, with that function. A function that calls or
    tail-calls the stub is not its target (a wrapper is entered as often as what it wraps:
    ``CRYPTO_malloc`` calls ``malloc`` once per call)."""
    callers = _callers(profile, facts, set(stubs.values()))
    codes, first, entries = entry_counts(profile)
    if not len(codes):
        return {}
    module = profile.module[first]
    order = np.argsort(entries, kind="stable")
    entries, first, module = entries[order], first[order], module[order]
    code_of = codes[order]
    out = {}
    for row, start in stubs.items():
        mod = int(profile.module[row])
        calls = int(profile.samples[row])
        if not calls:
            continue
        lo = int(np.searchsorted(entries, calls, "left"))
        hi = int(np.searchsorted(entries, calls * (1 + CLEAR * STUB_MATCH), "right"))
        mine = callers.get(start, set()) | {int(profile.function[row])}  # not the stubs' own
        near = sorted((int(entries[i]) - calls, i) for i in range(lo, hi)
                      if int(code_of[i]) not in mine)
        if not near or near[0][0] > STUB_MATCH * calls or \
                (len(near) > 1 and near[1][0] < CLEAR * max(near[0][0], 1)):
            continue
        i = near[0][1]
        m = int(module[i])
        if m == mod:
            continue  # the module's own export
        out[row] = Target(profile.function_names[int(code_of[i])],
                          profile.modules[m] if m >= 0 else "", int(entries[i]))
    return out


def _callers(profile: Profile, facts: CodeFacts, starts: set[int]) -> dict[int, set[int]]:
    """Stub start PC -> the function codes of the branches (calls or jumps) to it."""
    rows = np.flatnonzero(np.isin(facts.target, np.fromiter(starts, dtype=np.int64)))
    out: dict[int, set[int]] = {}
    for r, t in zip(rows.tolist(), facts.target[rows].tolist(), strict=True):
        out.setdefault(t, set()).add(int(profile.function[r]))
    return out
