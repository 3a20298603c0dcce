"""Which state a threaded dispatch merges into its opcode, and whether the loop can change it.

`dispatch_merge` finds the instructions a dispatch runs only to merge other state into the
opcode. Some of that state is fixed while the dispatch loop runs, and then testing it on
every dispatch is pure overhead; two kinds are told from the instructions and counts alone:

- *fixed address*: a value loaded from an ``adrp`` page plus a constant, directly
  (``ldrh w2, [x20, #0xb34]`` with ``x20`` holding the page at every dispatch) or through a
  stack slot holding that address (``ldr x2, [sp, #0x68]``; ``ldrh w2, [x2]``). The page
  register (or slot) counts as fixed when every other write of it reaches no dispatch before
  the page is set again, along the executed flow;
- *frame field*: a stack value the function stores at most once per entry, so it is the
  same on every dispatch of one call unless a callee writes it through its taken address.

The rows testing each kind (the loads, and what only they feed: a `cmp`/`csetm`, an `orr`
of that state alone) are what a build without the state, or a test hoisted out of the
dispatch path, deletes; they size those remedies by their own counts.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pcscope.core import isa
from pcscope.core.asmtext import register_code
from pcscope.core.dispatch_state_values import DispatchStateValues
from pcscope.core.mechanisms import Metric, number
from pcscope.core.memory_state import field_offsets
from pcscope.core.patterns import CodeFacts
from pcscope.core.shapes import Op

FIXED = "fixed address"
FRAME = "frame field"
_FRAME = ("sp", "x29")
_FRAME_CODES = (31, 29)  # their register codes (pcscope.core.asmtext.register_code)
_KEPT = frozenset(f"x{n}" for n in range(19, 29))  # callee-saved: kept across calls
_PER_ENTRY = 2  # dispatches per entry from which a test made once per entry runs less often
_BLOCK = 32  # instructions walked back in a block to find what a stored register holds
_SIZES = {"b": 1, "h": 2}
# metric names the advice reads, and the check prefixes (it leaves out the checks its
# recommendation quotes in full, from DispatchStateValues)
PER_DISPATCH = {FIXED: "fixed-address test per dispatch", FRAME: "frame-field test per dispatch"}
SHARE = {FIXED: "fixed-address test share", FRAME: "frame-field test share"}
CHECK = {FIXED: "a value at a fixed address is tested on every dispatch: ",
         FRAME: "a frame field stored once per entry is tested on every dispatch: "}
MASK = "tested as a 16-bit value compared with zero and turned into a mask: "


@dataclass(frozen=True)
class Function:
    """The executed rows of one function (ascending), how to read them, and the rows worth
    reading for each question (picked from the per-row facts, as reading every instruction
    of a large interpreter function once per question would cost more than the rest)."""

    rows: Sequence[int]
    op: Callable[[int], Op]
    count: Callable[[int], int]
    frame_stores: Sequence[int]  # stores off sp or x29
    frame_offsets: Sequence[int]  # add/mov reading sp or x29 (frame addresses taken)
    writers: Callable[[str], Sequence[int]]  # the rows writing a register
    succ: dict[int, tuple[int, ...]]  # the rows control may go to next (calls return)
    jumps: frozenset[int]  # register jumps (not calls, not returns): where it may dispatch
    joins: frozenset[int]  # rows a direct branch goes to (where straight-line code starts)

    @classmethod
    def of(cls, facts: CodeFacts, pc: np.ndarray, rows: np.ndarray, op: Callable[[int], Op],
           count: Callable[[int], int]) -> Function:
        frame = np.isin(facts.base[rows], _FRAME_CODES)
        succ, joins = _successors(facts, pc, rows)
        moves = np.isin(facts.canon[rows], [i for i, n in enumerate(facts.names)
                                            if n in ("add", "mov")])

        def writers(reg: str) -> Sequence[int]:
            code = register_code(reg)
            hit = (facts.dest[rows] == code).any(axis=1) | \
                (facts.writeback[rows] & (facts.base[rows] == code))
            return rows[hit].tolist()
        return cls(rows.tolist(), op, count, rows[facts.store[rows] & frame].tolist(),
                   [r for r in rows[moves].tolist() if op(r).src[:1] in (("sp",), ("x29",))],
                   writers, succ, frozenset(rows[facts.flags(_jump)[rows]].tolist()), joins)


def _jump(mnemonic: str) -> bool:
    return isa.is_indirect(mnemonic) and not isa.is_call(mnemonic) and \
        not isa.is_return(mnemonic)


def _successors(facts: CodeFacts, pc: np.ndarray,
                rows: np.ndarray) -> tuple[dict[int, tuple[int, ...]], frozenset[int]]:
    """Per row of the function: the next row if control falls through to it (the next
    address, executed), and the row a direct branch (not a call) goes to; and the rows
    branched to."""
    pcs = pc[rows]
    falls = ~facts.flags(isa.ends_flow)[rows] & np.append(pcs[1:] == pcs[:-1] + 4, False)
    target = np.where(facts.call[rows], -1, facts.target[rows])
    at = np.searchsorted(pcs, target.astype(pcs.dtype))
    inside = (target >= 0) & (at < len(rows))
    inside[inside] &= pcs[at[inside]] == target[inside].astype(pcs.dtype)
    out: dict[int, tuple[int, ...]] = {}
    row_list = rows.tolist()
    for k, (r, fall, jump, to) in enumerate(zip(row_list, falls.tolist(), inside.tolist(),
                                                at.tolist(), strict=True)):
        out[r] = ((row_list[k + 1],) if fall else ()) + ((row_list[to],) if jump else ())
    return out, frozenset(rows[at[inside]].tolist())


@dataclass(frozen=True)
class StateTest:
    """The rows of the dispatch sites that test one kind of fixed state."""

    kind: str  # FIXED or FRAME
    rows: tuple[int, ...]  # at every site that tests it
    runs: int  # the executions of those rows
    sites: int  # dispatch sites testing it
    example: tuple[int, ...]  # the rows at the hottest such site, in address order
    address: str  # FIXED: "page 0xa5e000 + 0xb34"; FRAME: the slot, "[sp, #0x100]"
    holders: tuple[tuple[str, int], ...]  # FIXED: where the address is kept (a register
    # and the `adrp` setting it, a stack slot and the hottest store of it)
    stores: tuple[int, ...]  # FRAME: the rows storing the slot
    taken: int | None  # FRAME: the row taking an address at or below the slot
    mask: bool  # FIXED: a 16-bit value compared with zero and turned into a mask


@dataclass(frozen=True)
class _Root:
    kind: str
    address: str
    holder: tuple[str, int] | None = None  # FIXED: see StateTest.holders
    stores: tuple[int, ...] = ()
    taken: int | None = None


def tests(fn: Function, sequences: Sequence[Sequence[int]],
          merged: Sequence[frozenset[int]], reads: Callable[[Op], set[str]],
          writes: Callable[[Op], tuple[str, ...]]) -> list[StateTest]:
    """The fixed state the dispatch sites test (``sequences``: each site's rows, its `br`
    first; ``merged``: the positions in it that only merge other state into the opcode)."""
    flow = _Flow(fn, frozenset(r for q in sequences for r in q),
                 sum(fn.count(q[0]) for q in sequences))
    found: dict[tuple[str, str], list[tuple[int, tuple[int, ...]]]] = {}
    roots: dict[tuple[str, str], _Root] = {}
    holders: dict[tuple[str, str], set[tuple[str, int]]] = {}
    for q, positions in zip(sequences, merged, strict=True):
        for root, rows in _site(flow, [fn.op(r) for r in q], q, positions, reads, writes):
            key = (root.kind, root.address)
            roots[key] = root
            holders.setdefault(key, set()).update([root.holder] if root.holder else [])
            found.setdefault(key, []).append((fn.count(q[0]), rows))
    out = []
    for key, at in found.items():
        root = roots[key]
        hottest = max(at, key=lambda x: x[0])[1]
        rows = tuple(sorted({r for _, rs in at for r in rs}))
        ops = [fn.op(r) for r in hottest]
        mask = root.kind == FIXED and any(o.mnemonic == "ldrh" for o in ops) and \
            any(o.mnemonic in ("csetm", "cset") for o in ops) and \
            any(o.mnemonic in ("cmp", "tst") and o.operands[-1] in ("#0", "#0x0")
                for o in ops)
        out.append(StateTest(root.kind, rows, sum(fn.count(r) for r in rows), len(at),
                             hottest, root.address, tuple(sorted(holders[key])), root.stores,
                             root.taken, mask))
    return sorted(out, key=lambda t: -t.runs)


def _site(flow: _Flow, ops: list[Op], q: Sequence[int], positions: frozenset[int],
          reads: Callable[[Op], set[str]],
          writes: Callable[[Op], tuple[str, ...]]) -> list[tuple[_Root, tuple[int, ...]]]:
    """Per kind of fixed state one site merges: the rows (in address order) that test only
    that state."""
    def writer(i: int, reg: str) -> int | None:
        return next((j for j in range(i + 1, len(ops)) if reg in writes(ops[j])), None)

    pointers = {w for i in positions if ops[i].load and ops[i].addr
                if (w := writer(i, ops[i].addr[0])) is not None and w in positions}
    state: dict[int, _Root | None] = {}
    for i in sorted(positions):
        if ops[i].load and i not in pointers:
            state[i] = _root(flow, ops, i, writer(i, ops[i].addr[0]) if ops[i].addr else None)
    of: dict[int, set[int]] = {}
    for i in sorted(positions, reverse=True):  # program order: producers first
        feeding = {j for r in reads(ops[i]) if (j := writer(i, r)) is not None and
                   j in positions}
        of[i] = ({i} if i in state else set()).union(*(of[j] for j in feeding))
    for p in pointers:  # a pointer slot's reload belongs to the load it addresses
        of[p] = {i for i in state if writer(i, ops[i].addr[0]) == p}
    by_root: dict[_Root, list[int]] = {}
    for i, loads in of.items():
        kinds = {state[j] for j in loads}
        if len(kinds) == 1 and (root := kinds.pop()) is not None:
            by_root.setdefault(root, []).append(q[i])
    return [(root, tuple(sorted(rows))) for root, rows in by_root.items()]


def _root(flow: _Flow, ops: list[Op], i: int, pointer: int | None) -> _Root | None:
    """What the merged load ``ops[i]`` reads, if it is fixed state."""
    o = ops[i]
    here = field_offsets(o, frame=True)
    if pointer is not None:  # through a stack slot holding a fixed address
        p = ops[pointer]
        slot = field_offsets(p, frame=True)
        if not p.load or slot is None or p.addr[0] not in _FRAME or here is None:
            return None
        held = flow.fixed_slot(*slot[0])
        return _Root(FIXED, _address(held[0], held[1] + here[0][1]),
                     (f"[{slot[0][0]}, #{slot[0][1]:#x}]", held[2])) if held else None
    if here is None:
        return None
    base, offset = here[0]
    if base in _FRAME:
        stores, taken = flow.frame_field(base, offset)
        return _Root(FRAME, f"[{base}, #{offset:#x}]", None, stores, taken) if stores else None
    page = flow.fixed_register(base)
    return _Root(FIXED, _address(page[0], offset), (base, page[1])) if page else None


def _address(page: str, offset: int) -> str:
    return f"page {page.lstrip('#')} + {offset:#x}"


class _Flow:
    """The executed flow of one function, read for where a register or slot can change."""

    def __init__(self, fn: Function, dispatch: frozenset[int], dispatches: int) -> None:
        self.fn = fn
        self.dispatch = dispatch  # rows of the dispatch sequences: where state is read
        self.dispatches = dispatches  # the executions of their br
        self.pages: dict[str, tuple[str, int] | None] = {}
        self.slots: dict[tuple[str, int], tuple[str, int, int] | None] = {}
        self.fields: dict[tuple[str, int], tuple[tuple[int, ...], int | None]] = {}

    def _reaches_dispatch(self, start: int, sets_again: Callable[[int], bool],
                          reads_it: Callable[[Op], bool]) -> bool:
        """From ``start`` the executed flow reaches a dispatch row that ``reads_it`` (or any
        register jump, which may dispatch) before a row for which ``sets_again`` holds."""
        seen, todo = {start}, list(self.fn.succ[start])
        while todo:
            r = todo.pop()
            if r in seen:
                continue
            seen.add(r)
            if sets_again(r):  # written before it is read: the row reads no stale value
                continue
            if r in self.fn.jumps or (r in self.dispatch and reads_it(self.fn.op(r))):
                return True
            todo += self.fn.succ[r]
        return False

    def fixed_register(self, reg: str) -> tuple[str, int] | None:
        """The ``adrp`` page ``reg`` holds at every dispatch, if one, and the hottest
        ``adrp`` setting it: a callee-saved register whose every other write reaches no
        dispatch before the page is set again."""
        if reg not in self.pages:
            self.pages[reg] = self._page(reg)
        return self.pages[reg]

    def _page(self, reg: str) -> tuple[str, int] | None:
        if reg not in _KEPT:
            return None
        writers = [r for r in self.fn.writers(reg) if reg in self.fn.op(r).dest]
        pages = {self.fn.op(r).operands[1] for r in writers if self.fn.op(r).mnemonic == "adrp"}
        if len(pages) != 1:
            return None
        (page,) = pages
        sets = {w for w in writers if self.fn.op(w).mnemonic == "adrp"}
        if any(self._reaches_dispatch(w, sets.__contains__, lambda o: reg in o.src)
               for w in writers if w not in sets):
            return None
        return page, max(sets, key=self.fn.count)

    def _stores(self, base: str, start: int, size: int) -> list[tuple[int, int]]:
        """The stores to a frame slot's bytes: (row, operand position of the stored value)."""
        out = []
        for r in self.fn.frame_stores:
            o = self.fn.op(r)
            fields = None if o.load or not isa.is_store(o.mnemonic) else \
                field_offsets(o, frame=True)
            for k, (b, at) in enumerate(fields or ()):
                width = _SIZES.get(o.mnemonic[-1], 8 if o.operands[k].startswith("x") else 4)
                if b == base and at < start + size and start < at + width:
                    out.append((r, k))
        return out

    def fixed_slot(self, base: str, offset: int) -> tuple[str, int, int] | None:
        """The fixed address (page, constant) a pointer slot holds at every dispatch, and
        the hottest store of it: each store of the slot stores it, or reaches no dispatch
        before one that does."""
        if (base, offset) not in self.slots:
            self.slots[base, offset] = self._slot(base, offset)
        return self.slots[base, offset]

    def _slot(self, base: str, offset: int) -> tuple[str, int, int] | None:
        stores = self._stores(base, offset, 8)
        held = {r: self._held(r, self.fn.op(r).operands[k]) for r, k in stores}
        values = {v for v in held.values() if v is not None}
        if len(values) != 1:
            return None
        (value,) = values

        def reads(o: Op) -> bool:
            fields = field_offsets(o, frame=True) if o.load else None
            return fields is not None and (base, offset) in fields

        if any(self._reaches_dispatch(r, lambda s: held.get(s) == value, reads)
               for r, v in held.items() if v is None):
            return None
        page, constant = value
        return page, constant, max((r for r, v in held.items() if v == value),
                                   key=self.fn.count)

    def _held(self, row: int, token: str) -> tuple[str, int] | None:
        """The fixed address a register holds at ``row``, from its writer in the same
        straight-line code: ``adrp`` itself, or ``add`` of a constant to a fixed page."""
        reg = isa.parse_register(token)
        r = row
        for _ in range(_BLOCK):
            if r in self.fn.joins or r not in self.fn.succ.get(r - 1, ()) or \
                    isa.is_branch(self.fn.op(r - 1).mnemonic):
                return None
            r -= 1
            o = self.fn.op(r)
            if reg not in o.dest:
                continue
            if o.mnemonic == "adrp":
                return o.operands[1], 0
            if o.mnemonic == "add" and len(o.operands) == 3 and o.operands[2].startswith("#"):
                page = self.fixed_register(o.src[0]) if o.src else None
                return (page[0], int(o.operands[2].lstrip("#"), 0)) if page else None
            return None
        return None

    def frame_field(self, base: str, offset: int) -> tuple[tuple[int, ...], int | None]:
        """The rows storing a frame slot, if they run at most once per entry of the function
        and the function dispatches several times per entry (else none), and the row taking the nearest frame address at or below it (through
        which a callee may write it)."""
        if (base, offset) not in self.fields:
            self.fields[base, offset] = self._field(base, offset)
        return self.fields[base, offset]

    def _field(self, base: str, offset: int) -> tuple[tuple[int, ...], int | None]:
        stores = tuple(r for r, _ in self._stores(base, offset, 1))
        entries = self.fn.count(self.fn.rows[0])
        if not stores or sum(self.fn.count(r) for r in stores) > entries or \
                self.dispatches < _PER_ENTRY * entries:
            return (), None
        taken = [(at, r) for r in self.fn.frame_offsets
                 if (o := self.fn.op(r)).mnemonic in ("add", "mov")
                 and o.src[:1] == (base,) and o.dest[:1] != ("x29",)
                 and (at := _offset(o)) is not None and at <= offset]
        return stores, max(taken)[1] if taken else None


