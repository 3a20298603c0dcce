"""The mechanism finder: qualified pattern hits grouped into what an engineer would fix.

Runs at index time right after the pattern pass (its hits have passed their code-shape
checks, pcscope.core.shapes). Grouping rules:

- ``dispatch``: every table-fed dispatch ``br`` of one interpreter function (threaded code),
  or the one shared table jump of a large function run about once per handler;
- ``plt``: every PLT stub (or veneer) of one module, with the ``bl`` calls that reach them;
- ``outline-atomic``: every outline-atomic helper of one module (LSE-flag test, then LSE or
  LL/SC); ``llsc``: one inline exclusive retry loop;
- ``spin-wait``, ``pointer-chase``, ``byte-loop``: one loop each;
- ``indirect-call``: the function-pointer/virtual calls (``blr``) of one function;
- ``division``: the divides of one function; ``libc-routine``: one C-library string or
  memory routine (all its variants); ``libc-lock``: the C library's lock functions;
  ``jit``: the code of one JIT region.

A mechanism's share is its own: the sum over the instructions of its sites, each counted
once. Metrics come from the profile's own counts (executions, samples or cycles).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, replace
from functools import cached_property

import msgspec
import numpy as np

from pcscope.core import (
    byte_swap,
    call_cohorts,
    chain_walk,
    dispatch_state,
    fixed_trip_sums,
    gather_partition,
    hand_written,
    invariant_work,
    isa,
    keyed_lookups,
    loop_nests,
    memory_state,
    natural_loops,
    return_zeroing,
    same_code,
    shapes,
    spill_blocks,
    store_loops,
    struct_relaxation,
    table_crc,
)
from pcscope.core.backends.rules import CATALOG, MECHANISM_RULE
from pcscope.core.chase_values import ChaseValues, counts_down
from pcscope.core.contract.categories import CATEGORIES
from pcscope.core.dispatch_merge import merged_into_index
from pcscope.core.dispatch_state import Function
from pcscope.core.lookup_values import LookupValues
from pcscope.core.mechanism_values import Values, with_value
from pcscope.core.mechanisms import Mechanism, MechanismTable, Metric, Site
from pcscope.core.member_calls import Callees
from pcscope.core.pattern_table import HELPER, PatternTable
from pcscope.core.patterns import (
    CodeFacts,
    backward_branches,
    enclosing_loops,
    libc_routine_name,
    loop_trips,
)
from pcscope.core.plt_values import PltValues
from pcscope.core.profile import Profile
from pcscope.core.stub_targets import CLEAR, STUB_MATCH, stub_targets
from pcscope.core.tree_values import TreeValues

# Each kind's idea category: its catalog rule's (a C-library copy routine's is memcpy, told
# per routine below).
CATEGORY = {kind: CATALOG[rule].category for kind, rule in MECHANISM_RULE.items()}
assert set(CATEGORY.values()) <= set(CATEGORIES)
KINDS = tuple(CATEGORY)  # every mechanism kind the finder reports
_STUBS_TO_LIBC = ("stubs leading to C-library routines, counted with those routines' "
                  "mechanisms: ")
_STUBS_OUT = "stubs leading to functions of other modules (matched by count): "
JIT_SITE = 64  # hottest instructions of a JIT region that form its site
RELINKS = ("the walk stores a link it loaded back into the structure (it rewrites the "
           "structure as it walks, e.g. an insert)")  # the check's text, which the advice reads
CHAIN_STEPS = 4  # unrolled byte-compare steps that make a compare chain
LARGE_FUNCTION = 256  # executed instructions of a function whose one table jump may dispatch
SHARED_DISPATCH = 100  # at most this many instructions per execution of that jump
DISPATCHES_PER_ENTRY = 8  # ...and at least this many executions per entry of the function
DOMINANT_CALLER = 0.8  # share of a routine's calls one caller makes to join its mechanism
WRAPPER = 64  # executed instructions of a caller small enough to count whole with the routine
DISPATCH_SEQUENCE = 32  # instructions looked back from a dispatch br for its target's inputs
_LOCKS = re.compile(r"^_*(pthread_(mutex|rwlock|spin|cond)_\w+|lll_lock_wait\w*|"
                    r"lll_unlock_wake\w*|futex_\w+)$")
_JIT = re.compile(r"^(\[jit\]|jit[-_].*|\[anon.*\]|//anon|perf-\d+\.map|.*\.jit)$", re.I)
_COPIES = frozenset(("memcpy", "memmove", "memset", "wmemset"))
_HALFWORD_LOADS = frozenset(("ldrh", "ldurh", "ldrsh", "ldursh"))
_FLAGS = "nzcv"  # the condition flags, as a register a dispatch sequence may depend on
_FLAG_READERS = frozenset(("csel", "csinc", "csinv", "csneg", "cset", "csetm", "cinc", "cinv",
                           "cneg", "ccmp", "ccmn", "adc", "adcs", "sbc", "sbcs", "fcsel"))

@dataclass(frozen=True)
class _Loop:
    """A loop of the profile: rows ``lo``..``hi`` (head to back edge), its key rows."""

    lo: int
    hi: int
    keys: tuple[int, ...]

    @property
    def rows(self) -> range:
        return range(self.lo, self.hi + 1)


@dataclass(frozen=True)
class _CallerLoop:
    """The dominant caller's code that runs per call of a C-library routine."""

    function: int  # its function code
    site: Site
    metrics: list[Metric]
    check: str


def find_mechanisms(profile: Profile, patterns: PatternTable, facts: CodeFacts) -> MechanismTable:
    """Every mechanism of the profile, heaviest first (ties by ID)."""
    finder = _Finder(profile, patterns, facts)
    found = [
        *finder.dispatch(), *finder.indirect_calls(), *finder.plt(), *finder.atomics(),
        *finder.loops(), *finder.divisions(), *finder.libc(), *finder.jit(),
        *finder.memory_states(), *finder.table_crcs(), *finder.spill_blocks(),
        *byte_swap.find(finder), *store_loops.find(finder),
    ]
    found = [m for m in found if m.sites]
    # loop shapes read from the loop's dataflow: each counts only rows no mechanism before
    # it counts (a loop is one mechanism's)
    for shape in (gather_partition, struct_relaxation, fixed_trip_sums):
        found += shape.find(finder, finder.claimed(found))
    # what each loop recomputes, and which loops of one nest the mechanisms are
    found = loop_nests.link(finder, invariant_work.annotate(finder, found))
    # spread over many functions, these two count only rows no other mechanism counts
    found += finder.return_zeroing(finder.claimed(found))
    found += finder.per_operation(found)
    found = finder.link_lookups(found)
    found = hand_written.mark(profile, facts, finder.op, found)
    return MechanismTable(tuple(sorted(found, key=lambda m: (-m.share, m.id))))


