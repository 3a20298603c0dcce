"""Byte-swapping stores written out: a word's bytes shifted apart and stored one by one.

`lsr w3, w0, #24; lsr w2, w0, #16; lsr w1, w0, #8; strb w3, [x1]; strb w2, [x1, #1];
strb w1, [x1, #2]; strb w0, [x1, #3]` stores w0 big-endian: the most significant byte at
the lowest address. On AArch64 that is `rev w0, w0; str w0, [x1]` (or `rev32 v.16b` and one
`str q` for a whole block): two instructions instead of seven for a word, 2 instead of 15
for a doubleword. A word stored byte by byte in its own (little-endian) order is left
alone: that is one `str` the compiler could already have made, not a swap.
"""

from __future__ import annotations

import re
from collections import defaultdict
from typing import TYPE_CHECKING

import numpy as np

from pcscope.core.isa import parse_register
from pcscope.core.mechanisms import Mechanism, Metric

if TYPE_CHECKING:
    from pcscope.core.mechanism_finder import _Finder

BYTE_STORES = frozenset(("strb", "sturb"))
SHIFTS = frozenset(("lsr", "asr", "ubfx"))
SPAN = 10  # rows from a run's first byte store within which its other bytes are stored
LOOK_BACK = 12  # rows before the first store searched for the shifts that feed the stores
LOOP_CONTROL = 5  # rows of a loop besides its swapped stores: load, two pointer steps, cmp, b
_OFFSET = re.compile(r"^\[\w+(?:,\s*#(-?(?:0x)?[0-9a-f]+))?\]$")


def find(finder: _Finder) -> list[Mechanism]:
    """One mechanism per function holding byte-swapping stores, every such store a site."""
    f = finder.facts
    stores = f.flags(BYTE_STORES.__contains__)
    starts = np.flatnonzero(stores)
    if not len(starts):
        return []
    running = np.concatenate(([0], np.cumsum(stores)))
    ahead = running[np.minimum(starts + SPAN, len(stores))] - running[starts]
    by_fn: dict[int, list[tuple[list[int], int]]] = defaultdict(list)
    done = -1
    for row in starts[ahead >= 4].tolist():
        if row <= done or not finder.count(row):
            continue
        swap = _swapped_store(finder, row)
        if swap is not None:
            by_fn[int(finder.p.function[row])].append((swap, row))
            done = max(swap)
    out = []
    loop_of = {r: i for i, loop in enumerate(finder.tight_loops) for r in loop}  # disjoint
    for swaps in by_fn.values():
        words = sum(finder.count(key) for _, key in swaps)
        per_word = sum(finder.count(key) * len(rows) for rows, key in swaps) / words
        loops = _own_loops(finder, swaps, loop_of)
        control = sum(finder.count(key) * len(loops.get(key, ())) for _, key in swaps) / words
        out.append(finder.mechanism("byte-swap-store", [
            finder.site([*rows, *loops.get(key, ())], key) for rows, key in swaps], [
            Metric("byte-swapped stores", len(swaps), "sites",
                   "words stored a byte at a time, most significant byte first"),
            Metric("words stored", words, "executions", "sum of the first byte store's counts"),
            Metric("instructions per word", round(per_word, 1), "instructions",
                   "the shifts and byte stores of one word"),
            Metric("loop instructions per word", round(control, 1), "instructions",
                   "the other rows of loops that do nothing but these stores"),
        ], ["the bytes of one register are stored by separate `strb` to consecutive "
            "addresses after shifts by multiples of 8",
            "the most significant byte goes to the lowest address (a big-endian store)"]))
    return out


def _own_loops(finder: _Finder, swaps: list[tuple[list[int], int]],
               loop_of: dict[int, int]) -> dict[int, list[int]]:
    """The other rows of each straight-line loop that does nothing but swapped stores (every
    row run as often, at most LOOP_CONTROL rows besides the stores': the word's load, the
    pointer steps, the compare and branch), by the key row of its first swap (``loop_of``:
    per row of a tight loop, its position in finder.tight_loops). Such a loop exists only to
    store the words, so its control is the swap's to remove: a `rev32` + `str q` form has
    two steps where it has one per word, and no other idea can delete it."""
    within: dict[int, list[tuple[int, list[int]]]] = defaultdict(list)
    for rows, key in swaps:
        at = {loop_of.get(r, -1) for r in rows}
        if len(at) == 1 and (i := at.pop()) >= 0:  # all its rows in one loop
            within[i].append((key, rows))
    out: dict[int, list[int]] = {}
    for i, swapped in within.items():
        loop = finder.tight_loops[i]
        inside = sorted(swapped)
        theirs = {r for _, rows in inside for r in rows}
        rest = [r for r in loop if r not in theirs]
        if len(rest) <= LOOP_CONTROL and len({finder.count(r) for r in loop}) == 1:
            out[inside[0][0]] = rest
    return out


def _swapped_store(finder: _Finder, first: int) -> list[int] | None:
    """The rows (shifts and byte stores) of a big-endian store of one register whose first
    byte store is ``first``, or None."""
    p = finder.p
    stores: dict[int, tuple[int, str | None]] = {}  # offset -> (row, stored register)
    base = None
    for row in range(first, min(first + SPAN, len(p))):
        if int(p.pc[row]) != int(p.pc[first]) + 4 * (row - first):
            break
        op = finder.op(row)
        if op.mnemonic not in BYTE_STORES:
            continue
        match = _OFFSET.match(op.operands[1]) if len(op.operands) == 2 else None
        if match is None or (base is not None and op.addr[:1] != (base,)) or op.writeback:
            break
        base = op.addr[0]
        stores.setdefault(int(match.group(1) or "0", 0), (row, parse_register(op.operands[0])))
    offsets = sorted(stores)
    for n in (8, 4):
        if len(offsets) >= n and offsets[n - 1] - offsets[0] == n - 1:
            bytes_ = [stores[o] for o in offsets[:n]]
            shifts = [s for row, reg in bytes_
                      if (s := _shift_of(finder, row, reg, first)) is not None]
            if len(shifts) < n or len({s[1] for s in shifts}) != 1:
                continue
            if [s[0] for s in shifts] == [8 * (n - 1 - i) for i in range(n)]:
                return sorted({s[2] for s in shifts if s[2] is not None}
                              | {row for row, _ in bytes_})
    return None


def _shift_of(finder: _Finder, row: int, reg: str | None, first: int) \
        -> tuple[int, str, int | None] | None:
    """(bits shifted, source register, the shift's row) for the value ``reg`` that the store
    at ``row`` writes: the nearest earlier instruction writing ``reg`` if it is a shift by a
    multiple of 8, else ``reg`` itself unshifted."""
    if reg is None:
        return None
    p = finder.p
    for back in range(row - 1, max(first - LOOK_BACK, 0) - 1, -1):
        if int(p.pc[back]) + 4 * (row - back) != int(p.pc[row]):
            break
        op = finder.op(back)
        if reg not in op.dest:
            continue
        if op.mnemonic in SHIFTS and len(op.operands) >= 3 and len(op.src) == 1:
            bits = _immediate(op.operands[2])
            if op.mnemonic == "ubfx" and _immediate(op.operands[3] if len(op.operands) > 3
                                                    else "") != 8:
                return None
            return (bits, op.src[0], back) if bits is not None and bits % 8 == 0 else None
        break
    return 0, reg, None


def _immediate(token: str) -> int | None:
    try:
        return int(token.lstrip("#"), 0)
    except ValueError:
        return None
