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

import numpy as np

from pcscope.core import isa, shapes
from pcscope.core.contract.categories import CATEGORIES
from pcscope.core.mechanisms import Mechanism, MechanismTable, Metric, Site
from pcscope.core.patterns import (
    HELPER,
    CodeFacts,
    PatternTable,
    backward_branches,
    enclosing_loops,
    libc_routine_name,
    loop_trips,
)
from pcscope.core.profile import Profile

CATEGORY = {
    "dispatch": "indirect-branch", "indirect-call": "indirect-branch", "fp-division": "division",
    "plt": "call-overhead", "outline-atomic": "atomic-contention", "llsc": "atomic-llsc",
    "spin-wait": "spin-wait", "pointer-chase": "dependent-load", "byte-loop": "vectorization",
    "byte-compare": "vectorization",
    "division": "division", "libc-routine": "memcpy", "libc-lock": "atomic-contention",
    "jit": "other",
}  # fmt: skip
assert set(CATEGORY.values()) <= set(CATEGORIES)
KINDS = tuple(CATEGORY)  # every mechanism kind the finder reports
STUB_MATCH = 0.001  # a PLT stub's count within 0.1% of a routine's calls leads to it
JIT_SITE = 64  # hottest instructions of a JIT region that form its site
CHAIN_STEPS = 4  # unrolled byte-compare steps that make a compare chain
LARGE_FUNCTION = 256  # executed instructions of a function whose one table jump may dispatch
SHARED_DISPATCH = 100  # at most this many instructions per execution of that jump
DISPATCHES_PER_ENTRY = 8  # ...and at least this many executions per entry of the function
_LOCKS = re.compile(r"^_*(pthread_(mutex|rwlock|spin|cond)_\w+|lll_lock_wait\w*|"
                    r"lll_unlock_wake\w*|futex_\w+)$")
_JIT = re.compile(r"^(\[jit\]|jit[-_].*|\[anon.*\]|//anon|perf-\d+\.map|.*\.jit)$", re.I)
_COPIES = frozenset(("memcpy", "memmove", "memset", "wmemset"))

def find_mechanisms(profile: Profile, patterns: PatternTable, facts: CodeFacts) -> MechanismTable:
    """Every mechanism of the profile, heaviest first (ties by ID)."""
    finder = _Finder(profile, patterns, facts)
    found = [
        *finder.dispatch(), *finder.indirect_calls(), *finder.plt(), *finder.atomics(),
        *finder.loops(), *finder.divisions(), *finder.libc(), *finder.jit(),
    ]
    found = [m for m in found if m.sites]
    return MechanismTable(tuple(sorted(found, key=lambda m: (-m.share, m.id))))


