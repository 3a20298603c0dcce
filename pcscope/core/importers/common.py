"""What every importer shares: reading input lines ('-' = stdin) and writing native files."""

from __future__ import annotations

import csv
import gzip
import os
import sys
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import BinaryIO

from pcscope.core.errors import InputError
from pcscope.core.finite_json import dumps
from pcscope.core.ids import hex_pc
from pcscope.core.textio import open_output, open_text_lines

STDIN = "-"
PROFILE_COLUMNS = ("function", "module", "pc", "samples", "asm")
# The asm of a sampled PC whose binary was not disassembled: one token, so it reads as
# its own mnemonic instead of borrowing a real one.
NO_ASM = "<unknown>"


def open_binary(path: str | os.PathLike) -> BinaryIO:
    """A binary stream of a plain or gzip file (by content); '-' is standard input."""
    if str(path) == STDIN:
        raw = sys.stdin.buffer
        head = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        return gzip.GzipFile(fileobj=raw) if head == b"\x1f\x8b" else raw
    try:
        f = open(path, "rb")
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), None, "is a directory, not a file") from None
    except PermissionError:
        raise InputError(str(path), None, "permission denied") from None
    if f.read(2) == b"\x1f\x8b":
        f.close()
        return gzip.open(path, "rb")
    f.seek(0)
    return f


def input_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """(1-based line number, line) of a file, plain or gzip; '-' reads standard input."""
    if str(path) != STDIN:
        yield from open_text_lines(path)
        return
    lineno = 0
    try:
        for data in open_binary(path):
            lineno += 1
            try:
                text = data.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise InputError(
                    "<stdin>", lineno, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})"
                ) from None
            yield lineno, text.rstrip("\r\n")
    except (EOFError, OSError, zlib.error) as exc:
        raise InputError("<stdin>", lineno + 1, f"truncated or corrupt gzip ({exc})") from None


def display_name(path: str | os.PathLike) -> str:
    """How a path is named in errors: '<stdin>' for '-'."""
    return "<stdin>" if str(path) == STDIN else str(path)


@dataclass
class Skipped:
    """Lines an importer passed over: counted, the first few kept by number for the user."""

    count: int = 0
    first: list[int] = field(default_factory=list)

    SHOWN = 5

    def add(self, line: int) -> None:
        self.count += 1
        if len(self.first) < self.SHOWN:
            self.first.append(line)

    def summary(self, what: str) -> str | None:
        """One line for stderr, or None when nothing was skipped."""
        if not self.count:
            return None
        lines = ", ".join(map(str, self.first)) + (", …" if self.count > len(self.first) else "")
        return f"{self.count} line{'s' if self.count > 1 else ''} skipped: not {what} (line {lines})"


@dataclass(frozen=True)
class ProfileRow:
    """One row of a native profile (formats.md §1)."""

    pc: int
    samples: int
    asm: str
    function: str = ""
    module: str = ""


def write_profile(rows: Iterable[ProfileRow], path: str | os.PathLike) -> int:
    """Write rows as profile CSV (gzip when the name ends in .gz); returns the row count."""
    count = 0
    with open_output(path) as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(PROFILE_COLUMNS)
        for row in rows:
            writer.writerow((row.function, row.module, hex_pc(row.pc), row.samples, row.asm))
            count += 1
    return count


def write_jsonl(records: Iterable[dict], path: str | os.PathLike) -> int:
    """Write one compact JSON object per line; returns the record count."""
    count = 0
    with open_output(path) as out:
        for record in records:
            out.write(dumps(record, separators=(", ", ": ")))
            out.write("\n")
            count += 1
    return count


def basename(path: str) -> str:
    """The file name of a DSO path as perf or objdump prints it."""
    return path.rstrip("/").rsplit("/", 1)[-1]