def _offset(o: Op) -> int | None:
    """The constant ``add xN, sp, #k`` (or ``mov xN, sp``) adds to the frame base."""
    if o.mnemonic == "mov":
        return 0
    try:
        return int(o.operands[2].lstrip("#"), 0) if len(o.operands) == 3 else None
    except ValueError:
        return None


def metrics(found: Sequence[StateTest], dispatches: int, total: int) -> list[Metric]:
    """Per kind: its rows' executions per dispatch and their share of the total."""
    out = []
    for kind in (FIXED, FRAME):
        runs = sum(t.runs for t in found if t.kind == kind)
        if runs and dispatches and total:
            out += [Metric(PER_DISPATCH[kind], round(runs / dispatches, 1), "instructions",
                           f"executions of the rows testing the {kind} / dispatches"),
                    Metric(SHARE[kind], round(100 * runs / total, 2), "%",
                           f"executions of the rows testing the {kind} / total")]
    return out


def said(found: Sequence[StateTest], asm: Callable[[int], str], pc: Callable[[int], int],
         count: Callable[[int], int], sites: int) -> list[str]:
    """Per state tested (as ``found`` lists them): where, which rows, and what makes it
    fixed (what its check says after the kind's prefix, and the advice quotes)."""
    out = []
    for t in found:
        rows = ", ".join(f"`{asm(r)}`" for r in t.example)
        span = f"{pc(t.example[0]):#x}" + (f"–{pc(t.example[-1]):#x}" if len(t.example) > 1
                                           else "")
        where = f"{t.sites} of {sites} sites, e.g. {span}: {rows}"
        if t.kind == FIXED:
            held = " and ".join(
                f"the address in {name} (stored at {pc(r):#x})" if name.startswith("[")
                else f"the page in {name} (`adrp` at {pc(r):#x})"
                for name, r in sorted(t.holders, key=lambda h: h[0].startswith("[")))
            out.append(f"{t.address} at {where}; kept as {held}; every other write of those "
                       "is followed by the same value again before any dispatch reads it")
        else:
            stored = ", ".join(f"{pc(r):#x}" for r in t.stores)
            runs = sum(count(r) for r in t.stores)
            taken = (f"; its frame address is taken at {pc(t.taken):#x} (`{asm(t.taken)}`), "
                     "so a callee may write it" if t.taken is not None else "")
            out.append(f"{t.address} at {where}; the function stores it only at {stored} "
                       f"({number(runs)} runs, at most once per entry){taken}")
    return out


def checks(found: Sequence[StateTest], told: Sequence[str]) -> list[str]:
    """One line per state tested (``told``: what ``said`` says of each)."""
    out = []
    for t, text in zip(found, told, strict=True):
        out.append(CHECK[t.kind] + text)
        if t.mask:
            out.append(MASK + t.address)
    return out


def values(found: Sequence[StateTest], told: Sequence[str]) -> DispatchStateValues | None:
    """The most executed test of each kind as ``said`` tells it, for the advice (None:
    no fixed state is tested)."""
    first = {k: next(((t, s) for t, s in zip(found, told, strict=True) if t.kind == k), None)
             for k in (FIXED, FRAME)}
    fixed, frame = first[FIXED], first[FRAME]
    if fixed is None and frame is None:
        return None
    return DispatchStateValues(fixed[1] if fixed else "", frame[1] if frame else "",
                               fixed is not None and fixed[0].mask)
