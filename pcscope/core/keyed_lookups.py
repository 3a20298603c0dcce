"""Callers that look up many constant keys per entry, one call site per key.

A lookup routine (say, a search of a parameter list by name) costs a C-library compare per
call; when one of its callers calls it from k ≥ MIN_KEYS call sites run on most entries
(MOST), each loading
a different address constant (``adrp xN; add xN, xN, #…``) into the key register (x1, else
x0) just before the ``bl``, the caller asks for k fixed names one by one. The lever is that
caller: walk the request once and dispatch on the name, or cache the results per context.

A routine called k times from a loop (one site, one key register), with keys computed at
run time, or from call sites each on another path (a few of the entries each) is not this
shape. Counts are the profile's: the sites' ``bl`` counts against the caller's entry count
(its first instruction's). Every caller with the shape that makes at least PART of the
lookups is reported, heaviest first, also those reaching the routine through a forwarding
function (one that tail-calls it). When such callers are members of a per-operation call
tree (pcscope.core.call_cohorts), the tree and the lookup name each other with the lookups
per operation: one chain of cause.

The advice follows from the counts: walking the request once per entry of each such caller
deletes its lookups beyond one per entry (walk_metric: the upside). How often a lookup finds
its key comes from the branch on the compare's result right after its call (hit_metrics);
with the compares per lookup it says how long the searched arrays are and whether the
constant keys mostly miss.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core import shapes
from pcscope.core.call_effects import CallEffects
from pcscope.core.lookup_values import LookupValues
from pcscope.core.mechanisms import Metric
from pcscope.core.profile import Profile

MIN_KEYS = 4  # different constant keys, each looked up on most entries, that make the shape
MOST = 0.5  # part of the caller's entries a key's call site must run on
PART = 0.05  # part of all the calls' lookups a caller must make to be named
KEY_REGISTERS = ("x1", "x0")  # where a lookup's key is passed (after the table, else first)
LOOK_BACK = 8  # rows of the caller before a call searched for its key's adrp/add
CHECK = ("a caller passes a different address constant (adrp; add) as the key at each of "
         "its call sites: ")  # the check naming that caller


@dataclass(frozen=True)
class KeyedCaller:
    """A caller of the lookup routine and its constant-key call sites."""

    function: int  # its function code
    name: str
    sites: tuple[int, ...]  # rows of the ``bl`` calls, one per key
    keys: tuple[int, ...]  # the address constant each site passes
    lookups: int  # sum of the sites' counts
    entries: int  # the caller's entry count
    via: str | None = None  # the function its calls reach the routine through (a tail call)

    @property
    def per_entry(self) -> float:
        return self.lookups / self.entries if self.entries else 0.0


def find(profile: Profile, op: Callable[[int], shapes.Op], calls: list[int],
         via: dict[int, str]) -> list[KeyedCaller]:
    """The callers with the shape among ``calls`` (the rows of the calls to the lookup
    routine, directly, through its PLT stub or through a function forwarding to it: ``via``
    names that function per call row), most lookups first."""
    by_fn: dict[int, dict[int, int]] = defaultdict(dict)  # caller -> key -> call row
    for r in calls:
        fn = int(profile.function[r])
        key = _constant_key(profile, op, r)
        if fn >= 0 and key is not None:
            by_fn[fn].setdefault(key, r)
    found = []
    total = sum(int(profile.samples[r]) for r in calls)
    for fn, keyed in by_fn.items():
        entries = int(profile.samples[profile.function_rows(fn)[0]])
        usual = {key: r for key, r in keyed.items()
                 if entries and int(profile.samples[r]) >= MOST * entries}
        lookups = sum(int(profile.samples[r]) for r in usual.values())
        if len(usual) >= MIN_KEYS and lookups >= PART * total:
            sites = tuple(usual.values())
            found.append(KeyedCaller(fn, profile.function_names[fn], sites, tuple(usual),
                                     lookups, entries, via.get(sites[0])))
    return sorted(found, key=lambda c: (-c.lookups, c.sites[0]))


def _constant_key(profile: Profile, op: Callable[[int], shapes.Op], call: int) -> int | None:
    """The address constant the call at row ``call`` passes in a key register: what last
    sets it before the call (shapes.setter, over the LOOK_BACK rows of the caller before
    it) is ``add reg, reg, #off`` and what sets it before that ``adrp reg, #page``; None
    otherwise."""
    before = profile.rows_before(call, LOOK_BACK)
    changes = CallEffects(profile, op).changes
    for reg in KEY_REGISTERS:
        add = shapes.setter(op, before, reg, int(profile.pc[call]), changes)
        if add is None or op(add).mnemonic != "add" or op(add).operands[:2] != (reg, reg):
            continue
        page = shapes.setter(op, [r for r in before if r < add], reg, int(profile.pc[add]),
                             changes)
        if page is None or op(page).mnemonic != "adrp":
            continue
        base, off = _immediate(op(page).operands[-1]), _immediate(op(add).operands[-1])
        if base is not None and off is not None:
            return base + off
    return None


def _immediate(token: str) -> int | None:
    text = token.removeprefix("#")
    try:
        return int(text, 0)
    except ValueError:
        return None


def metrics(caller: KeyedCaller) -> list[Metric]:
    return [
        Metric("constant-key lookups per caller entry", round(caller.per_entry, 2), "x",
               f"bl counts of {caller.name}'s constant-key call sites / its first "
               "instruction's count"),
        Metric("constant keys", len(caller.keys), "calls",
               f"call sites in {caller.name} each passing a different adrp/add address "
               "constant as the key"),
        Metric("keyed caller entries", caller.entries, "executions",
               f"count of {caller.name}'s first instruction"),
    ]


def check(caller: KeyedCaller) -> str:
    return f"{CHECK}{caller.name}"


WALK_CHECK = "constant-key callers that could walk the request once per entry: "


def walk_metric(callers: list[KeyedCaller], lookups: int) -> Metric:
    """The part of the ``lookups`` (the lookup routine's entries) that walking the request
    once per entry of each caller, instead of looking up one key per call, deletes: each
    caller's lookups less its entries."""
    deleted = sum(max(c.lookups - c.entries, 0) for c in callers)
    return Metric("lookups one walk per entry deletes",
                  round(100.0 * deleted / lookups, 1) if lookups else 0.0, "%",
                  "sum over the constant-key callers of (their lookups - their entries) / the "
                  "lookup routine's entries")


def walk_check(callers: list[KeyedCaller]) -> str:
    """The check naming every constant-key caller (the advice names them all, from
    ``values``)."""
    return WALK_CHECK + ", ".join(c.name for c in callers)


def values(callers: list[KeyedCaller]) -> LookupValues:
    """The constant-key callers as the advice addresses them (pcscope.core.lookup_values)."""
    return LookupValues(tuple(c.name for c in callers), _described(callers[1:]))


def hit_metrics(profile: Profile, op: Callable[[int], shapes.Op],
                taken: Callable[[int], float | None], calls: list[int]) -> list[Metric]:
    """How often a lookup finds its key, from the test of the compare's result: the
    ``cbz``/``cbnz`` on w0/x0 right after the hottest of ``calls`` (a lookup's calls of a
    compare routine) exits the walk on a zero result, so the zero outcomes are the hits,
    and a lookup has at most one. None when that test is not there or its outcome not
    known."""
    if not calls:
        return []
    call = max(calls, key=lambda r: (int(profile.samples[r]), -r))
    test = call + 1
    if test >= len(profile.pc) or int(profile.pc[test]) != int(profile.pc[call]) + 4:
        return []
    o = op(test)
    share = taken(test)
    if o.mnemonic not in ("cbz", "cbnz") or o.operands[0] not in ("w0", "x0") or share is None:
        return []
    runs = int(profile.samples[test])
    hits = round(runs * (share if o.mnemonic == "cbz" else 1 - share))
    lookups = int(profile.samples[profile.function_rows(int(profile.function[call]))[0]])
    if not lookups:
        return []
    return [Metric("lookups finding their key", round(100.0 * hits / lookups, 1), "%",
                   f"zero results of the compare ({o.mnemonic} at {int(profile.pc[test]):#x}, "
                   f"{hits:,} of its {runs:,} runs) / the lookup's entries")]


MORE_CHECK = "more callers passing a constant key at each call site: "


def more_check(callers: list[KeyedCaller]) -> str:
    """The check naming the callers after the heaviest, with their figures."""
    return MORE_CHECK + _described(callers)


def _described(callers: list[KeyedCaller]) -> str:
    """The callers, each with its figures (and the function it calls through)."""
    return ", ".join(
        f"{c.name} ({len(c.keys)} keys, {c.per_entry:.2f} lookups per entry, entered "
        f"{c.entries:,} times" + (f", through {c.via}, which tail-calls it" if c.via else "")
        + ")" for c in callers)


# check prefixes (the advice reads TreeValues.lookups and LookupValues.trees)
TREE_CHECK = "constant-key lookups per operation made by members of this tree: "
LOOKUP_CHECK = "constant-key lookups per operation of a per-operation tree: "


def per_operation(callers: list[KeyedCaller], operations: float) -> float:
    return sum(c.lookups for c in callers) / operations if operations else 0.0


def tree_said(callers: list[KeyedCaller], lookup: str, operations: float) -> str:
    """What a per-operation tree's check (after TREE_CHECK) says of its members that are
    ``callers``, which make the lookups the mechanism ``lookup`` counts."""
    return (f"{per_operation(callers, operations):.1f} by "
            + " and ".join(f"{c.name} ({c.entries / operations:.1f}× per operation, "
                           f"{len(c.keys)} keys)" for c in callers)
            + f", counted in `{lookup}`")


def lookup_said(callers: list[KeyedCaller], tree: str, operations: float) -> str:
    """What the lookup mechanism's check (after LOOKUP_CHECK) says of its ``callers``
    inside the tree ``tree``."""
    return (f"{per_operation(callers, operations):.1f} constant-key lookups "
            f"in each of the {operations:,.0f} operations of `{tree}`, by "
            + " and ".join(c.name for c in callers))