class _Finder:
    def __init__(self, profile: Profile, patterns: PatternTable, facts: CodeFacts) -> None:
        self.p = profile
        self.patterns = patterns
        self.facts = facts
        self.counts = profile.samples
        # the constant-key callers found for each lookup mechanism, by its ID (linked to the
        # per-operation trees they belong to once those are found)
        self.keyed: dict[str, list[keyed_lookups.KeyedCaller]] = {}
        # natural_loops.entries of function_loops by position: gather_partition and
        # invariant_work both read them, each for some of the loops
        self._loop_entries: dict[int, frozenset[int]] = {}

    # -- helpers ---------------------------------------------------------------------------
    def op(self, row: int) -> shapes.Op:
        return self.facts.code.op(row)  # read once, shared with the pattern pass

    def fn_name(self, row: int) -> str:
        code = int(self.p.function[row])
        return self.p.function_names[code] if code >= 0 else "(no function)"

    def module(self, row: int) -> str:
        code = int(self.p.module[row])
        return self.p.modules[code] if code >= 0 else ""

    def share(self, rows: Iterable[int]) -> float:
        # sorted(set()) rather than np.unique: a site has a few rows, where numpy's call
        # overhead is most of the cost (the same sorted array, so the same sum)
        unique = np.fromiter(sorted(set(rows)), dtype=np.int64)
        total = self.p.total
        return float(self.p.value[unique].sum()) / total if total and len(unique) else 0.0

    def site(self, rows: Iterable[int], key: int) -> Site:
        rows = sorted(set(rows))
        return Site(int(self.p.pc[key]), self.fn_name(key), tuple(int(self.p.pc[r]) for r in rows),
                    self.share(rows))

    def mechanism(self, kind: str, sites: list[Site], metrics: list[Metric],
                  checks: list[str], functions: Iterable[str] = (),
                  category: str | None = None, values: Values | None = None) -> Mechanism:
        sites = sorted(sites, key=lambda s: (-s.share, s.pc))
        pcs = np.fromiter((pc for s in sites for pc in s.pcs), dtype=np.uint64)
        rows = np.searchsorted(self.p.pc, pcs)  # every site PC is a row of the profile
        names = list(dict.fromkeys([*(s.function for s in sites), *functions]))
        return Mechanism(kind, category or CATEGORY[kind], sites[0].pc, tuple(sites), tuple(names),
                         self.share(rows.tolist()), tuple(metrics),
                         tuple(checks), () if values is None else (values,))

    def count(self, row: int) -> int:
        return int(self.counts[row])

    def rows_of(self, category: str) -> np.ndarray:
        return np.sort(self.patterns.rows(category))

    def aux_of(self, category: str) -> dict[int, tuple[int, int]]:
        idx = self.patterns.indices(category)
        table = self.patterns
        return dict(zip(table.row[idx].tolist(),
                        zip(table.aux_pc[idx].tolist(), table.aux[idx].tolist(), strict=True),
                        strict=True))

    # -- indirect branches -----------------------------------------------------------------
    def dispatch(self) -> list[Mechanism]:
        by_fn: dict[int, list[tuple[int, int]]] = defaultdict(list)
        shared: list[tuple[int, int]] = []
        for row, (producer, kind) in self.aux_of("indirect-branch").items():
            fn = int(self.p.function[row])
            if kind == shapes.DISPATCH and fn >= 0:
                by_fn[fn].append((row, producer))
            elif kind == shapes.SWITCH and fn >= 0 and self._shared_dispatch(row, fn):
                shared.append((row, producer))
        for row, producer in shared:
            by_fn[int(self.p.function[row])].append((row, producer))
        out = []
        for fn, sites in by_fn.items():
            rows = self.p.function_rows(fn)
            dispatches = sum(self.count(r) for r, _ in sites)
            if not dispatches:
                continue
            fn_total = int(self.counts[rows].sum())
            threaded = len(sites) >= shapes.DISPATCH_SITES
            sequences = [self._dispatch_sequence(r) for r, _ in sites]
            merged = [merged_into_index([self.op(r) for r in q], _reads, _writes)
                      for q in sequences]
            # The function's flow is read only when some site merges state into its index.
            state = dispatch_state.tests(Function.of(self.facts, self.p.pc, rows, self.op,
                                                     self.count),
                                         sequences, merged, _reads, _writes) \
                if any(merged) else []
            told = dispatch_state.said(state, self.p.asm, lambda r: int(self.p.pc[r]),
                                       self.count, len(sites))

            def per_dispatch(test, sequences=sequences, dispatches=dispatches) -> float:
                """Instructions of the sequences passing ``test``, per dispatch."""
                return round(sum(self.count(q[0]) * sum(1 for r in q if test(self.op(r)))
                                 for q in sequences) / dispatches, 1)
            out.append(self.mechanism("dispatch", [
                self.site(q, r) for q, (r, _pc) in zip(sequences, sites, strict=True)], [
                Metric("dispatch sites", len(sites), "sites", "executed table-fed br in the function"),
                Metric("dispatches", dispatches, "executions", "sum of the dispatch br counts"),
                Metric("instructions per dispatch", round(fn_total / dispatches, 1), "instructions",
                       "the function's instruction count / dispatches"),
                Metric("dispatch sequence", per_dispatch(lambda op: True), "instructions",
                       "instructions computing each br's target in its block, per dispatch"),
                Metric("loads in the sequence", per_dispatch(lambda op: op.load), "loads",
                       "loads among them (opcode fetch and table load included), per dispatch"),
                Metric("stack reloads in the sequence",
                       per_dispatch(lambda op: op.load and op.addr[:1] in (("sp",), ("x29",))),
                       "loads", "loads off sp/x29 among them (spilled state), per dispatch"),
                Metric("merged into the opcode", round(sum(
                    self.count(q[0]) * len(at) for q, at in zip(sequences, merged, strict=True))
                    / dispatches, 1), "instructions",
                       "instructions of the sequence that only merge other state (flags) into "
                       "the opcode, per dispatch"),
                *dispatch_state.metrics(state, dispatches, self.p.total),
            ], [
                "target loaded from a table indexed by a register (ldr xT, [table, idx, lsl #3]) "
                "then br",
                f"{len(sites)} such br in one function of {len(rows):,} executed instructions"
                + (" (threaded: each handler ends in its own copy)" if threaded
                   else " (one shared dispatch jump)"),
                "each site counts its dispatch sequence: the instructions of the br's block "
                "its target depends on (the opcode fetch, anything merged into the opcode, "
                "the table load)",
                *dispatch_state.checks(state, told),
            ], values=dispatch_state.values(state, told)))
        return out

    def _dispatch_sequence(self, br: int) -> list[int]:
        """The rows of ``br``'s basic block that its target register depends on, ``br``
        first: walking back until a branch, a branch target (a join) or a gap in the
        addresses, keeping each instruction that writes a register still needed."""
        need = set(self.op(br).src)
        out = [br]
        row = br
        while need and row > 0 and br - row < DISPATCH_SEQUENCE and \
                int(self.p.pc[row - 1]) + 4 == int(self.p.pc[row]) and \
                int(self.p.pc[row]) not in self.joins:
            row -= 1
            op = self.op(row)
            if isa.is_branch(op.mnemonic):
                break
            written = need.intersection(_writes(op))
            if written:
                out.append(row)
                need = (need - written) | _reads(op)
        return out

    @cached_property
    def joins(self) -> frozenset[int]:
        """PCs some executed direct branch jumps to (where a basic block starts)."""
        return frozenset(self.facts.target[self.facts.target >= 0].tolist())

    def _shared_dispatch(self, row: int, fn: int) -> bool:
        """One table jump dispatches a switch interpreter when its function is large, runs
        it about once per handler, and runs it many times per entry (a loop around the
        switch, not a visitor's switch run once per call)."""
        rows = self.p.function_rows(fn)
        runs = self.count(row)
        entries = self.count(int(rows[0]))
        return len(rows) >= LARGE_FUNCTION and runs > 0 and \
            int(self.counts[rows].sum()) / runs <= SHARED_DISPATCH and \
            runs >= DISPATCHES_PER_ENTRY * max(entries, 1)

    def indirect_calls(self) -> list[Mechanism]:
        by_fn: dict[int, list[tuple[int, int]]] = defaultdict(list)
        for row, (producer, kind) in self.aux_of("indirect-branch").items():
            if kind == shapes.CALL:
                by_fn[int(self.p.function[row])].append((row, producer))
        out = []
        for _fn, sites in by_fn.items():
            calls = sum(self.count(r) for r, _ in sites)
            if not calls:
                continue
            out.append(self.mechanism("indirect-call", [
                self.site([r] + ([at] if pc and (at := self.p.row_of(pc)) is not None
                                 else []), r) for r, pc in sites], [
                Metric("call sites", len(sites), "sites", "executed blr in the function"),
                Metric("calls", calls, "executions", "sum of the blr counts"),
            ], ["blr through a register loaded from memory (function pointer or vtable slot)"]))
        return out

    def plt(self) -> list[Mechanism]:
        stubs = self.aux_of("call-overhead")
        calls = self.facts.call & (self.facts.target >= 0)
        call_rows = np.flatnonzero(calls)
        targets = self.facts.target[call_rows]
        # a stub belongs to one mechanism: one leading to a C-library routine is counted
        # with that routine (its idea, fewer calls, removes the stub too)
        to_libc = self._stubs_to_libc()
        leads = stub_targets(self.p, self.facts, {row: start for row, (start, _k) in
                                                  stubs.items() if row not in to_libc})
        by_module: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for row, (start, _kind) in stubs.items():
            by_module[self.module(row)].append((row, start))
        out = []
        for _module, items in by_module.items():
            sites, callers = [], defaultdict[str, int](int)
            through = 0
            libc = {to_libc[row]: self.count(row) for row, _start in items if row in to_libc}
            other: dict[str, int] = defaultdict(int)
            for row, _start in items:
                if row in leads:
                    other[f"{leads[row].function} in {leads[row].module}"] += self.count(row)
            for row, start in items:
                if row in to_libc:
                    continue
                first = self.p.row_of(start)
                rows = list(range(first, row + 1)) if first is not None else [row]
                sites.append(self.site(rows, row))
                through += self.count(row)
                for c in call_rows[targets == start].tolist():
                    callers[self.fn_name(c)] += self.count(c)
            if not through:
                continue
            top = sorted(callers.items(), key=lambda kv: -kv[1])[:5]
            leading = PltValues(_listed(other), _listed(libc))
            out.append(self.mechanism("plt", sites, [
                Metric("stubs", len(sites), "stubs", "executed PLT stubs / veneers of the module"),
                Metric("calls through stubs", through, "executions", "sum of the stubs' br counts"),
                Metric("calls per stub", round(through / len(sites), 1), "calls",
                       "calls through stubs / stubs"),
                Metric("calls into other modules", sum(other.values()), "executions",
                       "br counts of the stubs matched by count to a function of another "
                       "module (pcscope.core.stub_targets)"),
                Metric("calls counted with C-library routines", sum(libc.values()), "executions",
                       "br counts of the stubs leading to a C-library string or memory "
                       "routine, counted with that routine's mechanism"),
            ], ["adrp x16; ldr x17, [x16, …]; add x16, x16, …; br x17 (or a veneer ending in "
                "br x16)"] + ([f"direct callers found: {', '.join(n for n, _ in top)}"]
                             if top else [])
                + ([_STUBS_OUT + ", ".join(leading.other_modules)] if other else [])
                + ([_STUBS_TO_LIBC + ", ".join(leading.libc_routines)] if libc else []),
                functions=[n for n, _ in top], values=leading if other or libc else None))
        return out

    def _stubs_to_libc(self) -> dict[int, str]:
        """The ``br`` row of each PLT stub that leads to a C-library routine (matched by
        count, as ``_stub_to``), with the routine's name."""
        out = {}
        for name, codes in self._libc_routines().items():
            calls = sum(self.count(rows[0]) for code in codes
                        if len(rows := self.p.function_rows(code).tolist()))
            way_in = self._stub_to(calls)
            if way_in is not None:
                out[way_in[0][-1]] = name
        return out

    @cached_property
    def routines(self) -> call_cohorts.Routines:
        """The routines of the profile's functions (pcscope.core.call_cohorts.Routines)."""
        return call_cohorts.routines(self.p, self.facts)

    @cached_property
    def callees(self) -> Callees:
        """Where each call leads (pcscope.core.member_calls): the one reading of calls, for
        the lookups' callers as for the per-operation trees'."""
        return call_cohorts.callees(self.p, self.facts, self.routines, self.stub_starts)

    @cached_property
    def stub_starts(self) -> frozenset[int]:
        """The first rows of the PLT stubs and veneers (the pattern pass's call-overhead
        hits) the profile holds."""
        return frozenset(row for start, _kind in self.aux_of("call-overhead").values()
                         if (row := self.p.row_of(start)) is not None)

    # -- atomics ---------------------------------------------------------------------------
    def atomics(self) -> list[Mechanism]:
        helpers: dict[str, set[int]] = defaultdict(set)
        inline_stores: list[int] = []
        for category in ("atomic-lse", "atomic-llsc"):
            for row, (_pc, where) in self.aux_of(category).items():
                if where == HELPER:
                    helpers[self.module(row)].add(self._helper(row))
                elif category == "atomic-llsc" and self.op(row).mnemonic.startswith("st"):
                    inline_stores.append(row)
        out = [m for m in (self._helper_family(fns) for fns in helpers.values()) if m]
        out += [m for m in (self._llsc_loop(r) for r in inline_stores) if m]
        return out

    def _helper(self, row: int) -> int:
        """The helper holding ``row``: its function code, or -1-row when it has none."""
        fn = int(self.p.function[row])
        return fn if fn >= 0 else -1 - row

    def _helper_rows(self, helper: int) -> list[int]:
        if helper >= 0:
            return self.p.function_rows(helper).tolist()
        row = -1 - helper
        return list(range(max(0, row - 8), min(len(self.p), row + 8)))

    def _helper_family(self, helpers: set[int]) -> Mechanism | None:
        sites, calls, lse, llsc = [], 0, 0, 0
        for helper in sorted(helpers):
            rows = self._helper_rows(helper)
            entry = self.count(rows[0])
            calls += entry
            lse += sum(self.count(r) for r in rows if isa.is_lse(self.op(r).mnemonic))
            llsc += sum(self.count(r) for r in rows if isa.is_exclusive(self.op(r).mnemonic)
                        and self.op(r).load)
            key = next((r for r in rows if isa.is_atomic(self.op(r).mnemonic)), rows[0])
            sites.append(self.site(rows, key))
        if not calls:
            return None
        return self.mechanism("outline-atomic", sites, [
            Metric("helpers", len(sites), "functions", "executed outline-atomic helpers"),
            Metric("helper calls", calls, "executions", "entry counts of the helpers"),
            Metric("LSE path", round(100.0 * min(lse, calls) / calls, 1), "%",
                   "LSE atomic executions / helper calls"),
            Metric("LL/SC path exclusive loads", llsc, "executions",
                   "exclusive-load executions inside the helpers"),
        ], ["helper tests the LSE capability flag (ldrb w16, [x16, …]; cbz w16) then runs one "
            "LSE atomic or an LL/SC loop: the binary already uses outline atomics"])

    def _llsc_loop(self, store: int) -> Mechanism | None:
        lo = max(0, store - 8)
        load = next((r for r in range(store - 1, lo - 1, -1)
                     if isa.is_exclusive(self.op(r).mnemonic) and self.op(r).load), None)
        if load is None:
            return None
        hi = min(len(self.p) - 1, store + 3)
        back = next((r for r in range(store + 1, hi + 1)
                     if (t := self.op(r).target) is not None and t <= int(self.p.pc[load])),
                    None)
        end = back if back is not None else store
        attempts = self.count(load)
        if not attempts:
            return None
        metrics = [Metric("exclusive loads", attempts, "executions", "count of the ldxr")]
        if back is not None:
            per_entry = loop_trips(self.p, load, back)
            metrics.append(Metric("attempts per entry", round(per_entry, 3), "x",
                                  "ldxr count / loop entries (entries = ldxr count - retry "
                                  "branch taken)"))
        return self.mechanism("llsc", [self.site(range(load, end + 1), load)], metrics,
                              ["inline exclusive load/store pair with a retry branch (not an "
                               "outline-atomic helper)"])

    # -- loops -----------------------------------------------------------------------------
    def loops(self) -> list[Mechanism]:
        out = []
        for row, (_head, size) in self.aux_of("spin-wait").items():
            head = row - size + 1
            per_entry = loop_trips(self.p, head, row)
            out.append(self.mechanism("spin-wait", [self.site(range(head, row + 1), row)], [
                Metric("polls per exit", round(per_entry, 2), "x",
                       "loop head count / loop entries"),
            ], ["backward branch over a body with no store", "every load reads a loop-invariant "
                "address (the address register does not advance)",
                "the exit tests the loaded value"]))
        out += self._chases()
        out += self._byte_loops()
        out += self._compare_chains()
        return out

    def _chases(self) -> list[Mechanism]:
        rows = self.rows_of("dependent-load")
        if not len(rows):
            return []
        win = self.p.window.astype(np.int64)
        _branch, head, _ = enclosing_loops(self.p, self.facts, rows, win)
        loads: dict[int, list[int]] = defaultdict(list)  # one loop per head
        for r, h in zip(rows.tolist(), head.tolist(), strict=True):
            loads[h].append(r)
        loops = [_Loop(h, self._last_back_edge(h, max(keys)), tuple(keys))
                 for h, keys in loads.items()]
        out = []
        for group in self.same_loops(loops):
            # Loops with `continue` edges have several back edges whose taken counts the
            # profile cannot separate from joins, so the figures are steps of the chain
            # (the hottest chained load's count per loop) and steps per call of the
            # functions holding them.
            steps = sum(max(self.count(r) for r in loop.keys) for loop in group)
            calls = sum(self.count(int(self.p.function_rows(fn)[0]))
                        for fn in {int(self.p.function[loop.lo]) for loop in group} if fn >= 0)
            prefetch = any(isa.is_prefetch(self.op(r).mnemonic)
                           for loop in group for r in loop.rows)
            budget = self._step_budget(group[0])
            relink = self._relink_store(group[0])
            walks = [chain_walk.read(self.p, self.op, list(loop.rows), loop.keys, self.joins)
                     for loop in group]
            mask = chain_walk.masked(self.p, self.op, list(group[0].rows), group[0].keys)
            wrap = chain_walk.wrapped(self.p, self.op, list(group[0].rows), group[0].keys)
            second = chain_walk.second_value(walks[0], self.p.asm, lambda r: int(self.p.pc[r]))
            reach, beside, pair = chain_walk.second_values(walks[0], self.p.asm)
            rejects = chain_walk.rejects(walks[0], self.p.asm, lambda r: int(self.p.pc[r]))
            chase = ChaseValues(budget, relink, chain_walk.wrap_value(wrap, self.p.asm),
                                chain_walk.mask_value(mask, self.p.asm), prefetch, second,
                                reach, beside, pair, *rejects)
            out.append(self.mechanism("pointer-chase", [
                self.site([*loop.rows, *walk.extension], loop.keys[0])
                for loop, walk in zip(group, walks, strict=True)], [
                Metric("chain steps", steps, "executions",
                       "count of the hottest chained load, summed over the copies"),
                Metric("steps per call", round(steps / calls, 2) if calls else 0.0, "x",
                       "chain steps / count of the functions' first instructions"),
                Metric("chained loads", sum(len(loop.keys) for loop in group), "loads",
                       "loads on the loop-carried chain"),
                *chain_walk.metrics(walks[0], self.share(walks[0].extension)),
                *chain_walk.mask_metrics(mask, walks[0].entry_bytes),
                *chain_walk.wrap_metrics(wrap),
            ], ["in a loop (backward branch)", "the load's address comes, through registers, "
                "from its own loaded value of the previous iteration (loop-carried)",
                "not a GOT/global, canary, stack, writeback-stream or jump-table load",
                *self.copies_check(group)]
                + ([f"the walk already has a step budget: {counts_down(budget)}"] if budget
                   else [])
                + ([f"{RELINKS}: {relink}"] if relink else [])
                + (["prefetch already issued in the loop (prfm)"] if prefetch else [])
                + chain_walk.checks(walks[0], self.p.asm, lambda r: int(self.p.pc[r]))
                + chain_walk.mask_checks(mask, self.p.asm, lambda r: int(self.p.pc[r]))
                + chain_walk.wrap_checks(wrap, self.p.asm, lambda r: int(self.p.pc[r]))
                + chain_walk.second_checks(walks[0], self.p.asm, lambda r: int(self.p.pc[r])),
                values=chase if chase != ChaseValues() else None))  # none: no value
        return out

    def _step_budget(self, loop: _Loop) -> str | None:
        """The register that counts the loop's steps down (``sub(s) wN, wN, #1``) and is
        tested against zero (``cmp wN, #0``, ``cbz``/``cbnz wN``, or the ``subs`` itself
        feeding a conditional branch): a limit on the walk that already exists."""
        ops = [self.op(r) for r in loop.rows]
        for i, op in enumerate(ops):
            if op.mnemonic not in ("sub", "subs") or len(op.operands) != 3 or \
                    op.operands[2] not in ("#1", "#0x1") or len(op.dest) != 1 or \
                    isa.parse_register(op.operands[1]) != op.dest[0]:
                continue
            reg = op.dest[0]
            flags_tested = op.mnemonic == "subs" and i + 1 < len(ops) and \
                isa.is_conditional_branch(ops[i + 1].mnemonic)
            if flags_tested or any(_tests_zero(other, reg) for other in ops):
                return op.operands[0]
        return None

    def _relink_store(self, loop: _Loop) -> str | None:
        """The first store in the loop whose value is a link a chained load brought in
        (``ldr w3, [x10, #4]`` … ``str w3, [x30]``, no other write of w3 between them, the
        back edge included) to memory off the stack: the walk rewrites the structure it
        walks (a tree or chain insert), which a spill, a stored counter or a link changed
        before the store is not."""
        rows = list(loop.rows)
        for i, r in enumerate(rows):
            op = self.op(r)
            if not isa.is_store(op.mnemonic) or op.addr[:1] in (("sp",), ("x29",)):
                continue
            # the value's last writer before the store, this iteration or the previous one
            before = rows[:i][::-1] + rows[i + 1:][::-1]
            for reg in set(op.src) - set(op.addr):
                writer = next((w for w in before if reg in self.op(w).dest), None)
                if writer in loop.keys and reg in self.op(writer).loaded:
                    return f"`{self.p.asm(r)}` at {int(self.p.pc[r]):#x}"
        return None

    def same_loops(self, loops: list[_Loop]) -> list[list[_Loop]]:
        """Loops grouped into mechanisms: overlapping loops of one function are one loop
        (a walk with a back edge per branch of the tree), and loops whose bodies are the
        same code modulo register allocation (pcscope.core.same_code) are one mechanism."""
        merged: list[_Loop] = []
        for loop in sorted(loops, key=lambda lp: (int(self.p.function[lp.lo]), lp.lo)):
            last = merged[-1] if merged else None
            if last is not None and loop.lo <= last.hi and \
                    int(self.p.function[loop.lo]) == int(self.p.function[last.lo]):
                merged[-1] = _Loop(last.lo, max(last.hi, loop.hi), last.keys + loop.keys)
            else:
                merged.append(loop)
        groups: dict[object, list[_Loop]] = defaultdict(list)
        for loop in merged:
            key = same_code.signature(self.p.asm(r) for r in loop.rows)
            groups[key if key is not None else loop.lo].append(loop)
        return list(groups.values())

    def copies_check(self, group: list[_Loop]) -> list[str]:
        if len(group) < 2:
            return []
        names = ", ".join(dict.fromkeys(self.fn_name(loop.lo) for loop in group))
        return [f"the same loop code (modulo register allocation and scheduling) runs in "
                f"{len(group)} places ({names}): one mechanism, sized by the sum"]

    @cached_property
    def _backward(self) -> tuple[np.ndarray, np.ndarray]:
        """The rows of the backward branches (in their window) and of their loop heads."""
        return backward_branches(self.p, self.facts, self.p.window.astype(np.int64))

    def _last_back_edge(self, head: int, default: int) -> int:
        """The last backward branch to the loop head ``head``; ``default`` when none."""
        branches, heads = self._backward
        mine = branches[heads == head]
        return int(mine.max()) if len(mine) else default

    def _byte_loops(self) -> list[Mechanism]:
        hits = self.aux_of("vectorization")
        if not hits:
            return []
        branches, heads = self._backward
        loops = []
        for row in hits:
            head = self.p.row_of(hits[row][0])
            mine = branches[(heads == head) & (branches >= row)]
            if head is not None and len(mine):
                loops.append(_Loop(head, int(mine.min()), (row,)))
        out = []
        for group in self.same_loops(loops):
            iterations = sum(self.count(loop.lo) for loop in group)
            entries = sum(self.count(loop.lo) / max(hits[k][1], 1) for loop in group
                          for k in loop.keys[:1])
            trips = round(iterations / entries) if entries else 0
            out.append(self.mechanism("byte-loop", [
                self.site(loop.rows, loop.keys[0]) for loop in group], [
                Metric("iterations per entry", trips, "x", "loop head count / loop entries"),
            ], ["backward branch with a narrow (byte/halfword) load per iteration",
                "the load's pointer or index steps by a constant", "the loaded value is compared",
                f"{trips} iterations per entry (at least 8)", *self.copies_check(group)]))
        return out

    def _compare_chains(self) -> list[Mechanism]:
        """Unrolled byte compares (memcmp written out): at least CHAIN_STEPS steps in one
        window that each compare two narrow loaded values and branch to the same label."""
        f = self.facts
        cond = f.flags(isa.is_conditional_branch) & (f.target >= 0)
        setter = f.flags(shapes.FLAG_SETTERS.__contains__)
        narrow = f.flags(shapes.NARROW_LOADS.__contains__)
        rows = np.flatnonzero(cond[1:] & setter[:-1]) + 1
        ahead = np.zeros(len(rows), dtype=np.int64)
        for back in (2, 3, 4):
            ok = rows - back >= 0
            ahead[ok] += narrow[rows[ok] - back]
        groups: dict[tuple[int, int], list[tuple[int, list[int]]]] = defaultdict(list)
        for r in rows[ahead >= 2].tolist():
            compare = self.op(r - 1)
            loads = [q for q in range(max(0, r - 4), r - 1) if narrow[q]
                     and set(self.op(q).loaded) & set(compare.src)]
            if len(loads) >= 2:
                groups[(int(self.p.window[r]), int(f.target[r]))].append((r, loads))
        out = []
        for steps in groups.values():
            if len(steps) < CHAIN_STEPS:
                continue
            first = self.count(steps[0][0] - 1)
            if not first:
                continue
            depth = sum(self.count(r - 1) for r, _ in steps) / first
            halves = sum(1 for _r, loads in steps
                         if self.op(loads[0]).mnemonic in _HALFWORD_LOADS)
            out.append(self.mechanism("byte-compare", [
                self.site([*loads, r - 1, r], loads[0]) for r, loads in steps], [
                Metric("compare steps", len(steps), "steps", "byte compares exiting to one label"),
                Metric("bytes compared per entry", round(depth, 2), "x",
                       "sum of the steps' compare counts / the first step's count"),
                Metric("halfword steps", halves, "steps",
                       "steps comparing 16-bit loads (ldrh) among the byte steps"),
            ], [f"{len(steps)} steps, each comparing two narrow loads and branching to one "
                "exit label (an unrolled byte-by-byte compare)"]))
        return out

    # -- the rest --------------------------------------------------------------------------
    def divisions(self) -> list[Mechanism]:
        by_fn: dict[int, list[int]] = defaultdict(list)
        for row in self.rows_of("division").tolist():
            by_fn[int(self.p.function[row])].append(row)
        out = []
        for _fn, rows in by_fn.items():
            runs = sum(self.count(r) for r in rows)
            if not runs:
                continue
            fp = sum(self.count(r) for r in rows if isa.is_fp_divide(self.op(r).mnemonic))
            kind = "fp-division" if 2 * fp >= runs else "division"
            out.append(self.mechanism(kind, [self.site([r], r) for r in rows], [
                Metric("divides", runs, "executions", "sum of the divide counts"),
                Metric("floating-point share", round(100.0 * fp / runs, 1), "%",
                       "fdiv/fsqrt executions / all divides"),
            ], ["fdiv/fsqrt in the function" if kind == "fp-division"
                else "udiv/sdiv in the function"]))
        return out

    @cached_property
    def _libc_names(self) -> list[str | None]:
        """Per function code, the C-library routine it is (``libc_routine_name``), or None."""
        return [libc_routine_name(name) for name in self.p.function_names]

    def _libc_routines(self) -> dict[str, list[int]]:
        """The function codes of each C-library string/memory routine (all its variants)."""
        routines: dict[str, list[int]] = defaultdict(list)
        for code, base in enumerate(self._libc_names):
            if base is not None:
                routines[base].append(code)
        return routines

    def libc(self) -> list[Mechanism]:
        locks = [code for code, (name, base) in enumerate(zip(self.p.function_names,
                                                              self._libc_names, strict=True))
                 if base is None and _LOCKS.match(name)]
        out = [m for m in (self._functions("libc-routine", name, codes,
                                           "memcpy" if name in _COPIES else None)
                           for name, codes in self._libc_routines().items()) if m]
        if locks:
            m = self._functions("libc-lock", "C-library locks", locks)
            out += [m] if m else []
        return out

    def _functions(self, kind: str, what: str, codes: list[int],
                   category: str | None = None) -> Mechanism | None:
        sites, calls = [], 0
        for code in codes:
            rows = self.p.function_rows(code).tolist()
            if not rows or not self.counts[rows].sum():
                continue
            calls += self.count(rows[0])
            sites.append(self.site(rows, max(rows, key=lambda r: (self.count(r), -r))))
        if not sites:
            return None
        checks = [f"C-library function{'s' if len(sites) > 1 else ''} named {what}"
                  if kind == "libc-lock" else f"C-library {what} routine (by symbol name)"]
        metrics = [Metric("calls", calls, "executions", "entry counts (first instruction's count)")]
        callers: list[tuple[str, int]] = []
        keyed: list[keyed_lookups.KeyedCaller] = []
        if kind == "libc-routine":
            way_in = self._stub_to(calls)
            if way_in is not None:
                stub, call_rows = way_in
                callers, rest = self._callers(call_rows, calls)
                checks.append("reached through a PLT stub with the same call count; its "
                              "callers: " + ", ".join(f"{name} ({n:,})" for name, n in callers)
                              + rest)
                caller = self._caller_loop(call_rows, calls, stub, compares="cmp" in what)
                if caller is not None:
                    sites.append(caller.site)
                    metrics += caller.metrics
                    checks.append(caller.check)
                    keyed = self._keyed_callers(caller.function)
                    if keyed:
                        lookups = self.count(self.p.function_rows(caller.function)[0])
                        metrics += keyed_lookups.metrics(keyed[0])
                        metrics.append(keyed_lookups.walk_metric(keyed, lookups))
                        checks.append(keyed_lookups.check(keyed[0]))
                        checks.append(keyed_lookups.walk_check(keyed))
                    if keyed[1:]:
                        checks.append(keyed_lookups.more_check(keyed[1:]))
                else:
                    sites.append(self.site(stub, stub[-1]))
                    checks.append("its PLT stub is counted with it")
        m = self.mechanism(kind, sites, metrics, checks,
                           functions=[name for name, _ in callers], category=category,
                           values=keyed_lookups.values(keyed) if keyed else None)
        if keyed:
            self.keyed[m.id] = keyed
        return m

    def _stub_to(self, calls: int) -> tuple[list[int], list[int]] | None:
        """The rows of the PLT stub whose count matches the routine's call count, and the
        rows of the calls to it. The profile has no call graph, but with exact counts the
        stub run (within STUB_MATCH) as often as the routine is entered, and clearly closer
        than any other stub (the next gap at least CLEAR times larger), is the way in;
        otherwise nothing is claimed."""
        if not calls:
            return None
        gaps = sorted((abs(self.count(row) - calls), start, row)
                      for row, (start, _k) in self.aux_of("call-overhead").items())
        if not gaps or gaps[0][0] > STUB_MATCH * calls or \
                (len(gaps) > 1 and gaps[1][0] < CLEAR * gaps[0][0]):
            return None
        _gap, start, br = gaps[0]
        first = self.p.row_of(start)
        stub = list(range(first, br + 1)) if first is not None else [br]
        calls_in = np.flatnonzero(self.facts.call & (self.facts.target == start))
        return stub, calls_in.tolist()

    def _callers(self, call_rows: list[int], calls: int) -> tuple[list[tuple[str, int]], str]:
        """The direct callers making at least call_cohorts.CALLER_PART of the ``calls``, hottest first (at
        most 3), with their call counts; and what the others make (", n more (x %)", or
        empty)."""
        by_fn: dict[str, int] = defaultdict(int)
        for r in call_rows:
            by_fn[self.fn_name(r)] += self.count(r)
        ranked = sorted(by_fn.items(), key=lambda kv: -kv[1])
        top = [(name, n) for name, n in ranked[:3] if n >= call_cohorts.CALLER_PART * calls]
        rest = sum(n for _, n in ranked) - sum(n for _, n in top)
        more = len(ranked) - len(top)
        return top, (f", {more} more ({rest / calls:.2%} of the calls)" if more and calls else "")

    def _caller_loop(self, call_rows: list[int], calls: int, stub: list[int],
                     compares: bool) -> _CallerLoop | None:
        """The code of the one caller that makes nearly every call (DOMINANT_CALLER), which
        runs per call and so belongs to the same mechanism (one site with the ``stub`` it
        calls through): the whole caller when it is a small wrapper calling the routine at
        least once per entry (a lookup: of a routine that ``compares``, with how often it
        finds its key), else the loop around its hottest call; None when no caller
        dominates or the call is not in a loop."""
        by_fn: dict[int, list[int]] = defaultdict(list)
        for r in call_rows:
            by_fn[int(self.p.function[r])].append(r)
        fn, rows = max(by_fn.items(), key=lambda kv: sum(self.count(r) for r in kv[1]),
                       default=(-1, []))
        made = sum(self.count(r) for r in rows)
        if fn < 0 or made < DOMINANT_CALLER * calls:
            return None
        name = self.fn_name(rows[0])
        body = self.p.function_rows(fn).tolist()
        entries = self.count(body[0])
        per_entry = made / entries if entries else 0.0
        metrics = [Metric("calls from the top caller", round(100.0 * made / calls, 1), "%",
                          f"calls from {name} / all calls"),
                   Metric("calls per caller entry", round(per_entry, 2), "x",
                          f"calls from {name} / its first instruction's count"),
                   Metric("caller entries", entries, "executions",
                          f"count of {name}'s first instruction")]
        if len(body) <= WRAPPER and per_entry >= 1.0:
            if compares:  # a lookup: a zero result of the compare is a hit
                metrics += keyed_lookups.hit_metrics(
                    self.p, self.op, lambda row: gather_partition.taken_share(self, row), rows)
            return _CallerLoop(fn, self.site(body + stub, max(rows, key=self.count)), metrics,
                               f"{name} makes {made / calls:.0%} of the calls and is a small "
                               f"function ({len(body)} executed instructions) calling it "
                               f"{per_entry:.2f} times per entry: its code and the stub are "
                               f"counted with it")
        hottest = max(rows, key=self.count)
        win = self.p.window.astype(np.int64)
        branch, head, inside = enclosing_loops(self.p, self.facts, np.array([hottest]), win)
        if not inside[0]:
            return None
        loop = range(int(head[0]), int(branch[0]) + 1)
        return _CallerLoop(fn, self.site([*loop, *stub], hottest), metrics,
                           f"{name} makes {made / calls:.0%} of the calls from a loop "
                           f"({len(loop)} instructions): the loop and the stub are counted "
                           f"with it")

    def _keyed_callers(self, lookup: int) -> list[keyed_lookups.KeyedCaller]:
        """The callers of function ``lookup`` that look up many constant keys per entry
        (pcscope.core.keyed_lookups), reaching it directly, through a PLT stub matched by
        count, or through a function that tail-calls it (``b`` to it or its stub from
        another function): that function's callers pass the key, so they are its callers
        and the tail call is none."""
        calls, forwarders = [], set()
        for row in self._calls_to(lookup):
            if self.facts.call[row]:
                calls.append(row)
            elif (fn := int(self.p.function[row])) >= 0:
                forwarders.add(fn)
        via: dict[int, str] = {}
        for fn in sorted(forwarders):
            forwarded = [r for r in self._calls_to(fn) if self.facts.call[r]]
            calls += forwarded
            via |= dict.fromkeys(forwarded, self.p.function_names[fn])
        return keyed_lookups.find(self.p, self.op, calls, via)

    def _calls_to(self, fn: int) -> list[int]:
        """The rows of the calls and tail calls run into function ``fn``'s entry, directly
        or through a PLT stub (pcscope.core.member_calls: a stub whose count matches
        several routines leads to none)."""
        routine = self.callees.starting[int(self.p.function_rows(fn)[0])]
        return [row for row, _led in self.callees.calls_into(
            {routine}, np.ones(len(self.p), dtype=bool))]

    def memory_states(self) -> list[Mechanism]:
        """Loops keeping their state in memory (pcscope.core.memory_state): one mechanism per
        function, a site per loop, its figures from the heaviest loop."""
        by_fn: dict[int, list[memory_state.LoopState]] = defaultdict(list)
        for fn, state in memory_state.find(self.p, self.loop_rows, self.op):
            by_fn[fn].append(state)
        out = []
        for states in by_fn.values():
            top = max(states, key=lambda s: self.share(s.rows))
            out.append(self.mechanism("memory-state", [
                self.site(s.rows, max(s.rows, key=lambda r: (self.count(r), -r)))
                for s in states], memory_state.metrics(top), memory_state.checks(top),
                values=memory_state.values(top)))
        return out

    @cached_property
    def loop_rows(self) -> list[list[int]]:
        """Each warm loop's own rows (pcscope.core.natural_loops)."""
        return [loop.rows for loop in natural_loops.loops(self.p, self.facts)]

    @cached_property
    def function_loops(self) -> list[natural_loops.Loop]:
        """Each warm loop's own rows within its function, across windows."""
        return natural_loops.loops(self.p, self.facts, self.p.function)

    def loop_entries(self, i: int) -> frozenset[int]:
        """The pcs control enters ``function_loops[i]`` at (natural_loops.entries)."""
        if i not in self._loop_entries:
            self._loop_entries[i] = natural_loops.entries(self.p, self.facts,
                                                          self.function_loops[i].rows)
        return self._loop_entries[i]

    @cached_property
    def tight_loops(self) -> list[range]:
        """Warm contiguous loop bodies (pcscope.core.natural_loops.tight_loops)."""
        return natural_loops.tight_loops(self.p, *self._backward)

    def table_crcs(self) -> list[Mechanism]:
        """CRCs computed with lookup tables (pcscope.core.table_crc), one per function."""
        return [self.mechanism("table-crc", [self.site(c.rows, max(
            c.rows, key=lambda r: (self.count(r), -r)))], table_crc.metrics(c),
            table_crc.checks(c), values=table_crc.values(c))
            for c in table_crc.find(self.p, self.loop_rows, self.op)]

    def spill_blocks(self) -> list[Mechanism]:
        """Long hot straight-line blocks that spill and reload (pcscope.core.spill_blocks)."""
        return [self.mechanism("spill-block", [self.site(b.spills, b.spills[0])],
                               spill_blocks.metrics(b, self.p.total), spill_blocks.checks(b))
                for b in spill_blocks.find(self.p, self.op)]

    def claimed(self, found: list[Mechanism]) -> np.ndarray:
        """Per row: whether a mechanism of ``found`` counts it."""
        return self.owners(found) >= 0

    def owners(self, found: list[Mechanism]) -> np.ndarray:
        """Per row: the position in ``found`` of a mechanism counting it, or -1."""
        out = np.full(len(self.p), -1, dtype=np.int32)
        for i, m in enumerate(found):
            pcs = np.fromiter((pc for site in m.sites for pc in site.pcs), dtype=np.uint64)
            out[np.searchsorted(self.p.pc, pcs)] = i
        return out

    def return_zeroing(self, claimed: np.ndarray) -> list[Mechanism]:
        """Registers cleared before returns in many functions (pcscope.core.return_zeroing):
        one mechanism, a site per function."""
        z = return_zeroing.find(self.p, self.facts, self.op, claimed)
        if z is None:
            return []
        return [self.mechanism("return-zeroing", [self.site(rows, rows[-1]) for rows in
                                                  z.runs.values()],
                               return_zeroing.metrics(z), return_zeroing.checks(z))]

    def per_operation(self, found: list[Mechanism]) -> list[Mechanism]:
        """Per-operation call trees (pcscope.core.call_cohorts): the plumbing every operation
        runs, less the rows a mechanism of ``found`` counts (a row is counted once; the
        checks name that mechanism, and the trees name the callees they share)."""
        # most profiles have no tree: where calls lead is read only for one (~65 ms at 1M rows)
        cohorts = call_cohorts.find(self.p, self.op, self.owners(found), self.routines,
                                    lambda: self.callees)
        def owner(position: int) -> str:
            return found[position].id
        trees = [self.mechanism("per-operation", [
            self.site(m.rows, self._return_of(m.rows)) for m in cohort.members],
            call_cohorts.metrics(cohort), call_cohorts.checks(cohort, owner),
            values=call_cohorts.values(cohort, owner)) for cohort in cohorts]
        tree_id = [t.id for t in trees].__getitem__
        out = []
        for n, (t, cohort) in enumerate(zip(trees, cohorts, strict=True)):
            shared = (*call_cohorts.shared(cohort, tree_id),
                      *call_cohorts.shared_in(n, cohorts, tree_id))
            out.append(replace(
                t, checks=(*t.checks, *(call_cohorts.SHARED_CHECK + s for s in shared)),
                values=with_value(t.values, msgspec.structs.replace(
                    t.value(TreeValues) or TreeValues(), shared=shared))) if shared else t)
        return out

    def link_lookups(self, found: list[Mechanism]) -> list[Mechanism]:
        """``found`` with each per-operation tree and each lookup mechanism whose
        constant-key callers are members of that tree naming each other, with the lookups
        per operation (one chain of cause: the tree makes the lookups)."""
        lookups: dict[str, list[str]] = defaultdict(list)  # per tree
        trees: dict[str, list[str]] = defaultdict(list)  # per lookup
        for tree in (m for m in found if m.kind == "per-operation"):
            operations = next(x.value for x in tree.metrics if x.name == "operations")
            for lookup, callers in self.keyed.items():
                inside = [c for c in callers if c.name in tree.functions]
                if inside:
                    lookups[tree.id].append(keyed_lookups.tree_said(inside, lookup, operations))
                    trees[lookup].append(keyed_lookups.lookup_said(inside, tree.id, operations))
        out = []
        for m in found:
            if m.id in lookups:
                said = tuple(lookups[m.id])
                m = replace(m, checks=(*m.checks, *(keyed_lookups.TREE_CHECK + s for s in said)),
                            values=with_value(m.values, msgspec.structs.replace(
                                m.value(TreeValues) or TreeValues(), lookups=said)))
            if m.id in trees:
                said = tuple(trees[m.id])
                m = replace(m, checks=(*m.checks,
                                       *(keyed_lookups.LOOKUP_CHECK + s for s in said)),
                            values=with_value(m.values, msgspec.structs.replace(
                                m.value(LookupValues) or LookupValues(), trees=said)))
            out.append(m)
        return out

    def _return_of(self, rows: tuple[int, ...]) -> int:
        """A function's ``ret`` (what a call costs ends there), else its hottest row."""
        return next((r for r in rows if isa.is_return(self.op(r).mnemonic)),
                    max(rows, key=lambda r: (self.count(r), -r)))

    def jit(self) -> list[Mechanism]:
        out = []
        for code, name in enumerate(self.p.modules):
            rows = np.flatnonzero(self.p.module == code) if is_jit_module(name) else ()
            if not len(rows):
                continue
            # the site is the region's hottest instructions (a region may be huge)
            order = np.lexsort((rows, -self.counts[rows].astype(np.int64)))
            hottest = rows[order[:JIT_SITE]].tolist()
            region = float(self.p.value[rows].sum()) / self.p.total if self.p.total else 0.0
            out.append(self.mechanism("jit", [self.site(hottest, hottest[0])], [
                Metric("instructions", len(rows), "instructions", "executed PCs in the region"),
                Metric("region share", round(100.0 * region, 3), "%",
                       "the whole region's share of the total"),
            ], ["code in a JIT region (module name)"]))
        return out


