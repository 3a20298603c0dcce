"""Reproducible output files: same text, same bytes.

Like ``pcscope.core.textio.open_output`` (temp file + rename), but the gzip header holds
neither a time nor a file name (GzipFile would record the random temp name), the
compression level is a choice (benchmark-size inputs use 1: zlib at level 6 would take
longer than generating them), and files are world-readable like any committed data.
"""

from __future__ import annotations

import gzip
import io
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TextIO


@contextmanager
def output(path: Path, level: int = 6) -> Iterator[TextIO]:
    """Write text to `path` atomically; gzip at `level` when the name ends in .gz."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as raw:
            if path.name.endswith(".gz"):
                with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=level,
                                   mtime=0) as gz, _text(gz) as text:
                    yield text
            else:
                with _text(raw) as text:
                    yield text
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _text(binary) -> io.TextIOWrapper:
    return io.TextIOWrapper(binary, encoding="utf-8", newline="\n")
