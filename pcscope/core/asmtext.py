"""Vectorised views of the asm column (a ``StringColumn``: UTF-8 blob + row offsets).

``asm_series`` gives polars a Series (for regex and indexing). ``AsmScan`` reads operand
registers and branch targets straight from the bytes with numpy: literal scans over the
blob cost ~0.1 s a million rows, where polars string splitting or regex captures cost
~1 s. Both read what ``pcscope.core.isa`` reads (tests/test_patterns.py checks this on
every row of a real profile).
"""

from __future__ import annotations

import io
from functools import cached_property
from typing import NamedTuple

import numpy as np
import polars as pl

from pcscope.core import isa
from pcscope.core.columns import StringColumn

_SEPARATOR = "\x1f"  # a field separator that never occurs in one-line text
_UNSAFE = np.array([ord("\n"), ord("\r"), ord(_SEPARATOR)], dtype=np.uint8)
_REGISTER_NAMES = [f"{p}{n}" for p in "wx" for n in range(31)] + [
    "sp", "wsp", "xzr", "wzr", "fp", "lr", "ip0", "ip1",
]  # fmt: skip
_MAX_HEX = 16


def asm_series(column: StringColumn, name: str = "asm") -> pl.Series:
    """One string per row, in row order, exactly as stored.

    polars cannot adopt the blob without pyarrow and decoding row by row costs ~0.3-1.5 s
    a million rows; a newline between rows and polars' CSV reader take ~0.15 s."""
    rows = len(column)
    if rows == 0:
        return pl.Series(name, [], dtype=pl.String)
    if np.isin(column.blob, _UNSAFE).any():  # multi-line text: take the slow, exact path
        return pl.Series(name, column.to_list(), dtype=pl.String)
    lines = np.insert(column.blob, column.offsets[1:-1].astype(np.int64), ord("\n"))
    frame = pl.read_csv(
        io.BytesIO(lines.tobytes() + b"\n"),
        has_header=False,
        separator=_SEPARATOR,
        quote_char=None,
        new_columns=[name],
        infer_schema=False,
    )
    series = frame[name].fill_null("")  # an empty row reads as null
    if series.len() != rows:
        return pl.Series(name, column.to_list(), dtype=pl.String)
    return series


def distinct_rows(texts: pl.Series) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct text (ascending), and each row's number among them
    (int32, numbered in that order); a null counts as the empty text. polars' Categorical
    cast numbers the exact strings in a hash table: no collision to check, and ~0.1 s less
    at 1M rows than a numpy sort of 64-bit hashes plus a check of every row. The mapping is
    a Categories of its own, which goes with the cast column (the global one would keep
    every text for the life of the process)."""
    fresh = pl.Categorical(pl.Categories.random())
    return by_first_row(texts.fill_null("").cast(fresh).to_physical().to_numpy())


def by_first_row(codes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes (non-negative, any numbering; some may be unused) numbered again in the order
    of each one's first row: those rows (ascending), and each row's new code (int32)."""
    rows = len(codes)
    first = np.full(int(codes.max(initial=0)) + 1 if rows else 0, rows, dtype=np.int64)
    np.minimum.at(first, codes, np.arange(rows))
    order = np.argsort(first)
    number = np.empty(len(first), dtype=np.int32)
    number[order] = np.arange(len(first), dtype=np.int32)  # unused codes (row n) come last
    return first[order[: np.count_nonzero(first < rows)]], number[codes]


class _Text:
    """The lower-cased blob with a 0 after it (index -1 reads that 0), and where each byte
    occurs. Spans refer to it, not to their AsmScan: no reference cycle, so a scan's arrays
    go as soon as the scan does (not at the next garbage collection)."""

    def __init__(self, blob: np.ndarray) -> None:
        self.padded = np.zeros(len(blob) + 1, dtype=np.uint8)
        self.text = self.padded[:-1]
        self.text[:] = blob
        self.text[(self.text >= ord("A")) & (self.text <= ord("Z"))] += 32
        self._marks: dict[str, np.ndarray] = {}

    def marks(self, char: str) -> np.ndarray:
        """Every position of one byte in the blob (ascending)."""
        if char not in self._marks:
            self._marks[char] = np.flatnonzero(self.text == ord(char))
        return self._marks[char]


