"""Parsing gem5 O3PipeView text into record arrays, a chunk at a time.

One record is seven lines (gem5 ``cpu/o3/dyn_inst.cc``)::

    O3PipeView:fetch:<tick>:0x<pc>:<upc>:<seq>:<disassembly, may contain ':'>
    O3PipeView:decode:<tick>        rename, dispatch, issue, complete likewise
    O3PipeView:retire:<tick>:store:<tick>

Traces run to many gigabytes, so the usual case is parsed with numpy over whole chunks
(line and colon positions, vectorised digit parsing); a chunk that does not have the
plain shape (other debug output between the lines, a record cut short, a bad number) is
parsed line by line instead, which also names the offending line.
"""

from __future__ import annotations

import os
import zlib
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from pcscope.core.errors import InputError
from pcscope.core.importers.common import display_name, open_binary

PREFIX = b"O3PipeView:"
STAGE_NAMES = (b"fetch", b"decode", b"rename", b"dispatch", b"issue", b"complete", b"retire")
# Tick columns of a record: the six stages after fetch, then the store completion.
TICK_COLUMNS = ("decode", "rename", "dispatch", "issue", "complete", "retire", "store")
RETIRE, STORE = 5, 6
CHUNK = 8 << 20
_MAX_DIGITS = 18                      # int64 holds every 18-digit decimal
_FETCH = b"O3PipeView:fetch:"


@dataclass
class Records:
    """Records of one chunk in file order."""

    seq: np.ndarray          # int64
    upc: np.ndarray          # int64
    pc: np.ndarray           # uint64
    fetch: np.ndarray        # int64 tick
    ticks: np.ndarray        # int64, (n, 7): TICK_COLUMNS
    asm: dict[int, str]      # disassembly of each PC first seen in this chunk

    def __len__(self) -> int:
        return len(self.seq)

    @staticmethod
    def empty() -> Records:
        z = np.zeros(0, dtype=np.int64)
        return Records(z, z, z.astype(np.uint64), z, np.zeros((0, 7), dtype=np.int64), {})


def chunks(path: str | os.PathLike, size: int = CHUNK) -> Iterator[tuple[bytes, int]]:
    """(text, number of lines before it): each chunk ends where a fetch line begins, so
    records are never split in the usual case."""
    name = display_name(path)
    lines_before = 0
    carry = b""
    with open_binary(path) as f:
        while True:
            try:
                block = f.read(size)
            except (EOFError, OSError, zlib.error) as exc:
                raise InputError(name, lines_before + carry.count(b"\n") + 1,
                                 f"truncated or corrupt gzip ({exc})") from None
            data = carry + block
            if not block:
                if data:
                    yield data, lines_before
                return
            cut = data.rfind(b"\n" + _FETCH) + 1
            if cut <= 0:
                cut = data.rfind(b"\n") + 1
            if cut <= 0:
                carry = data
                continue
            yield data[:cut], lines_before
            lines_before += data.count(b"\n", 0, cut)
            carry = data[cut:]


def _digit_table(base: int) -> np.ndarray:
    table = np.full(256, 255, dtype=np.uint8)
    for value, char in enumerate("0123456789abcdef"[:base]):
        table[ord(char)] = value
        table[ord(char.upper())] = value
    return table


_DIGITS = {10: _digit_table(10), 16: _digit_table(16)}


def _parse_numbers(a: np.ndarray, starts: np.ndarray, ends: np.ndarray,
                   base: int = 10) -> np.ndarray | None:
    """The numbers in a[starts[i]:ends[i]] (decimal, or hex digits without 0x), or None
    when a field is empty, too long or holds a non-digit. Horner's rule, one digit
    column at a time, right-aligned, so no (rows x digits) temporaries."""
    dtype = np.int64 if base == 10 else np.uint64
    if len(starts) == 0:
        return np.zeros(0, dtype=dtype)
    lengths = ends - starts
    width = int(lengths.max())
    if int(lengths.min()) <= 0 or width > (_MAX_DIGITS if base == 10 else 16):
        return None
    table = _DIGITS[base]
    value = np.zeros(len(starts), dtype=dtype)
    radix = dtype(base)
    for k in range(width, 0, -1):
        at = ends - k
        inside = at >= starts
        digit = table[a[np.maximum(at, 0)]]
        if np.any(inside & (digit == 255)):
            return None
        value = value * radix + np.where(inside, digit, 0).astype(dtype)
    return value


