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
from pathlib import Path
from typing import TextIO

from pcscope.core.errors import InputError

_GZIP_MAGIC = b"\x1f\x8b"


def is_gzip(path: str | os.PathLike) -> bool:
    with open(path, "rb") as f:
        return f.read(2) == _GZIP_MAGIC


def _open_binary(path: str | os.PathLike):
    try:
        if is_gzip(path):
            return gzip.open(path, "rb")
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
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
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
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(
                str(path), lineno + 1, f"truncated or corrupt gzip ({exc})"
            ) from None


def open_text_batches(path: str | os.PathLike, size: int) -> Iterator[tuple[int, list[str]]]:
    """Like ``open_text_lines``, ``size`` lines at a time (the last batch may be shorter):
    (number of the batch's first line, its lines). Whole chunks are decoded and split at
    once, with no Python step per line."""
    pending: list[str] = []
    first = 1        # the line number of pending[0]
    done = 0         # lines split off so far
    tail = b""       # a line whose newline has not been read yet
    with _open_binary(path) as f:
        try:
            while chunk := f.read(_CHUNK):
                data = tail + chunk
                cut = data.rfind(b"\n") + 1
                tail = data[cut:]
                if cut:
                    lines = _split(path, data[:cut], done)
                    done += len(lines)
                    pending += lines
                    start = 0
                    while len(pending) - start >= size:
                        yield first, pending[start:start + size]
                        start += size
                        first += size
                    pending = pending[start:]
        except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
            raise InputError(str(path), done + 1, f"truncated or corrupt gzip ({exc})") from None
    if tail:
        pending += _split(path, tail + b"\n", done)
    if pending:
        yield first, pending


_CHUNK = 1 << 20


def _split(path: str | os.PathLike, data: bytes, before: int) -> list[str]:
    """Newline-terminated ``data`` as lines without their line ends; ``before`` lines of
    the file came earlier (for the line number of a UTF-8 error)."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = before + line_of_offset(data, exc.start)
        raise InputError(str(path), line,
                         f"invalid UTF-8 (byte 0x{data[exc.start]:02x})") from None
    lines = text.split("\n")
    lines.pop()  # the empty string after the last newline
    return [t.rstrip("\r") for t in lines] if "\r" in text else lines


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
            if target.name.endswith(".gz"):
                raw = stack.enter_context(
                    gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=6, mtime=0)
                )
            stream = stack.enter_context(io.TextIOWrapper(raw, encoding="utf-8", newline="\n"))
            yield stream
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise InputError(str(path), None, f"cannot be written ({exc.strerror or exc})") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
