"""Deterministic pattern pass (index time): AArch64 shapes worth a performance look.

Mnemonic categories are decided once per distinct mnemonic and mapped to rows with numpy.
Register facts (operand registers, memory base, writeback, branch targets) come from byte
scans over the asm blob (``pcscope.core.asmtext.AsmScan``), so the sequence patterns
(dependent loads, spin loops) are numpy work too; Python looks only at short backward
branches that pass the vectorised checks and at ``br`` rows.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pcscope.core import isa
from pcscope.core.ids import hex_pc, pat_id
from pcscope.core.profile import Profile

PATTERN_CATEGORIES = (
    "atomic-llsc",
    "atomic-lse",
    "barrier",
    "acquire-release",
    "indirect-branch",
    "dependent-load",
    "division",
    "spin-wait",
    "call-overhead",
)
_CODE = {c: i for i, c in enumerate(PATTERN_CATEGORIES)}
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
NREG = 32
CALL_CLOBBERED = np.array([*range(19), 30], dtype=np.int64)  # AAPCS64 caller-saved + lr
PLT, VENEER, PLT_SYMBOL = 0, 1, 2  # call-overhead kinds (the hit's `aux`)


@dataclass(frozen=True)
class PatternHit:
    category: str
    pc: int
    row: int
    weight: float  # the row's value / profile total
    detail: str = ""

    @property
    def id(self) -> str:
        return pat_id(self.category, self.pc)


class PatternTable:
    """Hits as columns, sorted by category, then weight descending, then PC ascending.

    ``aux_pc``/``aux`` hold what a hit's detail says: dependent-load (writer pc, base
    register number), spin-wait (loop head pc, instruction count), call-overhead (stub
    start pc, kind PLT/VENEER/PLT_SYMBOL); 0 elsewhere.
    """

    def __init__(
        self,
        category: np.ndarray,
        row: np.ndarray,
        pc: np.ndarray,
        weight: np.ndarray,
        aux_pc: np.ndarray,
        aux: np.ndarray,
    ) -> None:
        self.category = category.astype(np.int8, copy=False)
        self.row = row.astype(np.int64, copy=False)
        self.pc = pc.astype(np.uint64, copy=False)
        self.weight = weight.astype(np.float64, copy=False)
        self.aux_pc = aux_pc.astype(np.uint64, copy=False)
        self.aux = aux.astype(np.int64, copy=False)
        self._offsets = np.searchsorted(self.category, np.arange(len(PATTERN_CATEGORIES) + 1))
        self._by_pc = np.lexsort((self.category, self.pc))

    def __len__(self) -> int:
        return len(self.row)

    def __iter__(self) -> Iterator[PatternHit]:
        return (self.hit(i) for i in range(len(self)))

    def counts(self) -> dict[str, int]:
        """Hits per category, every category listed (0 included)."""
        sizes = np.diff(self._offsets)
        return {c: int(sizes[i]) for i, c in enumerate(PATTERN_CATEGORIES)}

    def indices(self, category: str) -> np.ndarray:
        """Positions of a category's hits, heaviest first."""
        code = _CODE[category]
        return np.arange(self._offsets[code], self._offsets[code + 1])

    def rows(self, category: str) -> np.ndarray:
        return self.row[self.indices(category)]

    def hits(self, category: str, limit: int | None = None) -> list[PatternHit]:
        idx = self.indices(category)
        return [self.hit(int(i)) for i in idx[:limit]]

    def at(self, pc: int) -> list[PatternHit]:
        """Every hit at one PC (category order)."""
        key = np.uint64(pc)
        lo = np.searchsorted(self.pc, key, "left", sorter=self._by_pc)
        hi = np.searchsorted(self.pc, key, "right", sorter=self._by_pc)
        return [self.hit(int(i)) for i in self._by_pc[lo:hi]]

    def categories_at(self, pc: int) -> list[str]:
        return [h.category for h in self.at(pc)]

    def hit(self, i: int) -> PatternHit:
        category = PATTERN_CATEGORIES[int(self.category[i])]
        pc = int(self.pc[i])
        return PatternHit(
            category, pc, int(self.row[i]), float(self.weight[i]),
            _detail(category, pc, int(self.aux_pc[i]), int(self.aux[i])),
        )  # fmt: skip

    def to_arrays(self) -> dict[str, np.ndarray]:
        """Columns for the index store (plain dtypes: ``np.save`` needs no pickle)."""
        return {
            "category": self.category,
            "row": self.row,
            "pc": self.pc,
            "weight": self.weight,
            "aux_pc": self.aux_pc,
            "aux": self.aux,
            "categories": np.array(PATTERN_CATEGORIES),
        }

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], profile: Profile | None = None
    ) -> PatternTable:
        """Reopen; category codes are remapped by name if the category list changed since.
        With ``profile``, check that every hit's row holds its PC (ValueError if stale)."""
        if profile is not None:
            rows, pcs = np.asarray(arrays["row"]), np.asarray(arrays["pc"])
            if len(rows) and (rows.max() >= len(profile) or (profile.pc[rows] != pcs).any()):
                raise ValueError("pattern table does not belong to this profile")
        names = [str(c) for c in arrays["categories"]]
        category = np.asarray(arrays["category"])
        if tuple(names) != PATTERN_CATEGORIES:
            remap = np.array([_CODE.get(n, -1) for n in names], dtype=np.int8)
            category = remap[category]
            keep = category >= 0
            arrays = {k: np.asarray(v)[keep] for k, v in arrays.items() if k != "categories"}
            category = category[keep]
            order = np.lexsort((arrays["pc"], -arrays["weight"], category))
            arrays = {k: v[order] for k, v in arrays.items()}
            category = category[order]
        return cls(category, *(np.asarray(arrays[k]) for k in ("row", "pc", "weight",
                                                                "aux_pc", "aux")))  # fmt: skip