def _decode_asm(raw: bytes, name: str, line: int) -> str:
    try:
        return " ".join(raw.decode("utf-8").split())
    except UnicodeDecodeError as exc:
        raise InputError(name, line, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})") from None


def parse_fast(buf: bytes, known: set[int], name: str, lines_before: int) -> Records | None:
    """Records of a chunk made only of whole, plain records (other lines allowed between
    records), or None when the chunk needs the line-by-line parser."""
    if not buf.endswith(b"\n"):
        buf += b"\n"
    a = np.frombuffer(buf, dtype=np.uint8)
    ends = np.flatnonzero(a == 10)
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    long_enough = ends - starts >= 17
    safe = np.where(long_enough, starts, 0)
    # A few bytes of the prefix, then the count of whole prefixes in the chunk must agree:
    # a line that only looks like one, or a prefix inside a line, sends the chunk to the
    # line parser (and the stage names are checked letter by letter below).
    o3 = long_enough & (a[safe] == ord("O")) & (a[safe + 2] == ord("P"))
    o3 &= a[safe + 10] == ord(":")
    line_no = np.flatnonzero(o3)
    if len(line_no) != buf.count(PREFIX) or len(line_no) % 7:
        return None
    s, e = starts[line_no], ends[line_no]
    kinds = _stage_kinds(a, s)
    if kinds is None or not np.all(kinds.reshape(-1, 7) == np.arange(7)):
        return None
    s7, e7 = s.reshape(-1, 7), e.reshape(-1, 7)
    ticks = np.empty((len(s7), 7), dtype=np.int64)
    for col in range(1, 6):
        values = _parse_numbers(a, s7[:, col] + 11 + len(STAGE_NAMES[col]) + 1, e7[:, col])
        if values is None:
            return None
        ticks[:, col - 1] = values
    colons = np.flatnonzero(a == ord(":"))
    if not _retire(a, colons, s7[:, 6], e7[:, 6], ticks):
        return None
    return _fetch(a, colons, buf, s7[:, 0], e7[:, 0], ticks, known, name,
                  lines_before + line_no.reshape(-1, 7)[:, 0] + 1)


def _stage_kinds(a: np.ndarray, s: np.ndarray) -> np.ndarray | None:
    """Which stage each O3PipeView line is (index into STAGE_NAMES), checking the name
    and its colon; None if any line has another name."""
    c0, c1, c2 = a[s + 11], a[s + 12], a[s + 13]
    kinds = np.full(len(s), -1, dtype=np.int64)
    kinds[c0 == ord("f")] = 0
    kinds[(c0 == ord("d")) & (c1 == ord("e"))] = 1
    kinds[(c0 == ord("r")) & (c2 == ord("n"))] = 2
    kinds[(c0 == ord("d")) & (c1 == ord("i"))] = 3
    kinds[c0 == ord("i")] = 4
    kinds[c0 == ord("c")] = 5
    kinds[(c0 == ord("r")) & (c2 == ord("t"))] = 6
    if np.any(kinds < 0):
        return None
    lengths = np.array([len(n) for n in STAGE_NAMES])[kinds]
    for k in range(5):    # the shortest names have 5 letters
        names = np.array([n[k] for n in STAGE_NAMES], dtype=np.uint8)[kinds]
        if not np.all(a[s + 11 + k] == names):
            return None
    if not np.all(a[s + 11 + lengths] == ord(":")):
        return None
    return kinds