class _Finder:
    def __init__(self, profile: Profile, patterns: PatternTable, facts: CodeFacts) -> None:
        self.p = profile
        self.patterns = patterns
        self.facts = facts
        self.counts = profile.samples
        self.code: dict[int, shapes.Op] = {}

    # -- helpers ---------------------------------------------------------------------------
    def op(self, row: int) -> shapes.Op:
        if row not in self.code:
            self.code[row] = shapes.Op.of(int(self.p.pc[row]), self.p.asm(row))
        return self.code[row]

    def fn_name(self, row: int) -> str:
        code = int(self.p.function[row])
        return self.p.function_names[code] if code >= 0 else "(no function)"

    def module(self, row: int) -> str:
        code = int(self.p.module[row])
        return self.p.modules[code] if code >= 0 else ""

    def share(self, rows: Iterable[int]) -> float:
        unique = np.unique(np.fromiter(rows, dtype=np.int64))
        total = self.p.total
        return float(self.p.value[unique].sum()) / total if total and len(unique) else 0.0

    def site(self, rows: Iterable[int], key: int) -> Site:
        rows = sorted(set(rows))
        return Site(int(self.p.pc[key]), self.fn_name(key), tuple(int(self.p.pc[r]) for r in rows),
                    self.share(rows))

    def mechanism(self, kind: str, sites: list[Site], metrics: list[Metric],
                  checks: list[str], functions: Iterable[str] = (),
                  category: str | None = None) -> Mechanism:
        sites = sorted(sites, key=lambda s: (-s.share, s.pc))
        pcs = np.fromiter((pc for s in sites for pc in s.pcs), dtype=np.uint64)
        rows = np.searchsorted(self.p.pc, pcs)  # every site PC is a row of the profile
        names = list(dict.fromkeys([*(s.function for s in sites), *functions]))
        return Mechanism(kind, category or CATEGORY[kind], sites[0].pc, tuple(sites), tuple(names),
                         self.share(rows.tolist()), tuple(metrics),
                         tuple(checks))

    def count(self, row: int) -> int:
        return int(self.counts[row])

    def rows_of(self, category: str) -> np.ndarray:
        return np.sort(self.patterns.rows(category))

    def aux_of(self, category: str) -> dict[int, tuple[int, int]]:
        idx = self.patterns.indices(category)
        return {int(self.patterns.row[i]): (int(self.patterns.aux_pc[i]), int(self.patterns.aux[i]))
                for i in idx}

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
            out.append(self.mechanism("dispatch", [
                self.site([r] + ([self.p.row_of(pc)] if self.p.row_of(pc) is not None else []), r)
                for r, pc in sites], [
                Metric("dispatch sites", len(sites), "sites", "executed table-fed br in the function"),
                Metric("dispatches", dispatches, "executions", "sum of the dispatch br counts"),
                Metric("instructions per dispatch", round(fn_total / dispatches, 1), "instructions",
                       "the function's instruction count / dispatches"),
            ], [
                "target loaded from a table indexed by a register (ldr xT, [table, idx, lsl #3]) "
                "then br",
                f"{len(sites)} such br in one function of {len(rows):,} executed instructions"
                + (" (threaded: each handler ends in its own copy)" if threaded
                   else " (one shared dispatch jump)"),
            ]))
        return out

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
                self.site([r] + ([self.p.row_of(pc)] if pc and self.p.row_of(pc) is not None
                                 else []), r) for r, pc in sites], [
                Metric("call sites", len(sites), "sites", "executed blr in the function"),
                Metric("calls", calls, "executions", "sum of the blr counts"),
            ], ["blr through a register loaded from memory (function pointer or vtable slot)"]))
        return out

    def plt(self) -> list[Mechanism]:
        stubs = self.aux_of("call-overhead")
        by_module: dict[str, list[tuple[int, int]]] = defaultdict(list)
        for row, (start, _kind) in stubs.items():
            by_module[self.module(row)].append((row, start))
        calls = self.facts.call & (self.facts.target >= 0)
        call_rows = np.flatnonzero(calls)
        targets = self.facts.target[call_rows]
        out = []
        for _module, items in by_module.items():
            sites, callers = [], defaultdict(int)
            through = 0
            for row, start in items:
                first = self.p.row_of(start)
                rows = list(range(first, row + 1)) if first is not None else [row]
                sites.append(self.site(rows, row))
                through += self.count(row)
                for c in call_rows[targets == start].tolist():
                    callers[self.fn_name(c)] += self.count(c)
            if not through:
                continue
            top = sorted(callers.items(), key=lambda kv: -kv[1])[:5]
            out.append(self.mechanism("plt", sites, [
                Metric("stubs", len(sites), "stubs", "executed PLT stubs / veneers of the module"),
                Metric("calls through stubs", through, "executions", "sum of the stubs' br counts"),
                Metric("calls per stub", round(through / len(sites), 1), "calls",
                       "calls through stubs / stubs"),
            ], ["adrp x16; ldr x17, [x16, …]; add x16, x16, …; br x17 (or a veneer ending in "
                "br x16)"] + ([f"direct callers found: {', '.join(n for n, _ in top)}"]
                             if top else []), functions=[n for n, _ in top]))
        return out

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
        back = next((r for r in range(store + 1, hi + 1) if self.op(r).target is not None
                     and self.op(r).target <= int(self.p.pc[load])), None)
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
        back = self.back_edges()
        loops: dict[int, list[int]] = defaultdict(list)  # one loop per head
        for r, h in zip(rows.tolist(), head.tolist(), strict=True):
            loops[h].append(r)
        out = []
        for h, loads in loops.items():
            b = max(back.get(h, [max(loads)]))
            # Loops with `continue` edges have several back edges whose taken counts the
            # profile cannot separate from joins, so the figures are steps of the chain
            # (the hottest chained load's count) and steps per call of the function.
            steps = max(self.count(r) for r in loads)
            fn = int(self.p.function[h])
            calls = self.count(int(self.p.function_rows(fn)[0])) if fn >= 0 else 0
            prefetch = any(isa.is_prefetch(self.op(r).mnemonic) for r in range(h, b + 1))
            out.append(self.mechanism("pointer-chase", [self.site(range(h, b + 1), loads[0])], [
                Metric("chain steps", steps, "executions", "count of the hottest chained load"),
                Metric("steps per call", round(steps / calls, 2) if calls else 0.0, "x",
                       "chain steps / count of the function's first instruction"),
                Metric("chained loads", len(loads), "loads", "loads on the loop-carried chain"),
            ], ["in a loop (backward branch)", "the load's address comes, through registers, "
                "from its own loaded value of the previous iteration (loop-carried)",
                "not a GOT/global, canary, stack, writeback-stream or jump-table load"]
                + (["prefetch already issued in the loop (prfm)"] if prefetch else [])))
        return out

    def back_edges(self) -> dict[int, list[int]]:
        """Loop head row -> the rows of the backward branches (in its window) to it."""
        if not hasattr(self, "_back"):
            win = self.p.window.astype(np.int64)
            branches, heads = backward_branches(self.p, self.facts, win)
            self._back: dict[int, list[int]] = defaultdict(list)
            for b, h in zip(branches.tolist(), heads.tolist(), strict=True):
                self._back[h].append(b)
        return self._back

    def _byte_loops(self) -> list[Mechanism]:
        hits = self.aux_of("vectorization")
        if not hits:
            return []
        win = self.p.window.astype(np.int64)
        branches, heads = backward_branches(self.p, self.facts, win)
        out = []
        for row, (head_pc, trips) in hits.items():
            head = self.p.row_of(head_pc)
            mine = branches[(heads == head) & (branches >= row)]
            if head is None or not len(mine):
                continue
            end = int(mine.min())
            out.append(self.mechanism("byte-loop", [self.site(range(head, end + 1), row)], [
                Metric("iterations per entry", trips, "x", "loop head count / loop entries"),
            ], ["backward branch with a narrow (byte/halfword) load per iteration",
                "the load's pointer or index steps by a constant", "the loaded value is compared",
                f"{trips} iterations per entry (at least 8)"]))
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
            out.append(self.mechanism("byte-compare", [
                self.site([*loads, r - 1, r], loads[0]) for r, loads in steps], [
                Metric("compare steps", len(steps), "steps", "byte compares exiting to one label"),
                Metric("bytes compared per entry", round(depth, 2), "x",
                       "sum of the steps' compare counts / the first step's count"),
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

    def libc(self) -> list[Mechanism]:
        routines: dict[str, list[int]] = defaultdict(list)
        locks: list[int] = []
        for code, name in enumerate(self.p.function_names):
            base = libc_routine_name(name)
            if base is not None:
                routines[base].append(code)
            elif _LOCKS.match(name):
                locks.append(code)
        out = [m for m in (self._functions("libc-routine", name, codes,
                                           "memcpy" if name in _COPIES else "other")
                           for name, codes in routines.items()) if m]
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
        callers = self._callers_through_stub(calls) if kind == "libc-routine" else []
        if callers:
            checks.append("reached through a PLT stub with the same call count; its callers: "
                          + ", ".join(f"{name} ({n:,})" for name, n in callers))
        return self.mechanism(kind, sites, [
            Metric("calls", calls, "executions", "entry counts (first instruction's count)"),
        ], checks, functions=[name for name, _ in callers], category=category)

    def _callers_through_stub(self, calls: int) -> list[tuple[str, int]]:
        """The direct callers (hottest first, at most 3) of the PLT stub whose count matches
        the routine's call count. The profile has no call graph, but with exact counts the
        stub run (within STUB_MATCH) as often as the routine is entered, and clearly closer
        than any other stub, is the way in; otherwise nothing is claimed."""
        if not calls:
            return []
        gaps = sorted((abs(self.count(row) - calls), start)
                      for row, (start, _k) in self.aux_of("call-overhead").items())
        if not gaps or gaps[0][0] > STUB_MATCH * calls or \
                (len(gaps) > 1 and gaps[1][0] < 5 * gaps[0][0]):
            return []
        rows = np.flatnonzero(self.facts.call & (self.facts.target == gaps[0][1]))
        by_fn: dict[str, int] = defaultdict(int)
        for r in rows.tolist():
            by_fn[self.fn_name(r)] += self.count(r)
        return sorted(by_fn.items(), key=lambda kv: -kv[1])[:3]

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


def is_jit_module(name: str) -> bool:
    """A module name that marks JIT-generated code (``[jit]``, ``perf-<pid>.map``…)."""
    return bool(_JIT.match(name))
