"""Necessary conditions of the loop shape checks, read from register bitmasks of many loops
at once, so the exact checks (pcscope.core.shapes, which read every instruction of a loop in
Python) run only on the few loops that pass.

Registers are bits: ``register_code`` for the general ones, and one bit that every other
register shares. A row's inputs are every register its text names
(pcscope.core.asmtext.register_masks), its outputs the facts' destination registers plus a
writeback base, x30 for a call and the shared bit when it names any other register. Both
only widen what the exact checks read, so a loop they keep always passes here.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import isa, shapes
from pcscope.core.asmtext import OTHER_REGISTER, register_masks
from pcscope.core.columns import StringColumn

if TYPE_CHECKING:
    from pcscope.core.patterns import CodeFacts

_ONE = np.uint64(1)
_FRAME = (_ONE << np.uint64(29)) | (_ONE << np.uint64(31))  # never followed (shapes._FRAME)
_OTHER = _ONE << np.uint64(OTHER_REGISTER)
_LR = _ONE << np.uint64(30)


def may_chase(column: StringColumn, pc: np.ndarray, f: CodeFacts, loads: np.ndarray,
              heads: np.ndarray, branches: np.ndarray) -> np.ndarray:
    """Per load ``loads[i]`` in the loop ``heads[i]..branches[i]`` (rows): False when it
    cannot be a loop-carried dependent load (shapes.loop_carried_load).

    That check holds only if some load j of the body (k itself or one whose loaded value
    reaches k's address) has a loaded value that reaches its own address. "Reaches" follows
    each register back to its nearest writer, around the loop (shapes._address_sources):
    here too, on masks (``_feeders``)."""
    if not len(loads):
        return np.zeros(0, dtype=bool)
    loops = _Loops(len(column), heads, branches)
    masks = _Masks(column, f, loops.rows)
    # Every load of each loop with a memory base that is not a frame register: the j above.
    base = f.base[loops.rows]
    chain = loops.grid(f.load[loops.rows] & (base >= 0) & (base != 29) & (base != 31))
    loop, offset = np.nonzero(chain)
    at = np.searchsorted(loops.rows, loops.cells[loop, offset])
    fed = _feeders(loops, masks, loop, offset, masks.addressed[at] & ~_FRAME)
    bit = _ONE << offset.astype(np.uint64)
    cycles = (fed & bit) != 0  # its own loaded value reaches its address
    cycling = np.zeros(len(loops), dtype=np.uint64)  # per loop, the offsets of such loads
    np.bitwise_or.at(cycling, loop[cycles], bit[cycles])
    # Each asked-for load's entry, by its loop and row.
    entry = np.searchsorted(loop * loops.width + offset,
                            loops.of * loops.width + (loads - heads))
    return _loop_bodies(pc, f, loops)[loops.of] & ((fed[entry] & cycling[loops.of]) != 0)


def _feeders(loops: _Loops, masks: _Masks, loop: np.ndarray, offset: np.ndarray,
             start: np.ndarray) -> np.ndarray:
    """Per entry (a loop, an offset in it, registers read there): the offsets (bits) of the
    loads whose loaded value reaches those registers, each register followed back to its
    nearest writer around the loop, that writer's inputs from there on.

    The walk steps back one row at a time; a row writing a register of the state replaces
    it by the row's inputs. Only exactly known writes replace (general registers); the
    shared bit of the other registers is only ever added to. An entry stops when its state
    holds nothing that an earlier state at the same row did not: the step is a union-
    preserving function of the state, so nothing new can follow."""
    assert loops.width <= 64, "offsets are bits of one uint64"
    length = (loops.last - loops.first + 1)[loop]
    kill, dest = loops.grid(masks.kill)[loop], loops.grid(masks.dest)[loop]
    inputs, loaded = loops.grid(masks.inputs)[loop], loops.grid(masks.loaded)[loop]
    seen = np.zeros(kill.shape, dtype=np.uint64)
    fed = np.zeros(len(loop), dtype=np.uint64)
    state, pos = start.copy(), offset.copy()
    live = np.arange(len(loop))
    while len(live):
        pos[live] = (pos[live] - 1) % length[live]
        p = pos[live]
        now = state[live]
        hit = now & dest[live, p]
        fed[live] |= np.where((hit & loaded[live, p]) != 0, _ONE << p.astype(np.uint64), 0
                              ).astype(np.uint64)
        now = np.where(hit != 0, (now & ~kill[live, p]) | inputs[live, p], now).astype(np.uint64)
        new = (now & ~seen[live, p]) != 0
        seen[live, p] |= now
        state[live] = now
        live = live[new]
    return fed


def may_step_bytes(column: StringColumn, pc: np.ndarray, f: CodeFacts, heads: np.ndarray,
                   branches: np.ndarray) -> np.ndarray:
    """Per loop ``heads[i]..branches[i]`` (rows): False when shapes.byte_step cannot find a
    byte step in it: it needs a loop body without calls, a conditional branch, and a narrow
    load whose base or index register some instruction of the body writes."""
    if not len(heads):
        return np.zeros(0, dtype=bool)
    loops = _Loops(len(column), heads, branches)
    masks = _Masks(column, f, loops.rows)
    written = np.bitwise_or.reduce(loops.grid(masks.dest), axis=1)
    narrow = f.flags(shapes.NARROW_LOADS.__contains__)[loops.rows]
    stepped = loops.grid(np.where(narrow, masks.addressed, 0).astype(np.uint64))
    steps = ((stepped & written[:, None]) != 0).any(axis=1)
    calls = loops.grid(f.call[loops.rows]).any(axis=1)
    tests = loops.grid(f.flags(isa.is_conditional_branch)[loops.rows]).any(axis=1)
    return (_loop_bodies(pc, f, loops) & ~calls & tests & steps)[loops.of]


class _Loops:
    """Distinct loops (first..last rows) as a grid: ``cells[loop, offset]`` is a row,
    ``inside`` marks the cells within the loop; ``rows`` every row of some loop, once."""

    def __init__(self, span: int, heads: np.ndarray, branches: np.ndarray) -> None:
        keys, of = np.unique(heads.astype(np.int64) * span + branches, return_inverse=True)
        self.of = of.ravel()  # each given loop's index among the distinct ones
        self.first, self.last = keys // span, keys % span
        self.width = int((self.last - self.first).max()) + 1
        self.cells = self.first[:, None] + np.arange(self.width)
        self.inside = self.cells <= self.last[:, None]
        self.rows, self._where = np.unique(self.cells[self.inside], return_inverse=True)

    def __len__(self) -> int:
        return len(self.first)

    def grid(self, per_row: np.ndarray) -> np.ndarray:
        """A per-row array (over ``rows``) laid out on the grid; 0/False outside."""
        out = np.zeros(self.cells.shape, dtype=per_row.dtype)
        out[self.inside] = per_row[self._where]
        return out


class _Masks:
    """Per row of ``rows``: registers written (``dest``; ``kill``: those known exactly, the
    general ones), registers a written value may depend on (``inputs``: none for a call,
    frame registers left out), registers a load writes with the loaded value (``loaded``)
    and those of its memory operand (``addressed``, the base included)."""

    def __init__(self, column: StringColumn, f: CodeFacts, rows: np.ndarray) -> None:
        named, after_comma, addressed = register_masks(column, rows)
        other = named & _OTHER
        general = _bits(f.dest[rows, 0]) | _bits(f.dest[rows, 1])
        base = f.base[rows]
        self.addressed = addressed | _bits(base)
        stepped = np.where(f.writeback[rows], _bits(base), 0).astype(np.uint64)
        call, load = f.call[rows], f.load[rows]
        self.kill = np.where(call, _LR, general | stepped).astype(np.uint64)  # exactly
        self.dest = self.kill | np.where(call, 0, other).astype(np.uint64)
        # A load's values depend on its address (a writeback base on itself, also there);
        # another instruction's on its sources: past its first operand if that one only
        # receives a value (isa.source_registers).
        sources = np.where(f.flags(isa.overwrites_first)[rows], after_comma, named)
        self.inputs = np.where(call, 0, np.where(load, self.addressed, sources)
                               ).astype(np.uint64) & ~_FRAME
        self.loaded = np.where(load, general | other, 0).astype(np.uint64)


def _bits(codes: np.ndarray) -> np.ndarray:
    """One bit per register code, 0 for -1 (none)."""
    codes = codes.astype(np.int64)
    return np.where(codes >= 0, _ONE << np.maximum(codes, 0).astype(np.uint64),
                    0).astype(np.uint64)


def _loop_bodies(pc: np.ndarray, f: CodeFacts, loops: _Loops) -> np.ndarray:
    """Per loop, shapes.is_loop_body from the facts: every row before the last that control
    does not fall through is a ``b`` that stays inside."""
    pcs = pc.view(np.int64)  # the same values as a cast, without a copy
    before = loops.inside & (loops.cells < loops.last[:, None])
    rows = np.where(before, loops.cells, 0)
    target = f.target[rows]
    stays = f.flags("b".__eq__)[rows] & (
        (target >= pcs[loops.first][:, None]) & (target <= pcs[loops.last][:, None]))
    return ~(before & f.flags(isa.ends_flow)[rows] & ~stays).any(axis=1)
