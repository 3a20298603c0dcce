"""Reading and writing text files that may be gzip-compressed, with line-numbered errors."""

from __future__ import annotations

import gzip
import io
import os
import sys
import tempfile
import zlib
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO, cast

import numpy as np
from isal import igzip
from isal.igzip_lib import IsalError

from pcscope.core.errors import InputError

_GZIP_MAGIC = b"\x1f\x8b"
# A cut or corrupt file. (isal's stub types IsalError as an instance: it is the class.)
_GZIP_ERRORS = (EOFError, zlib.error, gzip.BadGzipFile, cast(type[Exception], IsalError))


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _open_binary(path: str | os.PathLike):
    try:
        if is_gzip(path):
            return igzip.open(path, "rb")     # ISA-L: gunzip ~3.5x zlib's speed
        return open(path, "rb")
    except FileNotFoundError:
        raise InputError(str(path), None, "no such file") from None
    except IsADirectoryError:
        raise InputError(str(path), None, "is a directory, not a file") from None
    except PermissionError:
        raise InputError(str(path), None, "permission denied") from None


def read_bytes(path: str | os.PathLike) -> bytes:
    """The whole file, gunzipped when it is gzip (by content, not only by extension)."""
    with _open_binary(path) as f:
        try:
            return f.read()
        except _GZIP_ERRORS as exc:
            raise InputError(str(path), None, f"truncated or corrupt gzip ({exc})") from None


def line_of_offset(data: bytes, offset: int) -> int:
    """1-based line number of a byte offset."""
    return data.count(b"\n", 0, offset) + 1


def decode_utf8(path: str | os.PathLike, data: bytes) -> str:
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = line_of_offset(data, exc.start)
        raise InputError(
            str(path), line, f"invalid UTF-8 (byte 0x{data[exc.start]:02x})"
        ) from None


def open_text_lines(path: str | os.PathLike) -> Iterator[tuple[int, str]]:
    """Yield (1-based line number, line without its newline), streaming, plain or gzip."""
    lineno = 0
    with _open_binary(path) as f:
        try:
            for raw in f:
                lineno += 1
                try:
                    text = raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    raise InputError(
                        str(path), lineno, f"invalid UTF-8 (byte 0x{raw[exc.start]:02x})"
                    ) from None
                yield lineno, text.rstrip("\r\n")
        except _GZIP_ERRORS as exc:
            raise InputError(
                str(path), lineno + 1, f"truncated or corrupt gzip ({exc})"
            ) from None


@dataclass(frozen=True, slots=True)
class LineBlock:
    """Consecutive whole lines of a file, undecoded."""

    first: int          # 1-based number of the first line
    data: bytes         # the lines, each ending in b"\n" (one is added after a last line
                        # without); a b"\r" before it is left in
    ends: np.ndarray    # int64: where each line's b"\n" is in data

    def __len__(self) -> int:
        return len(self.ends)


def open_line_blocks(path: str | os.PathLike, size: int) -> Iterator[LineBlock]:
    """The file ``size`` lines at a time (the last block may be shorter), streaming, plain
    or gzip. Bytes, not text: a reader that decodes bytes itself pays for no str objects
    and no Python step per line (UTF-8 is the reader's to check)."""
    data = b""                     # whole lines not yielded yet
    ends = np.zeros(0, np.int64)   # their newlines
    first = 1                      # the number of the line data starts with
    tail = b""                     # a line whose newline has not been read yet
    with _open_binary(path) as f:
        try:
            while chunk := f.read(_CHUNK):
                cut = chunk.rfind(b"\n") + 1
                if not cut:
                    tail += chunk
                    continue
                lines = tail + chunk[:cut]
                tail = chunk[cut:]
                ends = np.concatenate([ends, len(data) + _newlines(lines)])
                data += lines
                start = done = 0    # bytes and lines of data yielded
                while len(ends) - done >= size:
                    stop = int(ends[done + size - 1]) + 1
                    yield LineBlock(first, data[start:stop], ends[done:done + size] - start)
                    start, done, first = stop, done + size, first + size
                data, ends = data[start:], ends[done:] - start
        except _GZIP_ERRORS as exc:
            raise InputError(str(path), first + len(ends),
                             f"truncated or corrupt gzip ({exc})") from None
    if tail:
        data += tail + b"\n"
        ends = np.append(ends, len(data) - 1)
    if len(ends):
        yield LineBlock(first, data, ends)


def _newlines(data: bytes) -> np.ndarray:
    return np.flatnonzero(np.frombuffer(data, np.uint8) == ord("\n"))


_CHUNK = 1 << 20


def check_output(path: str | os.PathLike) -> None:
    """Fail now, before long work, when ``path`` ('-' = stdout) cannot be written."""
    if str(path) == "-":
        return
    target = Path(path)
    if target.is_dir():
        raise InputError(str(path), None, "is a directory; want a file name")
    parent = next((p for p in target.parents if p.exists()), Path("."))
    if not parent.is_dir():
        raise InputError(str(path), None, f"cannot be written: {parent} is not a folder")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise InputError(str(path), None, f"cannot be written: {parent} is read-only")


@contextmanager
def open_output(path: str | os.PathLike) -> Iterator[TextIO]:
    """Write text atomically (temp file + rename); gzip when the name ends in .gz; '-' = stdout.

    Gzip output carries no file name and mtime 0, so equal content gives equal bytes. An
    OS error names ``path``, never the temp file.
    """
    if str(path) == "-":
        yield sys.stdout
        return
    check_output(path)
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as exc:
        raise InputError(str(path), None, f"cannot be written ({exc.strerror or exc})") from None
    os.fchmod(fd, 0o644)
    try:
        with ExitStack() as stack:
            raw = stack.enter_context(os.fdopen(fd, "wb"))
            packed = stack.enter_context(
                gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
            ) if target.name.endswith(".gz") else None
            stream = stack.enter_context(io.TextIOWrapper(packed or raw, encoding="utf-8",
                                                          newline="\n"))
            yield stream
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(str(path), None, f"cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