def _detail(category: str, pc: int, aux_pc: int, aux: int) -> str:
    if category == "dependent-load":
        when = " (previous iteration)" if aux_pc >= pc else ""
        return f"base x{aux} loaded at {hex_pc(aux_pc)}{when}"
    if category == "spin-wait":
        return f"loop {hex_pc(aux_pc)}..{hex_pc(pc)} ({aux} instructions)"
    if category == "call-overhead":
        kind = {PLT: "PLT stub", VENEER: "veneer", PLT_SYMBOL: "PLT symbol"}[aux]
        return f"{kind} at {hex_pc(aux_pc)}"
    return ""


@dataclass
class _Facts:
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

    def rows_named(self, names: frozenset[str] | set[str]) -> np.ndarray:
        return np.flatnonzero(self.flags(names.__contains__))

    def flags(self, test) -> np.ndarray:
        """Per-row bool from a predicate on the canonical mnemonic."""
        return _flags(self.names, self.canon, test)


def _flags(names: list[str], canon: np.ndarray, test) -> np.ndarray:
    lut = np.array([bool(test(n)) for n in names], dtype=bool)
    return lut[canon] if len(lut) else np.zeros(len(canon), dtype=bool)


@dataclass
class _Hits:
    category: str
    rows: np.ndarray
    aux_pc: np.ndarray | None = None
    aux: np.ndarray | None = None


def find_patterns(profile: Profile) -> PatternTable:
    """Run every pattern over the profile."""
    facts = _facts(profile)
    parts = [
        *_mnemonic_hits(facts),
        _dependent_loads(profile, facts),
        _spin_waits(profile, facts),
        _call_overheads(profile, facts),
    ]
    return _table(profile, parts)