class AsmScan:
    """Byte scans over rows at once: the lower-cased blob, and each row's text span with any
    comment (``//``, ``;``) cut off. Positions are blob indices; -1 = none."""

    def __init__(self, column: StringColumn) -> None:
        self.text = _Text(column.blob)
        text = self.text.text
        offsets = np.asarray(column.offsets, dtype=np.uint64).view(np.int64)  # no copy
        rows = _Span(self.text, offsets[:-1], offsets[1:])
        slashes = np.flatnonzero((text[:-1] == ord("/")) & (text[1:] == ord("/")))
        for comment in (rows.first_of(slashes), rows.first(";")):
            rows.end = np.where(comment >= 0, comment, rows.end)
        self.rows = rows

    @cached_property
    def operands(self) -> np.ndarray:
        """Per row, where the operands start (after the mnemonic and its spaces)."""
        rows, text = self.rows, self.text.text
        gap = rows.first_of(np.flatnonzero((text == ord(" ")) | (text == ord("\t"))))
        return rows.skip(np.where(gap >= 0, gap, rows.end))

    def operand_registers(self, second: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per row: register code of operand 0, and of operand 1 in the rows ``second``
        (positions), when they are plain general registers (``ldp x0, x1, …``), else -1."""
        op0 = self.rows.register_at(self.operands)
        op1 = np.full(len(op0), -1, dtype=np.int8)
        span, after = self.rows.take(second), self.operands[second]
        comma = span.first(",", after)
        op1[second] = span.register_at(span.skip(np.where(comma >= 0, comma + 1, -1)))
        return op0, op1

    def memory_bases(self) -> np.ndarray:
        """Per row: register code of the memory operand's base (``[x1, #8]``), else -1."""
        return self._memory()[0]

    def memory_operands(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row: memory base register code and whether the operand writes it back
        (``[x1, #8]!`` or ``[x1], #8``)."""
        base, close = self._memory()
        closed = np.flatnonzero(close >= 0)
        span, after = self.rows.take(closed), close[closed] + 1
        writeback = np.zeros(len(base), dtype=bool)
        writeback[closed] = ((span.byte(after) == ord("!"))
                             | (span.byte(span.skip(after)) == ord(","))) & (base[closed] >= 0)
        return base, writeback

    def _memory(self) -> tuple[np.ndarray, np.ndarray]:
        """Base register code and closing-bracket position per row (-1: none); only the rows
        with a bracket (a third or so) are read."""
        bracket = self.rows.first("[")
        opened = np.flatnonzero(bracket >= 0)
        span = self.rows.take(opened)
        base = np.full(len(bracket), -1, dtype=np.int8)
        close = np.full(len(bracket), -1, dtype=np.int64)
        base[opened] = span.register_at(span.skip(bracket[opened] + 1))
        close[opened] = span.first("]", bracket[opened])
        return base, close

    def branch_operands(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Target operand of the direct branch in each of ``rows``: its last operand as hex
        (``#``, ``0x`` optional; ``<symbol>`` ignored; -1 none), and whether it was written
        negative, that is relative to the branch's PC (the target is the PC minus it)."""
        span = self.rows.take(rows)
        symbol = span.first("<")
        span.end = np.where(symbol >= 0, symbol, span.end)
        comma = span.last(",")
        pos = span.skip(np.where(comma >= 0, comma + 1, self.operands[rows]))
        pos = np.where(span.byte(pos) == ord("#"), pos + 1, pos)
        negative = span.byte(pos) == ord("-")
        pos = np.where(negative, pos + 1, pos)
        prefixed = (span.byte(pos) == ord("0")) & (span.byte(pos + 1) == ord("x"))
        return span.hex_at(np.where(prefixed, pos + 2, pos)), negative


OTHER_REGISTER = 33  # the bit every register that is not general shares (vector, predicate)


class RegisterMasks(NamedTuple):
    """Per row, bitmasks (uint64) of the registers its text names: bit ``register_code`` for
    a general register (x0..x30, sp, xzr), bit OTHER_REGISTER for any other register."""

    named: np.ndarray  # anywhere in the text
    after_comma: np.ndarray  # from the first comma on: every operand but the first
    addressed: np.ndarray  # from the first ``[`` on: the memory operand's base and index


def register_masks(column: StringColumn, rows: np.ndarray) -> RegisterMasks:
    """The RegisterMasks of some rows. Each is a superset of what pcscope.core.isa reads
    from the text (comments and symbols count too), so a check that needs a register to be
    named never drops a row isa would keep."""
    column = column.take(rows)
    text = _Text(column.blob)
    offsets = np.asarray(column.offsets, dtype=np.uint64).view(np.int64)
    spans = _Span(text, offsets[:-1], offsets[1:])
    word = _WORD[text.text] > 0
    begins = word.copy()
    begins[1:] &= ~word[:-1]
    firsts = offsets[:-1][offsets[:-1] < len(word)]  # rows abut: a row's first byte begins
    begins[firsts] = word[firsts]  # a word even after a word byte of the row before
    pos = np.flatnonzero(begins)
    row = np.searchsorted(offsets, pos, "right") - 1
    words = _Span(text, offsets[:-1][row], offsets[1:][row])
    c0, c1, c2, c3 = (words.byte(pos + k) for k in range(4))
    w0, w1, w2, w3 = (_WORD[c] for c in (c0, c1, c2, c3))
    general = np.where(w3 == 0, _MENTIONED[(w0 * _BASE + w1) * _BASE + w2], -1)
    digit = (c1 >= ord("0")) & (c1 <= ord("9"))
    other = np.isin(c0, _OTHER_FIRST) & (digit | ((c0 == ord("p")) & (c1 == ord("n"))))
    bit = np.where(general >= 0, general, np.where(other, OTHER_REGISTER, -1))
    keep = bit >= 0
    pos, row = pos[keep], row[keep]
    bits = np.left_shift(np.uint64(1), bit[keep].astype(np.uint64))

    def mask(after: np.ndarray | None) -> np.ndarray:
        """The registers of each row, those after its ``after`` position only if given."""
        chosen = slice(None) if after is None else (after[row] >= 0) & (pos > after[row])
        out = np.zeros(len(column), dtype=np.uint64)
        np.bitwise_or.at(out, row[chosen], bits[chosen])
        return out

    return RegisterMasks(mask(None), mask(spans.first(",")), mask(spans.first("[")))


class _Span:
    """Text spans [start, end) of a set of rows, scanned together."""

    def __init__(self, text: _Text, start: np.ndarray, end: np.ndarray) -> None:
        self.text = text
        self.start = start
        self.end = end

    def take(self, rows: np.ndarray) -> _Span:
        """The spans of some rows (positions into this set)."""
        return _Span(self.text, self.start[rows], self.end[rows])

    def byte(self, pos: np.ndarray) -> np.ndarray:
        """Byte at each position (0 outside the span or where pos is -1)."""
        padded = self.text.padded
        ok = (pos >= self.start) & (pos < self.end)
        return padded[np.where(ok, pos, len(padded) - 1)]

    def skip(self, pos: np.ndarray) -> np.ndarray:
        """Past spaces and tabs (a few at most in disassembly)."""
        pos = pos.copy()
        for _ in range(8):
            b = self.byte(pos)
            more = (b == ord(" ")) | (b == ord("\t"))
            if not more.any():
                break
            pos[more] += 1
        return pos

    def first(self, char: str, after: np.ndarray | None = None) -> np.ndarray:
        return self.first_of(self.text.marks(char), after)

    def first_of(self, marks: np.ndarray, after: np.ndarray | None = None) -> np.ndarray:
        """The first mark at or after ``after`` (default: span start) inside each span."""
        after = self.start if after is None else after
        if not len(marks):
            return np.full(len(after), -1, dtype=np.int64)
        i = np.searchsorted(marks, after)
        inside = (i < len(marks)) & (after >= 0)
        pos = marks[np.minimum(i, len(marks) - 1, out=i)]
        return np.where(inside & (pos < self.end), pos, -1)

    def last(self, char: str) -> np.ndarray:
        """The last occurrence of ``char`` inside each span."""
        marks = self.text.marks(char)
        if not len(marks):
            return np.full(len(self.end), -1, dtype=np.int64)
        i = np.searchsorted(marks, self.end) - 1
        pos = marks[np.maximum(i, 0)]
        return np.where((i >= 0) & (pos >= self.start), pos, -1)

    def register_at(self, pos: np.ndarray) -> np.ndarray:
        """General-register code (``register_code``) of the word at each position, -1 if the
        word there is not a general register."""
        c0, c1, c2, c3 = (_WORD[self.byte(np.where(pos >= 0, pos + k, -1))] for k in range(4))
        key = (c0 * _BASE + c1) * _BASE + c2
        code = _REGISTERS[key]
        return np.where((c0 > 0) & (c1 > 0) & (c3 == 0), code, -1).astype(np.int8)

    def hex_at(self, pos: np.ndarray) -> np.ndarray:
        """The hex number starting at each position (up to 16 digits), -1 if none."""
        value = np.zeros(len(pos), dtype=np.int64)
        digits = np.zeros(len(pos), dtype=np.int64)
        going = np.ones(len(pos), dtype=bool)
        for k in range(_MAX_HEX + 1):
            nibble = _NIBBLE[self.byte(pos + k)]
            going &= nibble < 16
            if k == _MAX_HEX:  # a 17th digit: not an address
                digits[going] = 0
                break
            value = np.where(going, value * 16 + nibble, value)
            digits += going
        return np.where(digits > 0, value, -1)


_NIBBLE = np.full(256, 255, dtype=np.int64)
_NIBBLE[ord("0") : ord("9") + 1] = np.arange(10)
_NIBBLE[ord("a") : ord("f") + 1] = np.arange(10, 16)


def register_code(name: str | None) -> int:
    """x0..x30 -> 0..30, sp -> 31, xzr -> 32, anything else -> -1."""
    if name == "sp":
        return 31
    if name == "xzr":
        return 32
    if name and name[0] == "x":
        return int(name[1:])
    return -1


def _register_lut() -> np.ndarray:
    """Register code by word key: a word of up to three [a-z0-9] bytes, base 37."""
    lut = np.full(_BASE**3, -1, dtype=np.int8)
    for name in _REGISTER_NAMES:
        digits = [int(_WORD[b]) for b in name.encode().ljust(3, b"\0")]
        lut[(digits[0] * _BASE + digits[1]) * _BASE + digits[2]] = register_code(
            isa.parse_register(name)
        )
    return lut


_BASE = 37  # 0 = not a word byte, a-z = 1..26, 0-9 = 27..36
_WORD = np.zeros(256, dtype=np.int32)  # word keys stay below 37**3
_WORD[ord("a") : ord("z") + 1] = np.arange(1, 27)
_WORD[ord("0") : ord("9") + 1] = np.arange(27, 37)
_REGISTERS = _register_lut()


def _mentioned_lut() -> np.ndarray:
    """``_REGISTERS`` plus the zero-padded spellings isa also reads (``x05``)."""
    lut = _REGISTERS.copy()
    for prefix in "wx":
        for n in range(10):
            digits = [int(_WORD[b]) for b in f"{prefix}0{n}".encode()]
            lut[(digits[0] * _BASE + digits[1]) * _BASE + digits[2]] = n
    return lut


_MENTIONED = _mentioned_lut()
_OTHER_FIRST = np.frombuffer(b"bhsdqvzp", dtype=np.uint8)  # first letters of other registers
