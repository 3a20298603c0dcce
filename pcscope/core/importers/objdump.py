"""`objdump -d` text (GNU binutils or llvm-objdump) -> instructions per module.

Both tools print ``<addr>: <bytes> <tab> <mnemonic> <tab> <operands>`` under
``<addr> <symbol>:`` headers, after a ``<file>: file format <fmt>`` line. The asm kept
is ``mnemonic operands`` without comments (``// …`` on AArch64, ``# …`` on x86) and with
a code address (``b.ne 688 <f+0x18>``) spelt ``0x688``; that address is stored apart so
a shared object's instructions can be relocated to the load base seen at run time.
"""

from __future__ import annotations

import bisect
import os
import re
from dataclasses import dataclass, field

from pcscope.core.errors import InputError
from pcscope.core.ids import hex_pc
from pcscope.core.importers.common import basename, display_name, input_lines

_FILE = re.compile(r"^(.+?):\s+file format\s+(\S+)\s*$")
_SYMBOL = re.compile(r"^([0-9a-fA-F]+) <(.+)>:\s*$")
_INSN = re.compile(r"^\s*([0-9a-fA-F]+):\s?(.*)$")
_GROUP = r"(?:[0-9a-f]{2}|[0-9a-f]{4}|[0-9a-f]{8})"     # x86 bytes, Thumb halves, A64 words
_BYTES = re.compile(rf"^{_GROUP}(?: {_GROUP})*\s*$")
_COMMENT = re.compile(r"\s+(?://|#\s|;).*$")
_TARGET = re.compile(r"(?:0x)?([0-9a-fA-F]+) <[^<>]*>")


@dataclass(frozen=True)
class Instruction:
    """One disassembled instruction; ``target`` is the code address an operand names."""

    addr: int
    before: str             # asm text before the target address (or all of it)
    target: int | None
    after: str              # asm text after the target address
    function: str           # enclosing symbol ("" when the binary names none)

    def asm(self, base: int = 0) -> str:
        """The asm with this instruction's target relocated by ``base``."""
        if self.target is None:
            return self.before
        return f"{self.before}{hex_pc(self.target + base)}{self.after}"


@dataclass
class Disassembly:
    """The instructions of one binary, by address."""

    source: str                       # the objdump text file
    module: str                       # file name of the binary
    instructions: list[Instruction] = field(default_factory=list)
    symbols: dict[str, int] = field(default_factory=dict)   # name -> first address
    _addrs: list[int] = field(default_factory=list)

    def finish(self) -> None:
        self.instructions.sort(key=lambda i: i.addr)
        unique: list[Instruction] = []
        for insn in self.instructions:
            if not unique or unique[-1].addr != insn.addr:
                unique.append(insn)
        self.instructions = unique
        self._addrs = [i.addr for i in unique]

    def at(self, addr: int) -> Instruction | None:
        i = bisect.bisect_left(self._addrs, addr)
        if i < len(self._addrs) and self._addrs[i] == addr:
            return self.instructions[i]
        return None

    def between(self, first: int, last: int) -> list[Instruction]:
        """Every instruction with ``first <= addr <= last``."""
        lo = bisect.bisect_left(self._addrs, first)
        hi = bisect.bisect_right(self._addrs, last)
        return self.instructions[lo:hi]

    def symbol_end(self, name: str) -> int | None:
        """One past the last address of a symbol: the next symbol's start or the end."""
        start = self.symbols.get(name)
        if start is None:
            return None
        later = [a for a in self.symbols.values() if a > start]
        if later:
            return min(later)
        return self._addrs[-1] + 4 if self._addrs else start + 4

    @property
    def span(self) -> tuple[int, int] | None:
        return (self._addrs[0], self._addrs[-1]) if self._addrs else None


def symbol_name(raw: str) -> str:
    """A symbol as perf names it: without a ``@@VERSION`` suffix; section names (stripped
    binaries show ``<.text>``) are not function names."""
    name = raw.split("@@", 1)[0]
    if "+0x" in name or name.startswith("."):
        return ""
    return name


def parse_instruction_text(rest: str) -> tuple[str, int | None, str] | None:
    """``<bytes> <tab> mnemonic <tab> operands`` -> (before, target, after); None when the
    line holds only bytes (a wrapped x86 encoding) or a skipped block (``...``)."""
    parts = [p for p in rest.split("\t") if p.strip()]
    if len(parts) >= 2 and _BYTES.match(parts[0]) and not parts[1].split()[0].endswith(","):
        parts = parts[1:]
    elif len(parts) == 1 and _BYTES.match(parts[0]):
        return None     # no mnemonic is 2, 4 or 8 hex digits alone
    if not parts:
        return None
    text = " ".join(p.strip() for p in parts)
    text = _COMMENT.sub("", text).strip()
    if not text or text == "...":
        return None
    mnemonic, _, operands = text.partition(" ")
    text = f"{mnemonic} {operands.strip()}" if operands.strip() else mnemonic
    matches = list(_TARGET.finditer(text))
    if not matches:
        return text, None, ""
    m = matches[-1]
    return text[: m.start()], int(m.group(1), 16), text[m.end():].rstrip()


def parse_objdump(path: str | os.PathLike) -> list[Disassembly]:
    """Every binary disassembled in an objdump text file ('-' = stdin)."""
    name = display_name(path)
    found: list[Disassembly] = []
    current: Disassembly | None = None
    function = ""
    for lineno, line in input_lines(path):
        m = _FILE.match(line)
        if m:
            current = Disassembly(name, basename(m.group(1).strip()))
            found.append(current)
            function = ""
            continue
        m = _SYMBOL.match(line)
        if m:
            if current is None:
                raise InputError(name, lineno, "symbol before any 'file format' line; "
                                 "is this `objdump -d` output?")
            function = symbol_name(m.group(2))
            if function and function not in current.symbols:
                current.symbols[function] = int(m.group(1), 16)
            continue
        m = _INSN.match(line)
        if not m or current is None:
            continue
        parsed = parse_instruction_text(m.group(2))
        if parsed is None:
            continue
        before, target, after = parsed
        current.instructions.append(
            Instruction(int(m.group(1), 16), before, target, after, function)
        )
    if not found:
        raise InputError(name, None, "no 'file format' line: not `objdump -d` output")
    for dis in found:
        dis.finish()
    return found