def _retire(a: np.ndarray, colons: np.ndarray, s: np.ndarray, e: np.ndarray,
            ticks: np.ndarray) -> bool:
    """Fill the retire and store columns from ``retire:<tick>:store:<tick>`` lines."""
    last = colons[np.searchsorted(colons, e) - 1]
    marker = np.frombuffer(b":store:", dtype=np.uint8)
    if np.any(last - 6 < s + 18):
        return False
    if not np.all(a[(last - 6)[:, None] + np.arange(7)] == marker):
        return False
    retire = _parse_numbers(a, s + 18, last - 6)
    store = _parse_numbers(a, last + 1, e)
    if retire is None or store is None:
        return False
    ticks[:, RETIRE] = retire
    ticks[:, STORE] = store
    return True


def _fetch(a: np.ndarray, colons: np.ndarray, buf: bytes, s: np.ndarray, e: np.ndarray,
           ticks: np.ndarray, known: set[int], name: str, lines: np.ndarray) -> Records | None:
    """``fetch:<tick>:0x<pc>:<upc>:<seq>:<asm>``: the first four colons after ``fetch:``
    end the numbers; everything after the fourth is the disassembly."""
    i = np.searchsorted(colons, s + 17)
    if np.any(i + 3 >= len(colons)):
        return None
    c1, c2, c3, c4 = (colons[i + k] for k in range(4))
    has_0x = np.all(a[c1 + 1] == ord("0")) and np.all(a[c1 + 2] | 0x20 == ord("x"))
    if np.any(c4 >= e) or not has_0x:
        return None
    fetch = _parse_numbers(a, s + 17, c1)
    pc = _parse_numbers(a, c1 + 3, c2, base=16)
    upc = _parse_numbers(a, c2 + 1, c3)
    seq = _parse_numbers(a, c3 + 1, c4)
    if fetch is None or pc is None or upc is None or seq is None:
        return None
    # Each new PC's disassembly: from its first micro-op 0 (the instruction's own text),
    # else its first record.
    order = np.lexsort((upc != 0, pc))
    first = np.ones(len(order), dtype=bool)
    first[1:] = pc[order][1:] != pc[order][:-1]
    asm: dict[int, str] = {}
    for at in order[first].tolist():
        value = int(pc[at])
        if value not in known:
            asm[value] = _decode_asm(buf[c4[at] + 1: e[at]], name, int(lines[at]))
    return Records(seq, upc, pc, fetch, ticks, asm)


