"""`perf annotate --stdio [-n]` -> profile rows, one per annotated instruction.

Each annotated symbol starts with a header ``Percent | Source code & Disassembly of
<dso> for <event> (<N> samples, …)`` (``Samples |`` with ``-n``), then lines
``<value> : <addr>: <asm>``. With ``-n`` the value is the sample count; without it a
percentage of the symbol's N samples, turned back into a count (rounded). Addresses are
those of the DSO file; ``--base DSO=ADDR`` relocates them to run-time addresses.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass

from pcscope.core.errors import InputError, UsageError
from pcscope.core.importers.common import ProfileRow, display_name, input_lines
from pcscope.core.importers.objdump import parse_instruction_text, symbol_name

_HEADER = re.compile(
    r"^\s*(Percent|Samples)\s*\|\s*Source code & Disassembly of (.+?) for (\S+) "
    r"\((\d+) samples"
)
_SYMBOL = re.compile(r"^\s*:\s*(?:\d+\s+)?([0-9a-fA-F]+) <(.+)>:\s*$")
_LINE = re.compile(r"^\s*([-+]?[0-9.]+(?:[eE][-+]?[0-9]+)?)?\s*:\s+([0-9a-fA-F]+):\s+(.*)$")
MAX_TOTAL = 2**53       # a larger header sample count is garbage
PERCENT_SLACK = 0.5     # percentages are printed rounded: their sum may pass 100 by this


@dataclass
class _Block:
    module: str
    event: str
    total: int
    counts: bool            # True: -n sample counts; False: percentages
    function: str = ""
    shown: float = 0.0      # the values of the block so far (percent or samples)


@dataclass
class AnnotateProfile:
    rows: list[ProfileRow]
    events: list[str]
    symbols: int = 0


def _samples(block: _Block, value: str | None) -> int:
    """The sample count of one line; ValueError saying why a value is impossible."""
    if not value:
        return 0
    number = float(value)
    block.shown += number
    if block.counts:
        if number < 0 or not number.is_integer():
            raise ValueError("want a whole number of samples")
        if block.shown > block.total:
            raise ValueError(f"the symbol's samples pass the header's {block.total}")
        return int(number)
    if not 0 <= number <= 100:
        raise ValueError("want a percentage from 0 to 100")
    if block.shown > 100 + PERCENT_SLACK:
        raise ValueError("the symbol's percentages add up to more than 100")
    return round(number * block.total / 100.0)


def read_annotate(path: str | os.PathLike, *, event: str | None = None,
                  bases: dict[str, int] | None = None) -> AnnotateProfile:
    """Rows of every annotated symbol of one event ('-' = stdin)."""
    name = display_name(path)
    bases = bases or {}
    per_event: dict[str, dict[int, ProfileRow]] = {}
    symbols: dict[str, int] = {}
    block: _Block | None = None
    for lineno, line in input_lines(path):
        m = _HEADER.match(line)
        if m:
            kind, module, ev, total = m.groups()
            if int(total) > MAX_TOTAL:
                raise InputError(name, lineno, f"{total} samples in the header: more than 2^53")
            block = _Block(module.strip(), ev, int(total), kind == "Samples")
            symbols[ev] = symbols.get(ev, 0) + 1
            continue
        if block is None:
            continue
        m = _SYMBOL.match(line)
        if m:
            block.function = symbol_name(m.group(2))
            continue
        m = _LINE.match(line)
        if not m:
            continue
        parsed = parse_instruction_text(m.group(3))
        if parsed is None:
            continue
        base = bases.get(block.module, 0)
        before, target, after = parsed
        asm = before if target is None else f"{before}0x{target + base:x}{after}"
        pc = int(m.group(2), 16) + base
        try:
            samples = _samples(block, m.group(1))
        except ValueError as exc:
            raise InputError(name, lineno, f"bad sample value {m.group(1)!r}: {exc}") from None
        rows = per_event.setdefault(block.event, {})
        old = rows.get(pc)
        rows[pc] = ProfileRow(pc, samples + (old.samples if old else 0), asm,
                              block.function, block.module)
    if not per_event:
        raise InputError(name, None, "no annotated instructions: want `perf annotate --stdio` "
                         "output")
    events = list(per_event)
    if event is None and len(events) > 1:
        raise UsageError(f"{name} annotates several events ({', '.join(events)}); "
                         "choose one with --event")
    chosen = event if event is not None else events[0]
    if chosen not in per_event:
        raise UsageError(f"--event {chosen!r}: not in {name} (events: {', '.join(events)})")
    rows = per_event[chosen]
    return AnnotateProfile([rows[pc] for pc in sorted(rows)], events, symbols[chosen])
