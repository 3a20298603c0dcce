"""Per-operation call trees from exact counts: many functions entered as often as each other.

With exact execution counts, a program that performs one operation over and over (a digest
per buffer, a request per connection) enters the functions of that operation's call tree
exactly once per operation, or a whole number of times: a group of at least COHORT_FUNCTIONS
functions with one entry count ``B`` names the operations, and every function entered
``k × B`` times (k ≤ MULTIPLES) or up to EXCESS more belongs to the same tree: start-up and
callers outside the tree only add entries, never remove them. The small functions of that tree (at most PLUMBING instructions per call: context
set-up and teardown, wrappers, parameter lookups, allocation, clears) are what every
operation pays besides its work; a longer function does the operation's work (a crypto or
compression kernel) and is left out. Sampled counts rarely give many functions one exact
entry count, so this finds nothing there. No name is read to find a tree; the report names
the C allocator's routines among its members by their standard symbols, since allocation per
operation is the first thing an owner can remove.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pcscope.core.mechanisms import Metric
from pcscope.core.profile import Profile

COHORT_FUNCTIONS = 8  # functions with one exact entry count that make a per-operation tree
MIN_OPERATIONS = 1000  # an entry count below this is a set-up path, not repeated operations
MULTIPLES = 8  # entries per operation a member may have
# entries a member may have beyond k × operations, relative: start-up and callers outside the
# tree add some (openssl's malloc and free are entered 0.4 % more than twice per digest), while a
# function of another tree whose count is near a multiple only by chance rarely lands this close
EXCESS = 0.01
PLUMBING = 256  # instructions per call above which a function does the operation's work
COHORT_SHARE = 0.02  # share of the total the tree's plumbing needs to be worth an idea
# the C allocator's entry points, allocation before release (the order they are reported in);
# glibc exports ``__libc_malloc`` and friends as aliases
_ALLOCATOR_ROUTINES = ("malloc", "calloc", "realloc", "reallocarray", "aligned_alloc",
                       "posix_memalign", "memalign", "valloc", "pvalloc", "free")
_ALLOCATOR = re.compile(r"^(?:__libc_)?(" + "|".join(_ALLOCATOR_ROUTINES) + r")$")


@dataclass(frozen=True)
class Member:
    code: int
    per_operation: int  # k: entries per operation
    rows: tuple[int, ...]  # its rows not claimed by another mechanism
    per_call: float  # instructions per entry


@dataclass(frozen=True)
class Cohort:
    operations: int
    members: tuple[Member, ...]
    instructions: int  # executions of the members' rows

    @property
    def rows(self) -> list[int]:
        return [r for m in self.members for r in m.rows]


def entry_counts(profile: Profile) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(the codes of the functions with rows, their first rows, their entry counts)."""
    groups = profile.functions.groups
    codes = np.flatnonzero(groups.sizes() > 0)
    first = groups.rows[groups.offsets[codes]]
    return codes, first, profile.samples[first].astype(np.int64)


def find(profile: Profile, claimed: np.ndarray) -> list[Cohort]:
    """Every per-operation tree whose plumbing holds COHORT_SHARE of the total; ``claimed``
    marks the rows other mechanisms count (a row is counted once)."""
    codes, _first, entries = entry_counts(profile)
    work = profile.functions.groups.sums(profile.samples)[codes]
    groups = Counter(entries[entries >= MIN_OPERATIONS].tolist())
    bases = sorted((b for b, n in groups.items() if n >= COHORT_FUNCTIONS),
                   key=lambda b: (-groups[b], b))
    free = np.ones(len(codes), dtype=bool)
    out = []
    for base in bases:
        k = entries // base
        near = free & (k >= 1) & (k <= MULTIPLES) & (entries - k * base <= EXCESS * k * base)
        members = []
        for i in np.flatnonzero(near).tolist():
            free[i] = False
            per_call = int(work[i]) / int(entries[i])
            rows = [r for r in profile.function_rows(int(codes[i])).tolist() if not claimed[r]]
            if per_call <= PLUMBING and rows:
                members.append(Member(int(codes[i]), int(k[i]), tuple(rows), round(per_call, 1)))
        cohort = Cohort(base, tuple(members),
                        int(sum(int(profile.samples[list(m.rows)].sum()) for m in members)))
        if len(members) >= COHORT_FUNCTIONS and \
                float(profile.value[cohort.rows].sum()) >= COHORT_SHARE * profile.total:
            out.append(cohort)
    return out


def metrics(cohort: Cohort) -> list[Metric]:
    calls = sum(m.per_operation for m in cohort.members)
    return [
        Metric("operations", cohort.operations, "executions",
               "the entry count shared by the tree's functions"),
        Metric("functions per operation", len(cohort.members), "functions",
               f"functions entered k × operations times (k ≤ {MULTIPLES}), at most "
               f"{PLUMBING} instructions per call"),
        Metric("calls per operation", calls, "calls", "sum of their k"),
        Metric("instructions per operation", round(cohort.instructions / cohort.operations),
               "instructions", "their instruction executions / operations"),
        Metric("instructions per call", round(cohort.instructions / cohort.operations / calls, 1),
               "instructions", "instructions per operation / calls per operation"),
    ]


def checks(cohort: Cohort, name: Callable[[int], str]) -> list[str]:
    once = sum(1 for m in cohort.members if m.per_operation == 1)
    top = sorted(cohort.members, key=lambda m: -m.per_operation * m.per_call)[:8]
    return [f"{once} functions entered once per operation ({cohort.operations:,} times, "
            f"or up to {EXCESS:.0%} more) and {len(cohort.members) - once} more a whole number of "
            f"times per operation (exact counts: one call tree per operation)",
            f"functions doing the work (over {PLUMBING} instructions per call) left out; rows "
            f"other mechanisms count left out",
            "heaviest: " + ", ".join(f"{name(m.code)} ({m.per_operation}× per operation, "
                                     f"{m.per_call:g} instructions per call)" for m in top),
            *_allocations(cohort, name)]


def _allocations(cohort: Cohort, name: Callable[[int], str]) -> list[str]:
    """The check naming the members that are C allocator routines, with their calls and
    instructions per operation; none when no member is one."""
    found = sorted(((m, match.group(1)) for m in cohort.members
                    if (match := _ALLOCATOR.match(name(m.code)))),
                   key=lambda found: _ALLOCATOR_ROUTINES.index(found[1]))
    if not found:
        return []
    instructions = sum(m.per_operation * m.per_call for m, _ in found)
    return [f"C allocator calls per operation (by symbol name): "
            f"{' + '.join(f'{m.per_operation} {routine}' for m, routine in found)} = "
            f"{instructions:,.0f} instructions"]
