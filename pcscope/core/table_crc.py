"""Table-driven CRC: a CRC computed with 256-entry lookup tables where the core has CRC32
instructions (``crc32b/h/w/x``, ``crc32cb/h/w/x``: mandatory from Armv8.1, present on every
Neoverse core).

The shape, read from the instructions only:
- a *table load* is a 32-bit load ``ldr wT, [table, idx, lsl #2]`` whose index is a byte of a
  value (``and #0xff``, ``uxtb``, ``ubfx #k, #8``, ``lsr w #24``, ``lsr x #56``, possibly then
  ``add #0x100·k`` to pick one of several tables, or ``eor`` with a data byte first);
- a *CRC step* combines a table load with the CRC shifted by one byte:
  ``eor c, t, c, lsr #8`` (reflected CRC, e.g. zlib's CRC-32) or ``eor c, t, c, lsl #8``
  (MSB-first, e.g. bzip2's). That step is what tells a CRC from other byte-indexed table code
  (AES T-tables xor table values with each other and a round key, never with the state
  shifted by 8);
- the mechanism is every loop of a function with a CRC step that makes table loads, sized by
  the table loads, the instructions computing their indexes and the ``eor``s that consume
  them; a function that already has a ``crc32*`` instruction is left alone.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core.crc_values import CrcValues
from pcscope.core.mechanisms import Metric
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

INDEX_BACK = 64  # instructions looked back for a table load's index producers (scheduled apart)
STEP_BACK = 6  # instructions looked back from a CRC step for its table load
CONSUMERS = 32  # instructions looked ahead for the eors consuming a table load
_TOP_BYTE = {"w": 24, "x": 56}  # a right shift by this leaves the top byte
# the words naming a reflected CRC in its check (the advice reads CrcValues.reflected)
REFLECTED = "reflected (low byte indexes the table, the CRC shifts right)"


@dataclass(frozen=True)
class TableCrc:
    function: int
    rows: tuple[int, ...]  # table loads, their index computation, the eors consuming them
    loads: int  # table-load executions
    reflected: bool  # eor with the CRC shifted right (low byte indexes): crc32* fits directly


def find(profile: Profile, loops: list[list[int]],
         op: Callable[[int], Op]) -> list[TableCrc]:
    """Table CRC loops, one entry per function (its loops' rows together)."""
    by_fn: dict[int, list[list[int]]] = defaultdict(list)
    for rows in loops:
        by_fn[int(profile.function[rows[0]])].append(rows)
    out = []
    for fn, fn_loops in by_fn.items():
        body = profile.function_rows(fn).tolist() if fn >= 0 else []
        ops = [op(r) for r in body]
        if any(o.mnemonic.startswith("crc32") for o in ops):
            continue  # already uses the CRC instructions
        direction = _crc_step(ops)
        if direction is None:
            continue
        picked: set[int] = set()
        loads = 0
        for rows in fn_loops:
            loop_ops = [op(r) for r in rows]
            for i in range(len(loop_ops)):
                index = _table_index(loop_ops, i)
                if index is None:
                    continue
                picked.update(rows[k] for k in (i, *index, *_consumers(loop_ops, i)))
                loads += int(profile.samples[rows[i]])
        if picked:
            out.append(TableCrc(fn, tuple(sorted(picked)), loads, direction == "lsr"))
    return out


def _crc_step(ops: list[Op]) -> str | None:
    """``lsr`` or ``lsl``: the function has ``eor c, t, c, lsr|lsl #8`` with ``t`` from a
    table load a few instructions before; None without one."""
    for i, o in enumerate(ops):
        if o.mnemonic != "eor" or len(o.operands) != 4 or o.operands[3] not in (
                "lsr #8", "lsl #8") or o.dest != (o.src[-1],):
            continue
        table = o.src[0]
        if any(_table_index(ops, k) is not None and table in ops[k].dest
               for k in range(max(0, i - STEP_BACK), i)):
            return o.operands[3][:3]
    return None


def _table_index(ops: list[Op], i: int) -> tuple[int, ...] | None:
    """The positions computing the index of a table load at ``i`` (a 32-bit load indexed by a
    byte of a value), or None when ``ops[i]`` is no such load."""
    o = ops[i]
    if o.mnemonic != "ldr" or not o.operands or not o.operands[0].startswith("w") or \
            len(o.addr) != 2 or not o.operands[1].endswith(", lsl #2]"):
        return None
    want, found = o.addr[1], []
    for k in range(i - 1, max(-1, i - 1 - INDEX_BACK), -1):
        p = ops[k]
        if want not in p.dest:
            continue
        found.append(k)
        if _byte_of(p):
            return tuple(found)
        if p.mnemonic in ("add", "eor") and len(p.src) >= 1:
            want = p.src[0]  # table select (+0x100·k) or the data byte xored in
            continue
        return None
    return None


def _byte_of(o: Op) -> bool:
    """``o`` yields one byte: extracts the low or top byte of a register (also as the
    shifted operand of an ``eor``), or loads a byte."""
    ops = o.operands
    if o.mnemonic in ("ldrb", "ldurb"):
        return True
    if o.mnemonic == "and" and ops[-1:] == ("#0xff",):
        return True
    if o.mnemonic == "uxtb" or (o.mnemonic == "ubfx" and ops[-1:] == ("#8",)):
        return True
    if o.mnemonic == "lsr" and len(ops) == 3:
        return _top_byte(ops[0], ops[2])
    return o.mnemonic == "eor" and len(ops) == 4 and ops[3].startswith("lsr #") and \
        _top_byte(ops[0], ops[3][4:])


def _top_byte(register: str, shift: str) -> bool:
    """A right shift of ``shift`` leaves only the top byte of ``register``."""
    try:
        amount = int(shift.lstrip("#"), 0)
    except ValueError:
        return False
    return amount == _TOP_BYTE.get(register[:1])


def _consumers(ops: list[Op], i: int) -> list[int]:
    """The ``eor``s within a few instructions after ``i`` that read the loaded value."""
    reg = ops[i].dest[0]
    return [k for k in range(i + 1, min(len(ops), i + 1 + CONSUMERS))
            if ops[k].mnemonic == "eor" and reg in ops[k].src]


def metrics(crc: TableCrc) -> list[Metric]:
    return [Metric("table lookups", crc.loads, "executions",
                   "executions of the byte-indexed 32-bit table loads")]


def values(crc: TableCrc) -> CrcValues:
    return CrcValues(crc.reflected)


def checks(crc: TableCrc) -> list[str]:
    kind = (f"{REFLECTED}: the crc32* instructions compute this form directly"
            if crc.reflected else
            "MSB-first (top byte indexes the table, the CRC shifts left): crc32* computes the "
            "reflected form, so bit-reverse (rbit) around it or fold with PMULL")
    return ["32-bit loads from a table indexed by a byte of a value (and #0xff / ubfx #8 / "
            "lsr #24), xored together, in a loop",
            "a CRC step: eor of a table value with the CRC shifted by 8 bits",
            f"the function has no crc32* instruction; the CRC is {kind}"]