def _table(profile: Profile, parts: list[_Hits]) -> PatternTable:
    empty = np.zeros(0, dtype=np.int64)
    rows = np.concatenate([empty, *(p.rows for p in parts)]).astype(np.int64)
    category = np.concatenate(
        [empty, *(np.full(len(p.rows), _CODE[p.category]) for p in parts)]
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


def _mnemonic_hits(f: _Facts) -> list[_Hits]:
    out = []
    for family, category in _FAMILY_CATEGORY.items():
        rows = f.rows_named({n for n in f.names if isa.FAMILIES[family].match(n)})
        out.append(_Hits(category, rows))
    out.append(_Hits("indirect-branch", f.rows_named(isa.INDIRECT)))
    return out


# --- per-row facts ----------------------------------------------------------------------


def _facts(profile: Profile) -> _Facts:
    names, canon = _canonical_mnemonics(profile)
    # asmtext needs polars; reopening an index only needs the stored table, not this.
    from pcscope.core.asmtext import AsmScan

    scan = AsmScan(profile.asm_column)
    op0, op1 = scan.operand_registers()
    base, writeback = scan.memory_operands()
    operand = np.stack([op0, op1], axis=1)
    # Which of the first two operands each mnemonic writes (slot -1: none).
    slots = np.full((max(len(names), 1), 2), -1, dtype=np.int64)
    for i, name in enumerate(names):
        positions = [p for p in isa.dest_positions(name) if p < 2][:2]
        slots[i, : len(positions)] = positions
    row_slots = slots[canon]
    rows = np.arange(len(profile))[:, None]
    dest = np.where(row_slots >= 0, operand[rows, np.maximum(row_slots, 0)], -1)
    dest = np.where(dest == XZR, -1, dest)  # writing xzr discards the value
    direct = np.flatnonzero(_flags(names, canon, lambda n: n in isa.DIRECT or n.startswith(
        ("b.", "bc."))))  # fmt: skip
    target = np.full(len(profile), -1, dtype=np.int64)
    target[direct] = scan.branch_targets(direct, profile.pc[direct])
    return _Facts(
        names, canon, dest.astype(np.int8), base, writeback,
        load=_flags(names, canon, isa.is_load), store=_flags(names, canon, isa.is_store),
        call=_flags(names, canon, isa.is_call), target=target,
    )  # fmt: skip


def _canonical_mnemonics(profile: Profile) -> tuple[list[str], np.ndarray]:
    raw = profile.mnemonics
    canon_of_raw = [isa.normalize_mnemonic(m) for m in raw]
    names = sorted(set(canon_of_raw))
    index = {n: i for i, n in enumerate(names)}
    lut = np.array([index[c] for c in canon_of_raw], dtype=np.int32)
    canon = lut[profile.mnemonic] if len(lut) else np.zeros(len(profile), dtype=np.int32)
    special = [i for i, m in enumerate(raw) if m == "hint" or m in isa.UNDECODED]
    for r in np.flatnonzero(np.isin(profile.mnemonic, special)):
        name = isa.normalize_mnemonic(*isa.split_asm(profile.asm(int(r))))
        if name not in index:
            index[name] = len(names)
            names.append(name)
        canon[r] = index[name]
    return names, canon


# --- dependent loads ----------------------------------------------------------------------


def _dependent_loads(profile: Profile, f: _Facts) -> _Hits:
    """A load whose base was last written, in the same window, by a load (pointer chasing).

    In a loop, the writer may be the previous iteration: ``ldr x0, [x0, #8]`` followed by a
    branch back counts. Calls clobber the caller-saved registers."""
    n = len(profile)
    cand = np.flatnonzero(f.load & (f.base >= 0) & (f.base < SP))
    if not len(cand):
        return _Hits("dependent-load", cand)
    win = profile.window.astype(np.int64)
    key, ev_row, ev_loaded = _write_events(f, win, n)
    if not len(key):
        return _Hits("dependent-load", cand[:0])
    group = win[cand] * NREG + f.base[cand]

    def last_write(upto: np.ndarray, side: Literal["left", "right"]
                   ) -> tuple[np.ndarray, np.ndarray]:
        i = np.searchsorted(key, group * n + upto, side) - 1
        ok = i >= 0
        i = np.maximum(i, 0)
        ok &= key[i] // n == group
        return i, ok

    before, has_before = last_write(cand, "left")
    branch, head, in_loop = _enclosing_loop(profile, f, cand, win)
    carried, has_carried = last_write(branch, "right")
    has_carried &= in_loop
    has_carried &= ev_row[carried] >= cand
    before_in_loop = has_before & in_loop & (ev_row[before] >= head)
    use_carried = has_carried & ~before_in_loop
    writer = np.where(use_carried, carried, before)
    hit = (use_carried | has_before) & ev_loaded[writer]
    return _Hits(
        "dependent-load", cand[hit], profile.pc[ev_row[writer[hit]]], f.base[cand[hit]]
    )


def _write_events(f: _Facts, win: np.ndarray, n: int):
    """Every register write as a sort key (window, register, row), with its row and whether
    the value came from memory."""
    rows, regs, loaded = [], [], []
    for k in (0, 1):
        r = np.flatnonzero(f.dest[:, k] >= 0)
        rows.append(r)
        regs.append(f.dest[r, k].astype(np.int64))
        loaded.append(f.load[r])
    r = np.flatnonzero(f.writeback & (f.base >= 0))
    rows.append(r)
    regs.append(f.base[r].astype(np.int64))
    loaded.append(np.zeros(len(r), dtype=bool))
    calls = np.flatnonzero(f.call)
    rows.append(np.repeat(calls, len(CALL_CLOBBERED)))
    regs.append(np.tile(CALL_CLOBBERED, len(calls)))
    loaded.append(np.zeros(len(calls) * len(CALL_CLOBBERED), dtype=bool))
    ev_row = np.concatenate(rows).astype(np.int64)
    ev_reg = np.concatenate(regs)
    ev_loaded = np.concatenate(loaded)
    key = (win[ev_row] * NREG + ev_reg) * n + ev_row
    order = np.argsort(key, kind="stable")
    return key[order], ev_row[order], ev_loaded[order]


def _backward_branches(profile: Profile, f: _Facts, win: np.ndarray):
    """Rows of branches (conditional or ``b``) jumping back inside their own window, and
    the row of each one's target (the loop head)."""
    jumps = f.flags(lambda m: m == "b" or isa.is_conditional_branch(m))
    pcs = profile.pc.astype(np.int64)
    rows = np.flatnonzero(jumps & (f.target >= 0) & (f.target <= pcs))
    heads = np.searchsorted(pcs, f.target[rows], "left")
    inside = win[np.minimum(heads, len(pcs) - 1)] == win[rows]
    return rows[inside], heads[inside]


def _enclosing_loop(profile: Profile, f: _Facts, rows: np.ndarray, win: np.ndarray):
    """For each row: the next backward branch of its window that jumps to or above it.

    Only the nearest such branch is looked at (an inner loop that does not contain the row
    hides an outer one that does)."""
    branches, heads = _backward_branches(profile, f, win)
    if not len(branches):
        none = np.zeros(len(rows), dtype=np.int64)
        return none, none, np.zeros(len(rows), dtype=bool)
    j = np.minimum(np.searchsorted(branches, rows, "left"), len(branches) - 1)
    branch, head = branches[j], heads[j]
    in_loop = (branch >= rows) & (win[branch] == win[rows]) & (head <= rows)
    return branch, head, in_loop


# --- spin-wait ----------------------------------------------------------------------------


def _spin_waits(profile: Profile, f: _Facts) -> _Hits:
    """Tight backward loops that poll memory: loads from a loop-invariant address, a test,
    a conditional branch back (or ``b`` back with a conditional exit), optional wait hints;
    no stores, no arithmetic on the loop state."""
    win = profile.window.astype(np.int64)
    branches, heads = _backward_branches(profile, f, win)
    pcs = profile.pc.astype(np.int64)
    # Necessary conditions first, vectorised with prefix sums over each loop body.
    stray = ~(f.load | f.flags(isa.is_branch) | f.flags(SPIN_OK.__contains__))

    def count(flags: np.ndarray) -> np.ndarray:
        prefix = np.concatenate(([0], np.cumsum(flags)))
        return prefix[branches + 1] - prefix[heads]

    keep = (
        (branches - heads < SPIN_MAX)
        & (pcs[heads] == f.target[branches])
        & (pcs[branches] - pcs[heads] == 4 * (branches - heads))  # no row missing
        & (count(f.store) == 0)
        & (count(f.load) > 0)
        & (count(stray) == 0)
    )
    found, loop_heads, sizes = [], [], []
    for b, h in zip(branches[keep].tolist(), heads[keep].tolist(), strict=True):
        if _is_spin(f, h, b):
            found.append(b)
            loop_heads.append(int(profile.pc[h]))
            sizes.append(b - h + 1)
    return _Hits("spin-wait", np.array(found, dtype=np.int64),
                 np.array(loop_heads, dtype=np.uint64),
                 np.array(sizes, dtype=np.int64))  # fmt: skip


def _is_spin(f: _Facts, head: int, branch: int) -> bool:
    """The checks left after the vectorised ones: how the loop branches, and that every load
    polls a fixed address."""
    body = np.arange(head, branch + 1)
    names = [f.names[c] for c in f.canon[body]]
    conditional = [isa.is_conditional_branch(m) for m in names]
    if not conditional[-1] and not (names[-1] == "b" and any(conditional[:-1])):
        return False
    written = set(f.dest[body].ravel().tolist()) | set(f.base[body][f.writeback[body]].tolist())
    for row in body[f.load[body]].tolist():
        if f.writeback[row] or f.base[row] < 0 or int(f.base[row]) in written:
            return False  # the address moves: a walk, not a poll
    return True


# --- call overhead ------------------------------------------------------------------------


def _call_overheads(profile: Profile, f: _Facts) -> _Hits:
    """``br x17`` ending a PLT stub (``adrp x16; ldr x17, [x16, …]; add x16, x16, …``),
    ``br x16`` ending a veneer (``adrp x16; add x16, x16, …`` or ``ldr x16, <literal>``),
    and ``br`` inside a ``*@plt`` symbol. Rows a sampled profile lacks are tolerated in a
    PLT stub as long as its ``ldr x17`` is there."""
    found, starts, kinds = [], [], []
    for r in f.rows_named({"br"}).tolist():
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
