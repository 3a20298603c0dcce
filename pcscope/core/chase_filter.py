"""A necessary condition for a pointer chase, checked on register bitmasks of whole loops at
once, so the exact shape check (pcscope.core.shapes.loop_carried_load, which reads every
instruction of the loop in Python) runs only on the few loads that pass it.

shapes.loop_carried_load(body, k) holds only if some load j of the body (k itself or one
feeding k's address) has a loaded value that reaches, through registers, its own address,
and that value also reaches k's address. "Reaches" there follows each register back to its
nearest writer; here to every writer in the body (any order), with each instruction's
inputs widened to every register its text names (pcscope.core.asmtext.register_masks) and
every register that is not general folded into one bit. Both widenings only add
dependencies, so a load the exact check keeps always passes; frame registers (sp, x29) are
never followed by either.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from pcscope.core import shapes
from pcscope.core.asmtext import OTHER_REGISTER, register_masks
from pcscope.core.columns import StringColumn

if TYPE_CHECKING:
    from pcscope.core.patterns import CodeFacts

_ONE = np.uint64(1)
_FRAME = (_ONE << np.uint64(29)) | (_ONE << np.uint64(31))
_OTHER = _ONE << np.uint64(OTHER_REGISTER)
_LR = _ONE << np.uint64(30)


def may_chase(column: StringColumn, pc: np.ndarray, f: CodeFacts, loads: np.ndarray,
              heads: np.ndarray, branches: np.ndarray) -> np.ndarray:
    """Per load ``loads[i]`` in the loop ``heads[i]..branches[i]`` (rows): False when it
    cannot be a loop-carried dependent load."""
    if not len(loads):
        return np.zeros(0, dtype=bool)
    span = len(column)
    pcs = pc.view(np.int64)  # the same values as a cast, without a copy
    keys, loop_of = np.unique(heads * span + branches, return_inverse=True)
    loop_of = loop_of.ravel()
    first, last = keys // span, keys % span
    width = int((last - first).max()) + 1
    cells = first[:, None] + np.arange(width)  # [loop, offset] -> row
    inside = cells <= last[:, None]
    loop_body = _loop_bodies(f, cells, inside, pcs, first, last)
    rows, where = np.unique(cells[inside], return_inverse=True)
    dest, inputs, loaded, addressed = _masks(column, f, rows)
    # Per loop and offset: what the row writes and what those values depend on.
    body_dest = np.zeros(cells.shape, dtype=np.uint64)
    body_inputs = np.zeros(cells.shape, dtype=np.uint64)
    body_dest[inside], body_inputs[inside] = dest[where], inputs[where]
    # Every load of each loop with a memory base that is not a frame register: the j above.
    base = f.base[rows[where]]
    chain = np.zeros(cells.shape, dtype=bool)
    chain[inside] = f.load[rows[where]] & (base >= 0) & (base != 29) & (base != 31)
    loop, offset = np.nonzero(chain)
    at = np.searchsorted(rows, cells[loop, offset])
    reach = _closure(body_dest[loop], body_inputs[loop], addressed[at])
    cycling = np.zeros(len(keys), dtype=np.uint64)
    selfish = (loaded[at] & reach) != 0
    np.bitwise_or.at(cycling, loop[selfish], loaded[at][selfish])
    # Each asked-for load's reach, read from the entry of its loop and row.
    entry = np.searchsorted(loop * width + offset, loop_of * width + (loads - heads))
    return loop_body[loop_of] & ((cycling[loop_of] & reach[entry]) != 0)


def _loop_bodies(f: CodeFacts, cells: np.ndarray, inside: np.ndarray, pcs: np.ndarray,
                 first: np.ndarray, last: np.ndarray) -> np.ndarray:
    """Per loop, shapes.is_loop_body from the facts: no return or register branch before
    the last row, and every ``b`` before it stays inside."""
    before = inside & (cells < last[:, None])
    rows = np.where(before, cells, 0)
    leaves = f.flags(shapes.leaves_loop)[rows]
    target = f.target[rows]
    jumps_out = f.flags("b".__eq__)[rows] & (
        (target < pcs[first][:, None]) | (target > pcs[last][:, None]))
    return ~(before & (leaves | jumps_out)).any(axis=1)


def _masks(column: StringColumn, f: CodeFacts, rows: np.ndarray):
    """Per row: registers written, registers a written value may depend on, registers a
    load writes with the loaded value, registers of the memory operand (frame ones left
    out, they are never followed)."""
    named, addressed = register_masks(_take(column, rows))
    other = named & _OTHER
    general = np.zeros(len(rows), dtype=np.uint64)
    for slot in (0, 1):
        reg = f.dest[rows, slot].astype(np.int64)
        general |= np.where(reg >= 0, _ONE << np.maximum(reg, 0).astype(np.uint64), 0)
    base = f.base[rows].astype(np.int64)
    stepped = np.where(f.writeback[rows] & (base >= 0),
                       _ONE << np.maximum(base, 0).astype(np.uint64), 0)
    call = f.call[rows]
    dest = np.where(call, _LR, general | stepped | other)
    inputs = np.where(call, 0, named & ~_FRAME).astype(np.uint64)
    loaded = np.where(f.load[rows], general | other, 0).astype(np.uint64)
    based = np.where(base >= 0, _ONE << np.maximum(base, 0).astype(np.uint64), 0)
    return dest, inputs, loaded, (addressed | based) & ~_FRAME


def _closure(dest: np.ndarray, inputs: np.ndarray, start: np.ndarray) -> np.ndarray:
    """Per entry (a loop body's rows as columns): every register that ``start`` depends on
    through the body's writers, in any order."""
    reach = start.copy()
    while True:
        before = reach.copy()
        for k in range(dest.shape[1]):
            reach |= np.where((dest[:, k] & reach) != 0, inputs[:, k], 0).astype(np.uint64)
        if np.array_equal(before, reach):
            return reach


def _take(column: StringColumn, rows: np.ndarray) -> StringColumn:
    """The texts of some rows, gathered with numpy."""
    starts = column.offsets[rows].astype(np.int64)
    lengths = column.offsets[rows + 1].astype(np.int64) - starts
    offsets = np.zeros(len(rows) + 1, dtype=np.uint64)
    np.cumsum(lengths, out=offsets[1:])
    picks = np.repeat(starts - offsets[:-1].astype(np.int64), lengths) + np.arange(
        int(offsets[-1]))
    return StringColumn(column.blob[picks], offsets)
