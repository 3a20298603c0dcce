"""Deterministic pattern pass (index time): AArch64 shapes worth a performance look.

Mnemonic categories are decided once per distinct mnemonic and mapped to rows with numpy.
Register facts (operand registers, memory base, writeback, branch targets) come from byte
scans over the asm blob (``pcscope.core.asmtext.AsmScan``), so the sequence patterns
(dependent loads, spin loops, byte loops) are numpy work too; Python reads instructions
only in the loops that pass the vectorised checks (pcscope.core.loop_filters for the
register-level ones) and at ``br`` rows.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from pcscope.core import isa, shapes
from pcscope.core.columns import StringColumn
from pcscope.core.pattern_table import (
    CATEGORY_CODE,
    HELPER,
    INLINE,
    PLT,
    PLT_SYMBOL,
    VENEER,
    PatternTable,
)
from pcscope.core.profile import Profile

_FAMILY_CATEGORY = {
    "llsc": "atomic-llsc",
    "lse": "atomic-lse",
    "barrier": "barrier",
    "acquire-release": "acquire-release",
    "division": "division",
}
SPIN_MAX = 8  # instructions in a spin loop body, branch included
# Besides loads and branches, what a polling loop may do: test the loaded value, wait.
SPIN_OK = frozenset((
    "cmp", "cmn", "tst", "ccmp", "ccmn", "and", "ands", "eor", "orr", "mov", "ubfx", "sbfx",
    "lsr", "asr", "lsl", "yield", "wfe", "wfet", "wfi", "isb", "sevl", "sev", "nop", "dmb",
))  # fmt: skip
SP, XZR = 31, 32  # register codes (pcscope.core.asmtext.register_code); x0..x30 are 0..30
LOOP_MAX = 64  # rows of a loop body the shape checks read
LOOP_MIN_SHARE = 1e-6  # a loop below this share of the total is not read for chases
# The checks read instruction text in Python, so they read only what can matter: the
# hottest loops and indirect branches (a cold one stays unconfirmed: no chase, no class).
LOOP_BUDGET = 1000
BRANCH_BUDGET = 4000
BYTE_LOOP_MAX = 32
MIN_TRIPS = 8  # iterations per entry that make a byte loop worth vectorizing
# Rows byte-scanned at once (code_facts), by each of FACTS_THREADS threads (numpy lets go
# of the GIL in the scans' array work): the temporaries, ~100 bytes a row, stay ~25 MB at
# any profile size.
FACTS_CHUNK = 1 << 17
FACTS_THREADS = 2


@dataclass
class CodeFacts:
    """Per-row instruction facts (arrays over rows, ascending PC)."""

    names: list[str]  # canonical mnemonics
    canon: np.ndarray  # int32 code into names
    dest: np.ndarray  # int8 [rows, 2]: general registers written with a value (-1 none)
    base: np.ndarray  # int8: memory base register (-1 none or pc-relative literal)
    writeback: np.ndarray  # bool: the addressing mode updates the base
    load: np.ndarray  # bool: reads memory into a register
    store: np.ndarray  # bool
    call: np.ndarray  # bool
    target: np.ndarray  # int64: direct branch target (-1 none)
    first: np.ndarray  # int8: the first operand's register (a br's target register)
    code: Code  # the rows' instruction shapes, read where a check needs them

    def rows_named(self, names: frozenset[str] | set[str]) -> np.ndarray:
        return np.flatnonzero(self.flags(names.__contains__))

    def flags(self, test) -> np.ndarray:
        """Per-row bool from a predicate on the canonical mnemonic."""
        return _flags(self.names, self.canon, test)


def _flags(names: list[str], canon: np.ndarray, test) -> np.ndarray:
    # np.take, not lut[canon], for every per-row lookup by code: indexing with int32 codes
    # first copies them to int64 (~5 ms a lookup at 1M rows, ~30 lookups in a build).
    lut = np.array([bool(test(n)) for n in names], dtype=bool)
    return np.take(lut, canon) if len(lut) else np.zeros(len(canon), dtype=bool)


Loops = tuple[np.ndarray, np.ndarray]  # backward branch rows, their loop heads' rows


@dataclass
class _Hits:
    category: str
    rows: np.ndarray
    aux_pc: np.ndarray | None = None
    aux: np.ndarray | None = None


def find_patterns(profile: Profile, facts: CodeFacts | None = None) -> PatternTable:
    """Run every pattern over the profile; each hit has passed its code-shape check."""
    from concurrent.futures import ThreadPoolExecutor  # 10 ms of imports: only to build

    facts = facts or code_facts(profile)
    code = facts.code  # shared by both threads: a row both decode is decoded alike
    loops = backward_branches(profile, facts, profile.window)  # read by three patterns
    # The dependent loads (a third of the pass) are found beside the rest: much of either
    # side is array work that lets go of the GIL. Leaving the block waits for the worker,
    # and its error is raised by result() as it was raised.
    with ThreadPoolExecutor(1) as pool:
        chases = pool.submit(_dependent_loads, profile, facts, code, loops)
        stubs = _call_overheads(profile, facts)
        parts = [
            *_atomic_hits(profile, facts, code),
            *(_Hits(c, facts.rows_named({n for n in facts.names if isa.FAMILIES[f].match(n)}))
              for f, c in _FAMILY_CATEGORY.items() if c not in ("atomic-llsc", "atomic-lse")),
            _indirect_branches(profile, facts, code, stubs),
            _spin_waits(profile, facts, code, loops),
            stubs,
            _byte_loops(profile, facts, code, loops),
            chases.result(),
        ]
    return _table(profile, parts)  # sorted by category first: the parts' order is no matter


class Code:
    """Instruction shapes (pcscope.core.shapes.Op) of rows, read once per row on demand and
    shared by every pattern and mechanism that looks at the row."""

    def __init__(self, profile: Profile) -> None:
        self.profile = profile
        self._ops: dict[int, shapes.Op] = {}

    def op(self, row: int) -> shapes.Op:
        if row not in self._ops:
            self._ops[row] = shapes.Op.of(int(self.profile.pc[row]), self.profile.asm(row))
        return self._ops[row]

    def ops(self, first: int, last: int) -> list[shapes.Op]:
        """Rows ``first``..``last``; the unread ones are decoded in one slice of the column."""
        missing = [r for r in range(first, last + 1) if r not in self._ops]
        if missing:
            lo, hi = missing[0], missing[-1]
            texts = self.profile.asm_column.slice(lo, hi + 1).to_list()
            pcs = self.profile.pc[lo : hi + 1].tolist()
            for r in missing:
                self._ops[r] = shapes.Op.of(pcs[r - lo], texts[r - lo])
        return [self._ops[r] for r in range(first, last + 1)]


def _table(profile: Profile, parts: list[_Hits]) -> PatternTable:
    empty = np.zeros(0, dtype=np.int64)
    rows = np.concatenate([empty, *(p.rows for p in parts)]).astype(np.int64)
    category = np.concatenate(
        [empty, *(np.full(len(p.rows), CATEGORY_CODE[p.category]) for p in parts)]
    ).astype(np.int8)
    aux_pc = np.concatenate(
        [empty, *(p.aux_pc if p.aux_pc is not None else np.zeros(len(p.rows)) for p in parts)]
    ).astype(np.uint64)
    aux = np.concatenate(
        [empty, *(p.aux if p.aux is not None else np.zeros(len(p.rows)) for p in parts)]
    ).astype(np.int64)
    pc = profile.pc[rows]
    total = profile.total
    weight = profile.value[rows] / total if total else np.zeros(len(rows))
    order = np.lexsort((pc, -weight, category))
    return PatternTable(category[order], rows[order], pc[order], weight[order],
                        aux_pc[order], aux[order])  # fmt: skip


def _atomic_hits(profile: Profile, f: CodeFacts, code: Code) -> list[_Hits]:
    """Exclusive and LSE atomics, each marked INLINE or HELPER (inside an outline-atomic
    helper: a ``__aarch64_*`` function, or the LSE-flag test then the atomic)."""
    helper_of: dict[int, bool] = {}

    def in_helper(row: int) -> bool:
        fn = int(profile.function[row])
        if fn < 0:
            return _helper_at(code, row)
        if fn not in helper_of:
            name = profile.function_names[fn]
            rows = profile.function_rows(fn)
            helper_of[fn] = name.startswith("__aarch64_") or (
                len(rows) <= 24 and shapes.outline_atomic_helper(
                    [code.op(int(r)) for r in rows]))
        return helper_of[fn]

    out = []
    for category in ("atomic-llsc", "atomic-lse"):
        family = "llsc" if category == "atomic-llsc" else "lse"
        rows = f.rows_named({n for n in f.names if isa.FAMILIES[family].match(n)})
        aux = np.array([HELPER if in_helper(int(r)) else INLINE for r in rows], dtype=np.int64)
        out.append(_Hits(category, rows, np.zeros(len(rows), dtype=np.uint64), aux))
    return out


def _hottest_loops(prefix: np.ndarray, heads: np.ndarray, branches: np.ndarray,
                   budget: int) -> np.ndarray:
    """Positions (ascending) of the entries whose loop ``heads..branches`` is among the
    ``budget`` heaviest distinct loops (``prefix``: cumulative row values)."""
    # One int64 key per loop, in (head, branch) order: numpy's unique of rows (axis=0)
    # sorts them as opaque records, ~30x slower (40 ms at 1M rows).
    span = len(prefix)  # > every row index
    keys, inverse = np.unique(heads.astype(np.int64) * span + branches, return_inverse=True)
    if len(keys) <= budget:
        return np.arange(len(heads))
    weight = prefix[keys % span + 1] - prefix[keys // span]
    chosen = np.zeros(len(keys), dtype=bool)
    chosen[np.argsort(-weight, kind="stable")[:budget]] = True
    return np.flatnonzero(chosen[inverse.ravel()])


def _last_writer(profile: Profile, f: CodeFacts, rows: np.ndarray, regs: np.ndarray,
                 back: int) -> np.ndarray:
    """For each row, the nearest earlier row (at most ``back`` rows, same window) writing
    its register of ``regs``; -1 when none."""
    win = profile.window
    writer = np.full(len(rows), -1, dtype=np.int64)
    for d in range(1, back + 1):
        prev = np.maximum(rows - d, 0)
        hit = (writer < 0) & (rows - d >= 0) & (win[prev] == win[rows]) & (regs >= 0) & (
            (f.dest[prev, 0] == regs) | (f.dest[prev, 1] == regs))
        writer[hit] = prev[hit]
    return writer


def _helper_at(code: Code, row: int) -> bool:
    first = max(0, row - 8)
    return shapes.outline_atomic_helper(code.ops(first, min(row + 8, len(code.profile) - 1)))


def _indirect_branches(profile: Profile, f: CodeFacts, code: Code, stubs: _Hits) -> _Hits:
    """Every ``br``/``blr``, classified by where its target comes from (shapes)."""
    every = f.rows_named(isa.INDIRECT)
    stub_rows = set(stubs.rows.tolist())
    hot = np.zeros(len(every), dtype=bool)
    hot[np.argsort(-profile.value[every], kind="stable")[:BRANCH_BUDGET]] = True
    rows = every[hot]  # a cold br keeps its hit, unclassified
    writer = _last_writer(profile, f, rows, f.first[rows].astype(np.int64), 16)
    # Where each target comes from: the producer's PC, and whether it is a table entry
    # (a load through an index register; shapes.is_table_jump).
    producer_pc = np.zeros(len(rows), dtype=np.uint64)
    table_entry = np.zeros(len(rows), dtype=bool)
    for i, (r, w) in enumerate(zip(rows.tolist(), writer.tolist(), strict=True)):
        if w >= 0 and f.load[w]:  # the common case: a load right before
            producer_pc[i] = profile.pc[w]
            table_entry[i] = isa.indexed(profile.asm(w))
        elif w >= 0:  # an add/sxtw of a table entry: follow it back in Python
            ops = code.ops(max(0, w - 8), r)
            producer = shapes.target_producer(ops, len(ops) - 1)
            if producer is not None:
                producer_pc[i] = producer.pc
                table_entry[i] = shapes.is_table_jump(producer)
    table = table_entry & ~f.call[rows]  # a br, not a blr
    fn = profile.function[rows].astype(np.int64)
    sites: dict[int, int] = {}
    for g in fn[table].tolist():
        sites[g] = sites.get(g, 0) + 1
    aux = np.full(len(every), shapes.UNCLASSIFIED, dtype=np.int64)
    aux_pc = np.zeros(len(every), dtype=np.uint64)
    aux_pc[hot] = producer_pc
    for i, r, entry, g in zip(np.flatnonzero(hot).tolist(), rows.tolist(), table_entry.tolist(),
                              fn.tolist(), strict=True):
        aux[i] = shapes.STUB if r in stub_rows else shapes.indirect_class(
            bool(f.call[r]), entry, sites.get(g, 0) if g >= 0 else 0)
    return _Hits("indirect-branch", every, aux_pc, aux)


# --- per-row facts ----------------------------------------------------------------------


def code_facts(profile: Profile) -> CodeFacts:
    from concurrent.futures import ThreadPoolExecutor  # 10 ms of imports: only to build

    names, canon = _canonical_mnemonics(profile)
    # Which of the first two operands each destination slot of a mnemonic is (-1: none).
    slots = _dest_slots(names)
    direct = _flags(names, canon, lambda n: n in isa.DIRECT or n.startswith(("b.", "bc.")))
    second = np.take((slots == 1).any(axis=1), canon)  # operand 1 is read only where written
    # Each distinct text is read once; its facts then go to every row that has it.
    firsts = profile.asm_firsts()
    texts = profile.asm_distinct
    k = len(firsts)
    first = np.full(k, -1, dtype=np.int8)
    second_operand = np.full(k, -1, dtype=np.int8)
    base = np.full(k, -1, dtype=np.int8)
    writeback = np.zeros(k, dtype=bool)
    value = np.full(k, -1, dtype=np.int64)
    relative = np.zeros(k, dtype=bool)

    def scan(rows: slice) -> None:  # each chunk fills its own texts of the arrays
        at = firsts[rows]
        first[rows], second_operand[rows], base[rows], writeback[rows], value[rows], \
            relative[rows] = _scanned_facts(texts.slice(rows.start, rows.stop), direct[at],
                                            second[at])

    chunks = [slice(start, min(start + FACTS_CHUNK, k)) for start in range(0, k, FACTS_CHUNK)]
    with ThreadPoolExecutor(FACTS_THREADS) as pool:
        list(pool.map(scan, chunks))  # list: re-raises a chunk's error here
    codes = profile.asm_code
    first, second_operand, base, writeback, value, relative = (
        np.take(a, codes) for a in (first, second_operand, base, writeback, value, relative))
    target = np.where(relative & (value >= 0), profile.pc.astype(np.int64) - value, value)
    n = len(profile)
    dest = np.empty((n, 2), dtype=np.int8)
    for slot in (0, 1):
        operand = np.take(slots[:, slot], canon)
        dest[:, slot] = np.where(operand == 0, first, np.where(operand == 1, second_operand, -1))
    dest[dest == XZR] = -1  # writing xzr discards the value
    return CodeFacts(
        names, canon, dest, base, writeback,
        load=_flags(names, canon, isa.is_load), store=_flags(names, canon, isa.is_store),
        call=_flags(names, canon, isa.is_call), target=target, first=first,
        code=Code(profile),
    )  # fmt: skip


def _dest_slots(names: list[str]) -> np.ndarray:
    """Per mnemonic, which of the first two operands it writes, in order (-1: none)."""
    slots = np.full((max(len(names), 1), 2), -1, dtype=np.int8)
    for i, name in enumerate(names):
        positions = [p for p in isa.dest_positions(name) if p < 2][:2]
        slots[i, : len(positions)] = positions
    return slots


def _scanned_facts(column: StringColumn, direct: np.ndarray, second: np.ndarray):
    """Byte-scan facts of some texts: operand register 0, operand register 1 of the
    ``second`` texts, memory base, writeback, and the ``direct`` branches' target operands
    (value, and whether it is relative to the branch's PC)."""
    # asmtext needs polars; reopening an index only needs the stored table, not this.
    from pcscope.core.asmtext import AsmScan

    scan = AsmScan(column)
    op0, op1 = scan.operand_registers(np.flatnonzero(second))
    base, writeback = scan.memory_operands()
    value = np.full(len(column), -1, dtype=np.int64)
    relative = np.zeros(len(column), dtype=bool)
    branches = np.flatnonzero(direct)
    value[branches], relative[branches] = scan.branch_operands(branches)
    return op0, op1, base, writeback, value, relative


def _canonical_mnemonics(profile: Profile) -> tuple[list[str], np.ndarray]:
    raw = profile.mnemonics
    canon_of_raw = [isa.normalize_mnemonic(m) for m in raw]
    names = sorted(set(canon_of_raw))
    index = {n: i for i, n in enumerate(names)}
    lut = np.array([index[c] for c in canon_of_raw], dtype=np.int32)
    canon = np.take(lut, profile.mnemonic) if len(lut) else np.zeros(len(profile), np.int32)
    special = [i for i, m in enumerate(raw) if m == "hint" or m in isa.UNDECODED]
    for r in np.flatnonzero(np.isin(profile.mnemonic, special)):
        name = isa.normalize_mnemonic(*isa.split_asm(profile.asm(int(r))))
        if name not in index:
            index[name] = len(names)
            names.append(name)
        canon[r] = index[name]
    return names, canon


# --- dependent loads ----------------------------------------------------------------------


def _dependent_loads(profile: Profile, f: CodeFacts, code: Code, loops: Loops) -> _Hits:
    """Loop-carried dependent loads (pointer chasing, chained table lookups): a load in a
    loop whose address (base or index) comes, through registers, from its own loaded value
    of the previous iteration (shapes.loop_carried_load). Straight-line chains (GOT and
    canary loads, a table load feeding a branch), writeback streams and stack loads are
    not chases. Vectorised: the candidates (loads in a short loop); Python: the cycle.
    ``aux_pc`` is the loop head."""
    from pcscope.core.loop_filters import may_chase  # needs polars, as _scanned_facts

    win = profile.window  # window codes, only compared
    cand = np.flatnonzero(f.load & (f.base >= 0) & (f.base < 29) & ~f.writeback)
    if not len(cand):
        return _Hits("dependent-load", cand)
    branch, head, in_loop = _enclosing(loops, cand, win)
    prefix = np.concatenate(([0], np.cumsum(profile.value)))
    warm = (prefix[branch + 1] - prefix[head]) >= LOOP_MIN_SHARE * profile.total
    ok = np.flatnonzero(in_loop & (branch - head < LOOP_MAX) & warm)
    ok = ok[_hottest_loops(prefix, head[ok], branch[ok], LOOP_BUDGET)]
    ok = ok[may_chase(profile.asm_column, profile.pc, f, cand[ok], head[ok], branch[ok])]
    bodies: dict[tuple[int, int], list[shapes.Op]] = {}  # a loop holds several candidates

    def body(i: int) -> list[shapes.Op]:
        loop = (int(head[i]), int(branch[i]))
        if loop not in bodies:
            bodies[loop] = code.ops(*loop)
        return bodies[loop]

    keep = [i for i in ok.tolist()
            if shapes.loop_carried_load(body(i), int(cand[i] - head[i]))]
    rows = cand[keep]
    return _Hits("dependent-load", rows, profile.pc[head[keep]], f.base[rows])


def backward_branches(profile: Profile, f: CodeFacts, win: np.ndarray) -> Loops:
    """Rows of branches (conditional or ``b``) jumping back inside their own window, and
    the row of each one's target (the loop head)."""
    jumps = f.flags(lambda m: m == "b" or isa.is_conditional_branch(m))
    pcs = profile.pc.view(np.int64)  # the same values as a cast, without a copy
    rows = np.flatnonzero(jumps & (f.target >= 0) & (f.target <= pcs))
    heads = np.searchsorted(pcs, f.target[rows], "left")
    inside = win[np.minimum(heads, len(pcs) - 1)] == win[rows]
    return rows[inside], heads[inside]


def enclosing_loops(profile: Profile, f: CodeFacts, rows: np.ndarray, win: np.ndarray):
    """For each row: the next backward branch of its window that jumps to or above it.

    Only the nearest such branch is looked at (an inner loop that does not contain the row
    hides an outer one that does)."""
    return _enclosing(backward_branches(profile, f, win), rows, win)


def _enclosing(loops: Loops, rows: np.ndarray, win: np.ndarray):
    """``enclosing_loops`` from the backward branches already found."""
    branches, heads = loops
    if not len(branches):
        none = np.zeros(len(rows), dtype=np.int64)
        return none, none, np.zeros(len(rows), dtype=bool)
    j = np.minimum(np.searchsorted(branches, rows, "left"), len(branches) - 1)
    branch, head = branches[j], heads[j]
    in_loop = (branch >= rows) & (win[branch] == win[rows]) & (head <= rows)
    return branch, head, in_loop


# --- spin-wait ----------------------------------------------------------------------------


def _spin_waits(profile: Profile, f: CodeFacts, code: Code, loops: Loops) -> _Hits:
    """Tight backward loops that poll memory (shapes.polls): loads from loop-invariant
    addresses, an exit that tests a loaded value, a conditional branch back (or ``b`` back
    with a conditional exit), optional wait hints; no stores, no stepping register."""
    branches, heads = loops
    pcs = profile.pc.view(np.int64)  # the same values as a cast, without a copy
    # Necessary conditions first, vectorised: the short loops with no row missing, then
    # what each body holds (a grid of up to SPIN_MAX rows a loop).
    short = np.flatnonzero(
        (branches - heads < SPIN_MAX)
        & (pcs[heads] == f.target[branches])
        & (pcs[branches] - pcs[heads] == 4 * (branches - heads))  # no row missing
    )
    branches, heads = branches[short], heads[short]
    cells = heads[:, None] + np.arange(SPIN_MAX)
    inside = cells <= branches[:, None]
    cells = np.where(inside, cells, 0)
    stray = ~(f.load | f.flags(isa.is_branch) | f.flags(SPIN_OK.__contains__))

    def holds(flags: np.ndarray) -> np.ndarray:
        return np.asarray((flags[cells] & inside).any(axis=1))

    keep = ~holds(f.store) & holds(f.load) & ~holds(stray)
    found, loop_heads, sizes = [], [], []
    for b, h in zip(branches[keep].tolist(), heads[keep].tolist(), strict=True):
        body = code.ops(h, b)
        if _branches_back(body) and shapes.polls(body):
            found.append(b)
            loop_heads.append(int(profile.pc[h]))
            sizes.append(b - h + 1)
    return _Hits("spin-wait", np.array(found, dtype=np.int64),
                 np.array(loop_heads, dtype=np.uint64),
                 np.array(sizes, dtype=np.int64))  # fmt: skip


def _branches_back(body: list[shapes.Op]) -> bool:
    """The loop ends in a conditional branch back, or in ``b`` back with a conditional
    exit inside."""
    conditional = [isa.is_conditional_branch(op.mnemonic) for op in body]
    return conditional[-1] or (body[-1].mnemonic == "b" and any(conditional[:-1]))


# --- byte loops ---------------------------------------------------------------------------


def _byte_loops(profile: Profile, f: CodeFacts, code: Code, loops: Loops) -> _Hits:
    """Loops that load and test one byte or halfword per step with a stepping pointer or
    index (shapes.byte_step) and run at least MIN_TRIPS iterations per entry by the
    profile's counts. Hit: the narrow load; ``aux_pc`` the loop head, ``aux`` the trips."""
    from pcscope.core.loop_filters import may_step_bytes  # needs polars, as _scanned_facts

    branches, heads = loops
    narrow = f.flags(shapes.NARROW_LOADS.__contains__)
    prefix = np.concatenate(([0], np.cumsum(narrow)))
    narrow_count = prefix[branches + 1] - prefix[heads]
    # at least one narrow load per 8 instructions: a body doing other work is no byte
    # loop even if it reads one byte somewhere
    keep = np.flatnonzero((branches - heads < BYTE_LOOP_MAX)
                          & (narrow_count * 8 >= branches - heads + 1) & (narrow_count > 0))
    keep = keep[_loop_trips(profile, heads[keep], branches[keep]) >= MIN_TRIPS]
    keep = keep[may_step_bytes(profile.asm_column, profile.pc, f, heads[keep], branches[keep])]
    found, loop_heads, trips = [], [], []
    for b, h in zip(branches[keep].tolist(), heads[keep].tolist(), strict=True):
        if _libc_routine(profile, h):
            continue  # the C library's own routines: named apart, not rewritten
        k = shapes.byte_step(code.ops(h, b))
        if k is None:
            continue
        per_entry = loop_trips(profile, h, b)
        if per_entry >= MIN_TRIPS and h + k not in found:
            found.append(h + k)
            loop_heads.append(int(profile.pc[h]))
            trips.append(round(min(per_entry, 1e9)))
    return _Hits("vectorization", np.array(found, dtype=np.int64),
                 np.array(loop_heads, dtype=np.uint64), np.array(trips, dtype=np.int64))


def loop_trips(profile: Profile, head: int, *branches: int) -> float:
    """Iterations per entry of the loop at ``head`` from the counts: the head runs once per
    iteration; entries = head count - times its backward branches were taken, where a
    branch's taken count = its count - its fall-through's (the next row, if it follows
    directly; an unconditional ``b`` back is always taken)."""
    taken = int(_taken(profile, np.array(branches, dtype=np.int64)).sum())
    runs = int(profile.samples[head])
    entries = runs - taken
    return runs / entries if entries > 0 else float(runs)


def _loop_trips(profile: Profile, heads: np.ndarray, branches: np.ndarray) -> np.ndarray:
    """``loop_trips`` of many loops with one backward branch each."""
    runs = profile.samples[heads].astype(np.int64)
    entries = runs - _taken(profile, branches)
    return np.where(entries > 0, runs / np.maximum(entries, 1), runs.astype(np.float64))


def _taken(profile: Profile, branches: np.ndarray) -> np.ndarray:
    """How often each branch row was taken (see ``loop_trips``), as int64."""
    counts = profile.samples.astype(np.int64, copy=False)
    after = np.minimum(branches + 1, len(profile) - 1)
    falls = (branches + 1 < len(profile)) & (profile.pc[after] - profile.pc[branches] == 4)
    return np.maximum(counts[branches] - np.where(falls, counts[after], 0), 0)


def _libc_routine(profile: Profile, row: int) -> bool:
    code = int(profile.function[row])
    return code >= 0 and libc_routine_name(profile.function_names[code]) is not None


_LIBC_ROUTINES = ("memcpy", "memmove", "memset", "memcmp", "bcmp", "memchr", "memrchr",
                  "rawmemchr", "strcmp", "strncmp", "strcasecmp", "strncasecmp", "strlen",
                  "strnlen", "strchr", "strchrnul", "strrchr", "strcpy", "strncpy", "stpcpy",
                  "stpncpy", "strcat", "strncat", "strstr", "strspn", "strcspn", "wmemset",
                  "wcslen", "wmemcmp")  # fmt: skip
_RE_LIBC = re.compile(r"^_*(?:GI_)?_*(" + "|".join(_LIBC_ROUTINES) + r")(?:_[a-z0-9_]+)?$")


def libc_routine_name(function: str) -> str | None:
    """The C-library string/memory routine a symbol is (``__memcpy_simd`` -> memcpy)."""
    match = _RE_LIBC.match(function)
    return match.group(1) if match else None


# --- call overhead ------------------------------------------------------------------------


def _call_overheads(profile: Profile, f: CodeFacts) -> _Hits:
    """``br x17`` ending a PLT stub (``adrp x16; ldr x17, [x16, …]; add x16, x16, …``),
    ``br x16`` ending a veneer (``adrp x16; add x16, x16, …`` or ``ldr x16, <literal>``),
    and ``br`` inside a ``*@plt`` symbol. Rows a sampled profile lacks are tolerated in a
    PLT stub as long as its ``ldr x17`` is there."""
    found, starts, kinds = [], [], []
    rows = f.rows_named({"br"})
    # Python reads only a br through x16/x17 (or an unread register) or in a *@plt symbol;
    # function -1 (none) reads the False at the end
    plt_symbol = np.array([n.endswith("@plt") for n in profile.function_names] + [False])
    maybe = np.isin(f.first[rows], (16, 17, -1)) | plt_symbol[profile.function[rows]]
    for r in rows[maybe].tolist():
        pc = int(profile.pc[r])
        _, ops = isa.canonical(profile.asm(r))
        reg = isa.parse_register(ops[0]) if ops else None
        veneer = _veneer(profile, pc) if reg == "x16" else None
        kind = start = None
        if reg == "x17" and _plt_stub(profile, pc):
            kind, start = PLT, pc - 12
        elif veneer is not None:
            kind, start = VENEER, veneer
        elif _function_name(profile, r).endswith("@plt"):
            first = profile.function_rows(int(profile.function[r]))[0]
            kind, start = PLT_SYMBOL, int(profile.pc[first])
        if kind is not None:
            found.append(r)
            starts.append(start)
            kinds.append(kind)
    return _Hits("call-overhead", np.array(found, dtype=np.int64),
                 np.array(starts, dtype=np.uint64), np.array(kinds, dtype=np.int64))  # fmt: skip


def _function_name(profile: Profile, row: int) -> str:
    code = int(profile.function[row])
    return profile.function_names[code] if code >= 0 else ""


def _insn_at(profile: Profile, pc: int) -> tuple[str, list[str]] | None:
    row = profile.row_of(pc) if pc >= 0 else None
    return isa.canonical(profile.asm(row)) if row is not None else None


def _is(insn, mnemonic: str, dest: str, base: str | None = None, src: str | None = None) -> bool:
    m, ops = insn
    if m != mnemonic or isa.dest_registers(m, ops)[:1] != (dest,):
        return False
    if base is not None:
        mem = isa.memory_operand(ops)
        return mem is not None and mem.base == base
    if src is not None:
        return isa.source_registers(m, ops)[:1] == (src,)
    return True


def _plt_stub(profile: Profile, pc: int) -> bool:
    adrp, ldr, add = (_insn_at(profile, pc - d) for d in (12, 8, 4))
    if ldr is None or not _is(ldr, "ldr", "x17", base="x16"):
        return False
    return (adrp is None or _is(adrp, "adrp", "x16")) and (
        add is None or _is(add, "add", "x16", src="x16")
    )


def _veneer(profile: Profile, pc: int) -> int | None:
    """First PC of the veneer ending in ``br x16`` at ``pc``, or None."""
    prev, first = _insn_at(profile, pc - 4), _insn_at(profile, pc - 8)
    if prev is None:
        return None
    if _is(prev, "add", "x16", src="x16") and first is not None and _is(first, "adrp", "x16"):
        return pc - 8
    m, ops = prev
    if m == "ldr" and isa.dest_registers(m, ops) == ("x16",) and isa.memory_operand(ops) is None:
        return pc - 4
    return None