class LineParser:
    """The line-by-line parser: any interleaving of other output, records split across
    chunks, and precise errors. State carries over from one chunk to the next."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cur: list | None = None     # [fetch, pc, upc, seq, asm, ticks, line]
        self.from_micro_op: set[int] = set()   # PCs whose text so far is a micro-op's

    def parse(self, buf: bytes, known: set[int], lines_before: int) -> Records:
        rows: list[tuple] = []
        asm: dict[int, str] = {}
        self.from_micro_op: set[int] = set()
        for offset, raw in enumerate(buf.split(b"\n")):
            at = raw.find(PREFIX)
            if at < 0:
                continue
            lineno = lines_before + offset + 1
            row = self._line(raw[at + len(PREFIX):].rstrip(b"\r"), lineno, known, asm)
            if row is not None:
                rows.append(row)
        if not rows:
            return Records.empty()
        seq, upc, pc, fetch, ticks = zip(*rows, strict=True)
        return Records(np.array(seq, dtype=np.int64), np.array(upc, dtype=np.int64),
                       np.array(pc, dtype=np.uint64), np.array(fetch, dtype=np.int64),
                       np.array(ticks, dtype=np.int64).reshape(-1, 7), asm)

    def _line(self, text: bytes, lineno: int, known: set[int], asm: dict[int, str]):
        stage, _, rest = text.partition(b":")
        try:
            if stage == b"fetch":
                if self.cur is not None:
                    raise self._bad(lineno, f"fetch line before the retire line of the "
                                    f"record that starts at line {self.cur[6]}")
                tick, pc, upc, seq, text_asm = rest.split(b":", 4)
                if not pc.lower().startswith(b"0x"):
                    raise ValueError
                pc_value, upc_value = int(pc, 16), int(upc)
                if pc_value not in known and (
                    pc_value not in asm or (upc_value == 0 and pc_value in self.from_micro_op)
                ):
                    asm[pc_value] = _decode_asm(text_asm, self.name, lineno)
                    if upc_value:
                        self.from_micro_op.add(pc_value)
                    else:
                        self.from_micro_op.discard(pc_value)
                fetch_tick = self._tick(tick, lineno)
                self.cur = [fetch_tick, pc_value, upc_value, int(seq), None, [0] * 7, lineno,
                            fetch_tick]
                return None
            if stage == b"retire":
                if self.cur is None:
                    raise self._bad(lineno, "retire line without a fetch line")
                tick, sep, store = rest.partition(b":store:")
                if not sep:
                    raise ValueError
                fetch, pc, upc, seq, _, ticks, _, _ = self.cur
                ticks[RETIRE], ticks[STORE] = self._staged(b"retire", tick, lineno), int(store)
                self.cur = None
                return seq, upc, pc, fetch, ticks
            col = STAGE_NAMES.index(stage) - 1 if stage in STAGE_NAMES else -1
            if col < 0:
                shown = stage.decode(errors="replace")
                raise self._bad(lineno, f"unknown O3PipeView stage {shown!r}")
            if self.cur is None:
                raise self._bad(lineno, f"{stage.decode()} line without a fetch line")
            self.cur[5][col] = self._staged(stage, rest, lineno)
            return None
        except ValueError:
            shown = text[:80].decode("utf-8", errors="replace")
            raise self._bad(lineno, f"malformed O3PipeView line: {shown!r}") from None

    def _tick(self, text: bytes, lineno: int) -> int:
        if not text.isdigit() or len(text) > 18:
            shown = text[:30].decode("utf-8", errors="replace")
            raise self._bad(lineno, f"malformed O3PipeView line: tick {shown!r} is not a "
                            "whole number below 10^18")
        return int(text)

    def _staged(self, stage: bytes, text: bytes, lineno: int) -> int:
        """A stage's tick; 0 (a stage the instruction never reached) or not before the
        latest stage so far in pipeline order."""
        tick = self._tick(text, lineno)
        if tick:
            if tick < self.cur[7]:
                raise self._bad(lineno, f"{stage.decode()} at tick {tick} comes before an "
                                f"earlier stage at tick {self.cur[7]} (record at line "
                                f"{self.cur[6]})")
            self.cur[7] = tick
        return tick

    def _bad(self, lineno: int, what: str) -> InputError:
        return InputError(self.name, lineno, what)


def in_order(records: Records) -> bool:
    """Every record's stage ticks non-decreasing from fetch to retire (0 = not reached)."""
    times = np.concatenate([records.fetch[:, None], records.ticks[:, :RETIRE + 1]], axis=1)
    reached = np.maximum.accumulate(times, axis=1)
    return not bool(((times[:, 1:] != 0) & (times[:, 1:] < reached[:, :-1])).any())


class Trace:
    """Iterating gives the records of a whole trace, a chunk at a time, in file order;
    afterwards ``incomplete`` is the line of a record the trace cut short, if any."""

    def __init__(self, path: str | os.PathLike, chunk_size: int = CHUNK) -> None:
        self.path = path
        self.chunk_size = chunk_size
        self.name = display_name(path)
        self.incomplete: int | None = None

    def __iter__(self) -> Iterator[Records]:
        known: set[int] = set()
        slow = LineParser(self.name)
        for buf, lines_before in chunks(self.path, self.chunk_size):
            records = None
            if slow.cur is None:
                records = parse_fast(buf, known, self.name, lines_before)
            if records is None or not in_order(records):
                records = slow.parse(buf, known, lines_before)
            known.update(records.asm)
            yield records
        self.incomplete = slow.cur[6] if slow.cur is not None else None