def _listed(counts: dict[str, int]) -> tuple[str, ...]:
    """Each name with its count, the most first."""
    return tuple(f"{name} ({n:,})" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))


def _tests_zero(op: shapes.Op, reg: str) -> bool:
    """``cmp reg, #0`` or ``cbz``/``cbnz reg``."""
    first = isa.parse_register(op.operands[0]) if op.operands else None
    if first != reg:
        return False
    return op.mnemonic in ("cbz", "cbnz") or \
        (op.mnemonic == "cmp" and op.operands[1:] in (["#0"], ["#0x0"], ("#0",), ("#0x0",)))


def _reads(op: shapes.Op) -> set[str]:
    """The registers ``op`` reads, the condition flags (``_FLAGS``) included."""
    return set(op.src) | ({_FLAGS} if op.mnemonic in _FLAG_READERS else set())


def _writes(op: shapes.Op) -> tuple[str, ...]:
    """The registers ``op`` writes, the condition flags (``_FLAGS``) included."""
    return (*op.dest, _FLAGS) if op.mnemonic in shapes.FLAG_SETTERS else op.dest


def is_jit_module(name: str) -> bool:
    """A module name that marks JIT-generated code (``[jit]``, ``perf-<pid>.map``…)."""
    return bool(_JIT.match(name))
