"""Per-operation call trees from exact counts: many functions entered as often as each other.

With exact execution counts, a program that performs one operation over and over (a digest
per buffer, a request per connection) enters the functions of that operation's call tree
exactly once per operation, or a whole number of times: at least BASE_FUNCTIONS functions
whose entry counts chain within BASE_SPREAD of each other name the operations ``B`` (the
smallest of those counts: start-up and callers outside the tree only add entries, never
remove them), and every function entered ``k × B`` times (k ≤ MULTIPLES) or up to EXCESS
more belongs to the same tree; at least COHORT_FUNCTIONS members make one. A small function
entered ``k1 × B1 + k2 × B2`` times is shared by two trees and split between them.

Members are routines, not symbols: a hidden label can cover several assembly routines (a
key expansion, then a block encrypt), so a function is split after each ``ret`` that no
branch of its own jumps past (Routines). The small routines of a tree (at most PLUMBING
instructions per call: context set-up and teardown, wrappers, parameter lookups,
allocation, clears) are what every operation pays besides its work; a longer one does the
operation's work (a crypto or compression kernel) and is left out, and a tree whose members
average over PLUMBING_MEAN instructions per call is the work split over functions, not
plumbing. A vector or crypto-extension member of at least SETUP instructions entered exactly
once per operation computes something of fixed size per operation: key or context set-up (a
key schedule, a table of key powers) that a key set once would not repeat.

A member's calls made on every entry say more (pcscope.core.member_calls: direct, or through
a PLT stub matched by count): a short member (at most WRAPPER instructions per call) calling
the allocator, or such a wrapper, on every entry is the allocator's cost too (openssl's
CRYPTO_malloc, CRYPTO_zalloc, EVP_MD_CTX_new), and a member entered once per operation
calling a set-up member on every entry is part of that set-up (CRYPTO_gcm128_init, which
calls gcm_init_v8).

Those calls also split the allocator's cost between who owns each part: the allocations and
releases the members of a create/destroy pair make on every entry (directly or through
wrappers, followed down to the allocator: the object's own memory) go away when the object
is reused across operations; the rest begin outside the pairs' own calls (in other members,
or in calls the profile cannot follow: an inner context made by an Init, one released
through a member doing more than wrap the allocator) and are the library's. A call
through a PLT stub matching several allocator members is resolved by the counts (only one of
them has calls left that no other member makes); when one still cannot be placed, or the
allocator's hidden helper is entered by no member's call on every entry, the split is not
in the profile and is not given.

Where the operations are entered from says who owns which change: the functions outside
every tree whose calls lead only into this one (direct, tail, or through a PLT stub whose
count matches the tree's routines, its work included: the same reading of calls as above)
are named with their exact call counts and their module, and whether that is the module of
the routines they reach. A caller in another module (a program driving a library) chose to
run the whole tree per operation; what each entry costs inside the tree is the library's.
Callers making under CALLER_PART of the operations' calls (start-up, stray calls into a
shared allocator) are only counted.

Sampled counts rarely give many functions near-equal entry counts, so this finds nothing
there. No name is read to find a tree; the report names the C allocator's routines among
its members by their standard symbols, since allocation per operation is the first thing an
owner can remove, with their helpers: hidden functions of the allocator's module entered as
often as one of its routines (within BASE_SPREAD: once per call of it, such as the
allocator's internal free). It also names, by their symbols, the members that make and
release one object (EVP_MD_CTX_new and EVP_MD_CTX_free), so the advice can say which object
to reuse without leaning on a list the claim may have to shorten (a release routine also
entered on null pointers, returning at its first instruction's null check, pairs by its other
entries), and the one-shot call whose streaming parts are members too (EVP_Digest with
EVP_DigestInit_ex, EVP_DigestUpdate and EVP_DigestFinal_ex: keep a context and call those).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np

from pcscope.core import code_character, isa, shapes
from pcscope.core.ids import is_hidden_name
from pcscope.core.mechanisms import Metric
from pcscope.core.member_calls import Callees
from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile
from pcscope.core.stub_targets import entry_counts
from pcscope.core.tree_values import Caller, OneShot, Pair, PairedAllocation, TreeValues

CALLER_PART = 0.01  # part of the calls a caller must make to be named (trees, lookups)
COHORT_FUNCTIONS = 8  # members that make a per-operation tree
BASE_FUNCTIONS = 4  # functions with near-equal entry counts that name a number of operations
# entry counts chained at most this far apart (relative) are near-equal: python's long-integer
# helpers run 182,365–182,413 times, one per step of the script's loop, never one exact count
BASE_SPREAD = 0.001
MIN_OPERATIONS = 1000  # an entry count below this is a set-up path, not repeated operations
MULTIPLES = 8  # entries per operation a member may have
# entries a member may have beyond k × operations, relative: start-up and callers outside the
# tree add some (openssl's malloc and free are entered 0.4 % more than twice per digest), while a
# function of another tree whose count is near a multiple only by chance rarely lands this close
EXCESS = 0.01
PLUMBING = 256  # instructions per call above which a function does the operation's work
SETUP = 64  # instructions per call from which a vector member computes (below: copies, clears)
# mean instructions per call of the members above which the tree is the operation's work split
# over functions (an interpreter's arithmetic on big integers), not plumbing around the work
PLUMBING_MEAN = 64
COHORT_SHARE = 0.02  # share of the total the tree's plumbing needs to be worth an idea
# instructions per call up to which a member calling the allocator on every entry wraps it
# (openssl's CRYPTO_malloc: 13; CRYPTO_zalloc, a call to it and one to memset: 18)
WRAPPER = 32
# calls into the tree, relative to its operations, from which a function outside it is named
# as a caller (below: start-up and stray calls into a shared member such as the allocator)
# the C allocator's entry points, allocation before release (the order they are reported in);
# glibc exports ``__libc_malloc`` and friends as aliases
_ALLOCATOR_ROUTINES = ("malloc", "calloc", "realloc", "reallocarray", "aligned_alloc",
                       "posix_memalign", "memalign", "valloc", "pvalloc", "free")
_ALLOCATOR = re.compile(r"^(?:__libc_)?(" + "|".join(_ALLOCATOR_ROUTINES) + r")$")
SETUP_CHECK = "vector or crypto code entered exactly once per operation"
SHARED_CHECK = "callees shared with another tree"  # the advice reads TreeValues.shared
PAIR_CHECK = "create/destroy pairs entered equally often per operation"
SETUP_CALLERS_CHECK = "members calling the set-up on every entry"
ONE_SHOT_CHECK = "one-shot calls whose streaming parts are members too"
CALLERS_CHECK = "entered from outside the tree by"
PAIRED_CHECK = "allocator calls of the create/destroy pairs"
OWN_MODULE, OTHER_MODULE = "its own module", "another module"
_STREAM_PARTS = ("init", "update", "final")  # a streaming API's parts, after the one-shot's name
# the suffixes of an object's making and releasing routines by C naming convention (OpenSSL's
# EVP_MD_CTX_new/EVP_MD_CTX_free, GLib's g_hash_table_new/g_hash_table_destroy): both entered
# as often per operation means an object made and thrown away on every operation
_PAIR_SUFFIXES = (("_new", "_free"), ("_new", "_delete"), ("_new", "_destroy"),
                  ("_create", "_destroy"), ("_create", "_free"), ("_alloc", "_free"),
                  ("_init", "_cleanup"), ("_up_ref", "_free"), ("_open", "_close"))


@dataclass(frozen=True)
class Routines:
    """The routines of the profile's functions: a function is split after each ``ret``
    whose next row no branch of the function targets (that row is entered from outside, a
    routine of its own, as when one hidden label covers several assembly routines); most
    functions are one routine. Routine ``i`` owns ``order[starts[i]:starts[i + 1]]``."""

    order: np.ndarray  # the rows grouped by function, ascending within each
    starts: np.ndarray  # int64, len = routines + 1
    code: np.ndarray  # the function each routine is part of
    entries: np.ndarray  # int64: its first row's count
    work: np.ndarray  # int64: its instruction executions

    def rows(self, i: int) -> np.ndarray:
        return self.order[self.starts[i]:self.starts[i + 1]]

    def name(self, profile: Profile, i: int) -> str:
        """The function's name, with the offset of the routine's first PC after the first."""
        code = int(self.code[i])
        first = int(profile.functions.groups.rows[profile.functions.groups.offsets[code]])
        offset = int(profile.pc[self.rows(i)[0]]) - int(profile.pc[first])
        return profile.function_names[code] + (f"+{offset:#x}" if offset else "")


def routines(profile: Profile, facts: CodeFacts) -> Routines:
    """The routines of every function with rows (see Routines)."""
    src = np.flatnonzero((facts.target >= 0) & ~facts.call)
    dst = np.searchsorted(profile.pc, facts.target[src].astype(np.uint64))
    inside = dst < len(profile.pc)
    src, dst = src[inside], dst[inside]
    hit = (profile.pc[dst] == facts.target[src].astype(np.uint64)) & \
        (profile.function[src] == profile.function[dst])
    targeted = np.zeros(len(profile.pc), dtype=bool)
    targeted[dst[hit]] = True
    groups = profile.functions.groups
    codes = entry_counts(profile)[0]
    firsts = groups.offsets[codes]
    order = groups.rows
    after_ret = np.zeros(len(order), dtype=bool)  # per position of ``order``
    after_ret[1:] = facts.flags(isa.is_return)[order[:-1]] & ~targeted[order[1:]]
    after_ret[groups.offsets[:-1]] = False  # a function's first row starts its first routine
    starts = np.union1d(firsts, np.flatnonzero(after_ret))
    ends = np.r_[starts[1:], groups.offsets[codes[-1] + 1]] if len(starts) else starts
    code = np.searchsorted(firsts, starts, side="right") - 1
    samples = profile.samples.astype(np.int64)[order]
    return Routines(order, np.r_[starts, ends[-1:]] if len(starts) else np.zeros(1, np.int64),
                    codes[code], samples[starts],
                    np.add.reduceat(samples, starts) if len(starts) else starts)


@dataclass(frozen=True)
class Member:
    code: int
    routine: int  # its position in the profile's Routines
    name: str  # the routine's name (pcscope.core.call_cohorts.Routines)
    per_operation: int  # k: entries per operation
    rows: tuple[int, ...]  # its rows not claimed by another mechanism
    per_call: float  # instructions of ``rows`` per entry
    elsewhere: tuple[tuple[int, float], ...]  # (owner, instructions per entry) of its other rows
    allocator: str | None  # the C allocator routine it is (by its symbol), helps or wraps
    entries: int  # its entry count
    live: int  # its entries less those returning at a null check of its first instruction
    setup: bool  # vector or crypto code entered once per operation: key or context set-up
    helper: bool = False  # a hidden helper of the allocator routine ``allocator``
    wrapper: bool = False  # a short routine calling ``allocator`` (or a wrapper) every entry
    sets_up: str | None = None  # the set-up member it calls on every entry (set-up too)
    # a callee shared with another tree (its position among the trees found, and the calls
    # per operation there): this tree's part of its entries is the larger, and only that part
    # of its instructions counts in this tree's figures
    shared: tuple[int, int] | None = None


@dataclass(frozen=True)
class Cohort:
    operations: int
    members: tuple[Member, ...]
    instructions: int  # executions of the members' rows
    # the functions outside the tree making at least CALLER_PART of its operations' calls
    # into it, most calls first, and how many others call into it (with their calls)
    callers: tuple[Caller, ...] = ()
    other_callers: tuple[int, int] = (0, 0)
    paired: PairedAllocation | None = None  # None: no allocator member or no pair

    @property
    def rows(self) -> list[int]:
        return [r for m in self.members for r in m.rows]

    @property
    def allocator(self) -> float:
        """Instructions per operation of the members that are, help or wrap the allocator."""
        return sum(m.per_operation * m.per_call for m in self.members if m.allocator is not None)

    @property
    def deletable(self) -> float:
        """Instructions per operation the advice deletes outright: the allocator calls (and
        their wrappers: the pairs' part by the reuse, the rest by the library, see
        PairedAllocation) and the key set-up (and its callers) of a key set once."""
        return sum(m.per_operation * m.per_call for m in self.members
                   if m.allocator is not None or m.setup or m.sets_up is not None)


@dataclass(frozen=True)
class _Unclaimed:
    """Per routine, what no other mechanism counts: its rows, their instruction executions
    and their value (what a tree would count of it as a member)."""

    has_rows: np.ndarray  # bool
    executions: np.ndarray  # int64
    value: np.ndarray  # int64

    @classmethod
    def of(cls, profile: Profile, found: Routines, owner: np.ndarray) -> _Unclaimed:
        mine = owner[found.order] < 0
        starts = found.starts[:-1]
        if not len(starts):
            empty = np.zeros(0, dtype=np.int64)
            return cls(empty.astype(bool), empty, empty)
        samples = np.where(mine, profile.samples[found.order].astype(np.int64), 0)
        value = np.where(mine, profile.value[found.order].astype(np.int64), 0)
        return cls(np.add.reduceat(mine.astype(np.int64), starts) > 0,
                   np.add.reduceat(samples, starts), np.add.reduceat(value, starts))

    def makes_tree(self, picked: np.ndarray, k: np.ndarray, base: int, total: int) -> bool:
        """Whether the ``picked`` routines, entered ``k`` times per ``base`` operations, make
        a tree: at least COHORT_FUNCTIONS, at most PLUMBING_MEAN instructions per call, and
        COHORT_SHARE of the total."""
        calls = int(k[picked].sum()) * base
        return int(np.count_nonzero(picked)) >= COHORT_FUNCTIONS \
            and int(self.executions[picked].sum()) <= PLUMBING_MEAN * calls \
            and int(self.value[picked].sum()) >= COHORT_SHARE * total


def bases(entries: np.ndarray) -> list[int]:
    """Candidate numbers of operations, most functions first: the smallest count of each
    run of at least BASE_FUNCTIONS sorted entry counts (≥ MIN_OPERATIONS) whose neighbours
    lie within BASE_SPREAD of each other."""
    counts = np.sort(entries[entries >= MIN_OPERATIONS])
    if not len(counts):
        return []
    breaks = np.flatnonzero(np.diff(counts) > BASE_SPREAD * counts[:-1]) + 1
    starts, ends = np.r_[0, breaks], np.r_[breaks, len(counts)]
    runs = [(int(e - s), int(counts[s])) for s, e in zip(starts, ends, strict=True)
            if e - s >= BASE_FUNCTIONS]
    return [base for _n, base in sorted(runs, key=lambda run: (-run[0], run[1]))]


def callees(profile: Profile, facts: CodeFacts, found: Routines,
            stubs: frozenset[int]) -> Callees:
    """Where the calls of the routines ``found`` lead (pcscope.core.member_calls), read
    through the PLT stubs and veneers starting at the rows ``stubs``."""
    return Callees.of(profile, facts, found.order[found.starts[:-1]], found.code,
                      found.entries, stubs)


def find(profile: Profile, op: Callable[[int], shapes.Op], owner: np.ndarray,
         found: Routines, callees: Callable[[], Callees]) -> list[Cohort]:
    """Every per-operation tree whose plumbing holds COHORT_SHARE of the total, its members
    the routines ``found`` (``callees()``: where their calls lead, asked for only when a
    tree is found; ``op``: a row's instruction); ``owner`` gives per row the position of
    the other mechanism counting it (-1: none), so a row is counted once and a member's
    other rows are named with their owner."""
    entries, work = found.entries, found.work
    own = _Unclaimed.of(profile, found, owner)
    small = (work <= PLUMBING * entries) & own.has_rows
    free = np.ones(len(entries), dtype=bool)
    out = []
    trees = []  # per tree, all its routines: the members, the work and those others count
    for base in bases(entries):
        k = entries // base
        near = free & (k >= 1) & (k <= MULTIPLES) & (entries - k * base <= EXCESS * k * base)
        free &= ~near
        picked = near & small
        # most bases make no tree: the test reads per-routine sums, so their members are
        # never built
        if own.makes_tree(picked, k, base, profile.total):
            members = _with_helpers(profile, [_member(profile, op, found, i, int(k[i]), owner)
                                              for i in np.flatnonzero(picked).tolist()])
            out.append(Cohort(base, tuple(members),
                              int(own.executions[picked].sum())))
            trees.append(set(np.flatnonzero(near).tolist()))
    out = _with_shared(profile, op, out, found, free, owner)
    if not out:
        return out
    trees = [tree | {m.routine for m in cohort.members}
             for tree, cohort in zip(trees, out, strict=True)]
    inside = np.zeros(len(profile.pc), dtype=bool)  # a row of any tree
    for i in set().union(*trees):
        inside[found.rows(i)] = True
    calls = callees()
    return [_with_callers(profile, _with_roles(cohort, calls, found), tree, calls, found,
                          ~inside)
            for cohort, tree in zip(out, trees, strict=True)]


def _with_callers(profile: Profile, cohort: Cohort, tree: set[int], callees: Callees,
                  found: Routines, outside: np.ndarray) -> Cohort:
    """``cohort`` with the functions whose calls from rows ``outside`` every tree (direct,
    tail or through a PLT stub, pcscope.core.member_calls) lead only into its routines
    ``tree`` (its members and the work they are plumbing for, which a stub's count cannot
    tell apart), by their exact counts: where its operations are entered from (a callee
    shared with another tree is entered from that tree too, which is no caller of
    either)."""
    names = {i: found.name(profile, i) for i in tree}
    by_fn: dict[int, list[tuple[int, list[int]]]] = {}
    for row, led in callees.calls_into(set(names), outside):
        by_fn.setdefault(int(profile.function[row]), []).append((row, led))

    def module(row: int) -> str:
        m = int(profile.module[row])
        return profile.modules[m] if m >= 0 else ""

    callers = []
    for fn, calls in by_fn.items():
        made = sum(int(profile.samples[r]) for r, _ in calls)
        entered = tuple(dict.fromkeys(names[led[0]] for _, led in calls if len(led) == 1))
        modules = tuple(dict.fromkeys(module(int(found.rows(i)[0])) for _, led in calls
                                      for i in led))
        first = int(profile.function_rows(fn)[0])
        callers.append(Caller(profile.function_names[fn], module(first),
                              int(profile.samples[first]), made, entered,
                              sum(len(led) > 1 for _, led in calls), modules))
    callers.sort(key=lambda c: (-c.calls, c.name))
    named = tuple(c for c in callers if c.calls >= CALLER_PART * cohort.operations)
    rest = callers[len(named):]
    return replace(cohort, callers=named,
                   other_callers=(len(rest), sum(c.calls for c in rest)))


def _with_shared(profile: Profile, op: Callable[[int], shapes.Op], cohorts: list[Cohort],
                 found: Routines, free: np.ndarray, owner: np.ndarray) -> list[Cohort]:
    """``cohorts`` with their shared callees: a small function in no tree entered
    ``k1 × N1 + k2 × N2`` times (up to BASE_SPREAD more) for exactly one pair of trees and
    multiples (openssl's hidden memset: 3 per digest and 1 per AES-GCM operation) joins the
    tree with the larger part of its entries; that tree counts its part of the
    instructions, and both name it."""
    entries, work = found.entries, found.work
    candidates = np.flatnonzero(free & (entries >= MIN_OPERATIONS)
                                & (work <= PLUMBING * entries))
    fits: dict[int, list[tuple[int, int, int, int]]] = {}
    for a, b in itertools.combinations(range(len(cohorts)), 2):
        for ka in range(1, MULTIPLES + 1):
            for kb in range(1, MULTIPLES + 1):
                expected = ka * cohorts[a].operations + kb * cohorts[b].operations
                gap = entries[candidates] - expected
                for i in candidates[(gap >= 0) & (gap <= BASE_SPREAD * expected)].tolist():
                    fits.setdefault(i, []).append((a, ka, b, kb))
    added: dict[int, list[tuple[Member, int]]] = {}
    for i, fit in fits.items():
        if len(fit) != 1:
            continue  # several fits: which trees call it is not known
        a, ka, b, kb = fit[0]
        if ka * cohorts[a].operations < kb * cohorts[b].operations:
            a, ka, b, kb = b, kb, a, ka
        member = _member(profile, op, found, i, ka, owner)
        part = ka * cohorts[a].operations / (ka * cohorts[a].operations
                                              + kb * cohorts[b].operations)
        if member.rows:
            executed = int(profile.samples[list(member.rows)].sum())
            added.setdefault(a, []).append((replace(member, shared=(b, kb)),
                                            round(executed * part)))
    return [Cohort(c.operations, (*c.members, *(m for m, _ in added.get(n, []))),
                   c.instructions + sum(part for _, part in added.get(n, [])))
            for n, c in enumerate(cohorts)]


def _member(profile: Profile, op: Callable[[int], shapes.Op], found: Routines, i: int, k: int,
            owner: np.ndarray) -> Member:
    """Routine ``i`` of ``found`` as a member entered ``k`` times per operation."""
    code, rows, entries = int(found.code[i]), found.rows(i), int(found.entries[i])
    counts = profile.samples[rows].astype(np.int64)
    owners = owner[rows]
    mine = owners < 0
    elsewhere = tuple((o, n) for o in np.unique(owners[~mine]).tolist()
                      if (n := round(int(counts[owners == o].sum()) / entries, 1)) >= 1)
    name = found.name(profile, i)
    match = _ALLOCATOR.match(name)
    return Member(code, i, name, k, tuple(rows[mine].tolist()),
                  round(int(counts[mine].sum()) / entries, 1), elsewhere,
                  match.group(1) if match else None, entries, _live(profile, op, rows),
                  _is_setup(profile, found, i, k))


def _live(profile: Profile, op: Callable[[int], shapes.Op], rows: np.ndarray) -> int:
    """The entries of the routine of ``rows`` that pass a null check on its first
    instruction (``cbz x0`` returning at once, as ``free(NULL)`` does): the next row's
    count; all its entries without such a check."""
    first = op(int(rows[0]))
    if len(rows) > 1 and first.mnemonic == "cbz" and first.src == ("x0",) and \
            int(profile.pc[rows[1]]) == int(profile.pc[rows[0]]) + 4:
        return int(profile.samples[rows[1]])
    return int(profile.samples[rows[0]])


def _with_roles(cohort: Cohort, callees: Callees, found: Routines) -> Cohort:
    """``cohort`` with the roles its members' calls give them: a short member (at most
    WRAPPER instructions per call) calling an allocator member on every entry wraps the
    allocator (to a fixed point: a wrapper of a wrapper); a member entered once per
    operation calling a vector or crypto set-up member on every entry is part of that
    set-up (one level: its callers do more than set up). A call whose candidates are not
    all such members (pcscope.core.member_calls) gives no role."""
    members = list(cohort.members)
    at = {m.routine: n for n, m in enumerate(members)}
    made = [callees.every_entry(found.rows(m.routine), m.entries) for m in members]

    def leads_to(n: int, role: Callable[[Member], bool]) -> Member | None:
        for candidates in made[n]:
            to = [members[at[j]] for j in candidates if j in at]
            if to and len(to) == len(candidates) and all(map(role, to)):
                return to[0]
        return None

    changed = True
    while changed:
        changed = False
        for n, m in enumerate(members):
            if m.allocator is None and int(found.work[m.routine]) <= WRAPPER * m.entries and \
                    (to := leads_to(n, lambda t: t.allocator is not None)) is not None:
                members[n] = replace(m, allocator=to.allocator, wrapper=True)
                changed = True
    for n, m in enumerate(members):
        if m.per_operation == 1 and not m.setup and m.allocator is None and \
                (to := leads_to(n, lambda t: t.setup)) is not None:
            members[n] = replace(m, sets_up=to.name)
    return replace(cohort, members=tuple(members),
                   paired=_paired_allocation(members, [[[at[j] for j in c if j in at]
                                                        if all(j in at for j in c) else []
                                                        for c in calls] for calls in made],
                                             cohort.operations))


def _paired_allocation(members: list[Member], made: list[list[list[int]]],
                       operations: int) -> PairedAllocation | None:
    """The allocator's instructions per operation made for the create/destroy pairs
    (PairedAllocation): their members' calls on every entry (``made[n]``: per call of member
    ``n``, the members it may lead to; empty when it may leave the tree) are followed
    through the allocator members to the allocator, each step carrying the calls per
    operation of the member making it. A call leading to several allocator members goes to
    the one whose entries the calls leading to one member alone leave room for; none
    without an allocator member or a pair."""
    allocating = {n for n, m in enumerate(members) if m.allocator is not None}
    pairs = _pair_list(members, operations)
    if not allocating or not pairs:
        return None
    at = {m.routine: n for n, m in enumerate(members)}
    roots = list(dict.fromkeys(at[m.routine] for _stem, make, release, _k in pairs
                               for m in (make, release)))
    calls = [(n, to) for n in range(len(members)) for to in made[n]
             if to and set(to) <= allocating]
    room = {t: float(members[t].per_operation) for t in allocating}
    for n, to in calls:
        if len(to) == 1:
            room[to[0]] -= members[n].per_operation
    edges: list[tuple[int, int]] = [(n, to[0]) for n, to in calls if len(to) == 1]
    unplaced = set()
    for n, to in calls:
        fits = [t for t in to if room[t] >= members[n].per_operation] if len(to) > 1 else []
        if len(fits) == 1:
            room[fits[0]] -= members[n].per_operation
            edges.append((n, fits[0]))
        elif len(to) > 1:
            unplaced.add(n)
    entered = {t: sum(members[n].per_operation for n, to in edges if to == t) for t in allocating}
    unknown = ""
    flow = [0.0] * len(members)
    todo = [(n, float(members[n].per_operation)) for n in roots]
    steps = 0
    while todo and steps <= len(members) ** 2:  # the wrappers form no cycle; a bound anyway
        steps += 1
        n, k = todo.pop()
        flow[n] += k
        if n in unplaced:
            unknown = ("a call through a PLT stub whose count matches several allocator "
                       f"members: {members[n].name}")
        todo += [(t, k) for src, t in edges if src == n]
    if todo:
        unknown = "the allocator members' calls form a cycle"
    helpers = [members[t].name for t in sorted(allocating)
               if members[t].helper and entered[t] < members[t].per_operation]
    if helpers and any(flow[t] for t in allocating):
        unknown = f"a hidden allocator function no member calls on every entry: {helpers[0]}"
    calling = {n for n, _t in edges}
    makers = tuple(members[n].name for n in roots if n in allocating or n in calling)
    maybe = {t for n, to in calls if n in unplaced for t in to}
    starts = [n for n, m in enumerate(members) if n not in roots and (
        n in calling and n not in allocating
        or n in allocating and n not in maybe and entered[n] < m.per_operation)]

    def routine(n: int) -> int:  # allocations before releases, as the allocations check
        name = members[n].allocator or next(members[t].allocator for src, t in edges
                                            if src == n)
        return _ALLOCATOR_ROUTINES.index(name or "free")

    others = tuple(members[n].name for n in sorted(starts, key=routine))
    return PairedAllocation(None if unknown else sum(
        min(flow[t], members[t].per_operation) * members[t].per_call for t in allocating),
        makers, others, unknown)


def _is_setup(profile: Profile, found: Routines, i: int, k: int) -> bool:
    """Whether routine ``i``, entered ``k`` times per operation, is key or context set-up."""
    rows, entries = found.rows(i), int(found.entries[i])
    counts = profile.samples[rows].astype(np.int64)
    return k == 1 and int(counts.sum()) >= SETUP * entries and _vector(profile, rows, counts)


def _with_helpers(profile: Profile, members: list[Member]) -> list[Member]:
    """``members`` with the allocator's helpers marked: a hidden member of the module of a
    member that is an allocator routine, entered as often as that routine (within
    BASE_SPREAD), helps it."""
    def module(m: Member) -> int:
        return int(profile.module[profile.function_rows(m.code)[0]])

    routines = [m for m in members if m.allocator is not None]
    out = []
    for m in members:
        near = [r for r in routines if m.allocator is None
                and is_hidden_name(profile.function_names[m.code]) and module(m) == module(r)
                and abs(m.entries - r.entries) <= BASE_SPREAD * r.entries]
        helped = min(near, key=lambda r: abs(m.entries - r.entries), default=None)
        out.append(replace(m, allocator=helped.allocator, helper=True) if helped else m)
    return out


def _vector(profile: Profile, rows: np.ndarray, counts: np.ndarray) -> bool:
    """Whether the code is crypto-extension or Advanced SIMD code by its executions
    (the thresholds the coverage table describes code by)."""
    mix = code_character.Mix.of((profile.asm(int(r)), float(c))
                                for r, c in zip(rows.tolist(), counts.tolist(), strict=True))
    return bool(mix.total) and (
        sum(mix.crypto.values()) >= code_character.CRYPTO_SHARE * mix.total
        or mix.vector >= code_character.SIMD_SHARE * mix.total)


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
        Metric("deletable instructions per operation", round(cohort.deletable),
               "instructions", "the allocator routines' and the once-per-operation vector or "
                               "crypto members' instructions per operation"),
    ]


def values(cohort: Cohort, owner: Callable[[int], str]) -> TreeValues:
    """What the advice addresses to whom (pcscope.core.tree_values), as the checks say it
    (``owner`` as for ``checks``)."""
    return TreeValues(cohort.callers, cohort.allocator, cohort.paired,
                      tuple(m.name for m in cohort.members if m.setup),
                      tuple(m.name for m in cohort.members if m.sets_up is not None),
                      _one_shots(cohort), _pairs_of(cohort), _heaviest(cohort, owner),
                      _allocator_list(cohort), _setup_list(cohort), _setup_callers_list(cohort),
                      _callers_list(cohort))


def checks(cohort: Cohort, owner: Callable[[int], str]) -> list[str]:
    """The checks naming the tree's shape, its heaviest members (their instructions per
    call counted here, and how many more per call the mechanism ``owner(position)``
    counts), its allocator calls and its key set-up."""
    once = sum(1 for m in cohort.members if m.per_operation == 1)
    return [f"{once} functions entered once per operation ({cohort.operations:,} times, "
            f"or up to {EXCESS:.0%} more) and {len(cohort.members) - once} more a whole number of "
            f"times per operation (exact counts: one call tree per operation)",
            f"functions doing the work (over {PLUMBING} instructions per call) left out; rows "
            f"other mechanisms count left out",
            "heaviest: " + _heaviest(cohort, owner),
            *_allocations(cohort), *_setups(cohort), *_pairs(cohort), *_one_shot(cohort),
            *_callers(cohort)]


def _heaviest(cohort: Cohort, owner: Callable[[int], str]) -> str:
    """The heaviest members, each with its instructions per call counted here and how many
    more per call the mechanism ``owner(position)`` counts."""
    top = sorted(cohort.members, key=lambda m: -m.per_operation * m.per_call)[:8]
    return ", ".join(f"{m.name} ({m.per_operation}× per operation, "
                     f"{m.per_call:g} instructions per call counted here"
                     + "".join(f"; {n:g} more in `{owner(o)}`" for o, n in m.elsewhere) + ")"
                     for m in top)


def _callers(cohort: Cohort) -> list[str]:
    """The check naming the functions outside the tree calling into it, with their module
    and whether it is the module of the members they reach; none without."""
    listed = _callers_list(cohort)
    return [f"{CALLERS_CHECK} (exact call counts, direct or through a PLT stub): {listed}"] \
        if listed else []


def _callers_list(cohort: Cohort) -> str:
    """The functions outside the tree calling into it as ``_callers`` lists them ("")."""
    if not cohort.callers:
        return ""
    items = []
    for c in cohort.callers:
        to = [f"to {', '.join(c.entered)}"] if c.entered else []
        if c.unresolved:
            to.append(f"through {c.unresolved} PLT stub whose count matches several members: "
                      f"which one it leads to is not in the profile" if c.unresolved == 1 else
                      f"through {c.unresolved} PLT stubs whose counts match several members: "
                      f"which one each leads to is not in the profile")
        where = ""
        if c.reached:
            where = f"; the members it reaches are in {' and '.join(c.reached)}, " + \
                (OWN_MODULE if c.own_module else OTHER_MODULE)
        items.append(f"`{c.name}`" + (f" in {c.module}" if c.module else "")
                     + f" (entered {c.entries:,} time{'' if c.entries == 1 else 's'}, "
                       f"{c.calls:,} calls, "
                       f"{c.calls / cohort.operations:.2f} per operation, "
                     f"{' and '.join(to)}{where})")
    more, calls = cohort.other_callers
    return (", ".join(items)
            + (f"; {more} more functions, {calls:,} calls (each under {CALLER_PART:.0%} of "
               f"the operations)" if more else ""))


def shared(cohort: Cohort, tree: Callable[[int], str]) -> list[str]:
    """What the check naming the callees this tree shares with the tree ``tree(position)``
    says after SHARED_CHECK."""
    found = [(m, m.shared) for m in cohort.members if m.shared is not None]
    if not found:
        return []
    return [" (entries = k × these operations + k' × that tree's, "
            "instructions split by the fit): "
            + ", ".join(f"{m.name} ({m.per_operation}× here, {there}× in `{tree(other)}`)"
                        for m, (other, there) in found)]


def shared_in(cohort_position: int, cohorts: list[Cohort],
              tree: Callable[[int], str]) -> list[str]:
    """What the check a tree gets for the callees it shares whose rows another tree counts
    says after SHARED_CHECK."""
    found = [(n, m.name, m.shared[1]) for n, c in enumerate(cohorts) for m in c.members
             if m.shared is not None and m.shared[0] == cohort_position]
    if not found:
        return []
    return [", counted there: "
            + ", ".join(f"{name} ({here}× here, in `{tree(n)}`)" for n, name, here in found)]


def _allocations(cohort: Cohort) -> list[str]:
    """The check naming the members that are C allocator routines, their helpers and their
    wrappers, with their calls and instructions per operation; none when no member is
    one."""
    listed = _allocator_list(cohort)
    return [f"C allocator calls per operation (by symbol name): {listed}"] if listed else []


def _allocator_list(cohort: Cohort) -> str:
    """What ``_allocations`` says after its colon ("": no member is an allocator)."""
    found = sorted((m for m in cohort.members if m.allocator is not None),
                   key=lambda m: (m.helper, m.wrapper, _ALLOCATOR_ROUTINES.index(m.allocator)))
    if not found:
        return ""
    routines = " + ".join(f"{m.per_operation} {m.allocator}" for m in found
                          if not m.helper and not m.wrapper)
    helpers = ", ".join(f"{m.per_operation} × {m.name}" for m in found if m.helper)
    wrappers = ", ".join(f"{m.per_operation} × {m.name} ({m.per_call:g} each)"
                         for m in sorted(found, key=lambda m: -m.per_operation * m.per_call)
                         if m.wrapper)
    return (routines
            + (f", with the hidden functions of their module entered as often as they are "
               f"({helpers})" if helpers else "")
            + (f", and the program's wrappers calling them, or another wrapper, on every "
               f"entry in at most {WRAPPER} instructions ({wrappers})" if wrappers else "")
            + f" = {cohort.allocator:,.0f} instructions")


def _setups(cohort: Cohort) -> list[str]:
    """The checks naming the once-per-operation vector or crypto members and the members
    calling them on every entry; none without."""
    setup, callers = _setup_list(cohort), _setup_callers_list(cohort)
    if not setup:
        return []
    return [f"{SETUP_CHECK} (a fixed-size computation per operation, such as a key schedule "
            f"or a table of key powers): {setup}",
            *([f"{SETUP_CALLERS_CHECK} (once per operation, so part of the same set-up): "
               f"{callers}"] if callers else [])]


def _setup_list(cohort: Cohort) -> str:
    """The once-per-operation vector or crypto members with their size ("": none)."""
    return ", ".join(f"{m.name} ({m.per_call:g} instructions per call)"
                     for m in cohort.members if m.setup)


def _setup_callers_list(cohort: Cohort) -> str:
    """The members calling the set-up on every entry, with what they call ("": none)."""
    return ", ".join(f"{m.name} ({m.per_call:g} instructions per call, calls {m.sets_up})"
                     for m in cohort.members if m.sets_up is not None)


def _per_operation_live(m: Member, operations: int) -> int:
    """How many times per operation ``m`` gets past a null check of its first instruction
    (a release routine called on a null pointer as often as on an object returns at once):
    its calls per operation without such a check, or when the rest fits no multiple."""
    k = round(m.live / operations)
    return k if k >= 1 and abs(m.live - k * operations) <= EXCESS * k * operations \
        else m.per_operation


def _pair_list(members: tuple[Member, ...] | list[Member],
               operations: int) -> list[tuple[str, Member, Member, int]]:
    """The objects the tree makes and releases on every operation (stem, making member,
    releasing member, times per operation): members named one stem plus a making and a
    releasing suffix (_PAIR_SUFFIXES), entered the same number of times per operation past a
    null check (a hidden ``<unknown_N>`` name has no suffix, so never pairs)."""
    by_name = {m.name: m for m in members}
    found = []
    for name, m in by_name.items():
        for make, release in _PAIR_SUFFIXES:
            stem = name.removesuffix(make)
            other = by_name.get(stem + release)
            if stem in ("", name) or other is None:
                continue
            k = _per_operation_live(m, operations)
            if _per_operation_live(other, operations) == k:
                found.append((stem, m, other, k))
    return found


def _pairs(cohort: Cohort) -> list[str]:
    """The check naming the objects the tree makes and releases on every operation
    (_pair_list) and the one naming the allocator calls their members make; none without
    a pair."""
    found = _pairs_of(cohort)
    if not found:
        return []
    return [f"{PAIR_CHECK} (by symbol name: an object made and released per operation): "
            + ", ".join(p.text() for p in found), *_paired(cohort)]


def _pairs_of(cohort: Cohort) -> tuple[Pair, ...]:
    return tuple(Pair(stem, m.name, other.name, k, other.per_operation)
                 for stem, m, other, k in _pair_list(cohort.members, cohort.operations))


def _paired(cohort: Cohort) -> list[str]:
    """The check splitting the allocator's instructions per operation between the pairs'
    members and the rest (PairedAllocation); the two parts add up to the allocations check's
    figure as written."""
    p = cohort.paired
    if p is None:
        return []
    if p.instructions is None:
        return [f"{PAIRED_CHECK}: not in the profile ({p.unknown})"]
    total, paired = round(cohort.allocator), round(p.instructions)
    return [f"{PAIRED_CHECK} (their members' calls on every entry, directly or through "
            f"wrappers, followed down to the allocator): {paired:,} of {total:,} instructions "
            f"per operation, made by {', '.join(p.makers) or 'none'}; the other "
            f"{total - paired:,} begin outside the pairs' own calls, at "
            f"{', '.join(p.others) or 'none'}"]


def _one_shots(cohort: Cohort) -> tuple[OneShot, ...]:
    """The members whose names, followed by Init, Update and Final (the C convention of a
    streaming API and its one-shot form: EVP_Digest and EVP_DigestInit_ex, EVP_DigestUpdate,
    EVP_DigestFinal_ex), name other members too: the one-shot calls that run the whole
    stream, and its objects, on every operation."""
    names = [m.name for m in cohort.members if not is_hidden_name(m.name)]
    found = []
    for stem in names:
        parts = {part: n for n in reversed(names) for part in _STREAM_PARTS
                 if n != stem and n.lower().startswith(stem.lower())
                 and n[len(stem):].lstrip("_").lower().startswith(part)}
        if len(parts) == len(_STREAM_PARTS):
            found.append(OneShot(stem, tuple(parts[part] for part in _STREAM_PARTS)))
    return tuple(found)


def _one_shot(cohort: Cohort) -> list[str]:
    """The check naming the one-shot calls (_one_shots) with their parts; none without."""
    found = _one_shots(cohort)
    if not found:
        return []
    return [f"{ONE_SHOT_CHECK} (by symbol name): "
            + ", ".join(f"{one.name} ({', '.join(one.parts)})" for one in found)]
