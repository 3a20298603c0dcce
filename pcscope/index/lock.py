"""One writer per index folder at a time: an advisory file lock shared by every process
that builds, swaps or adds to an index (readers never take it)."""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pcscope.core.errors import InputError

LOCK_NAME = ".lock"


@contextmanager
def writer_lock(home: Path) -> Iterator[None]:
    """Hold ``home``'s lock (waiting for another writer to finish). The lock goes with the
    process, so a writer killed with -9 never leaves it held."""
    try:
        home.mkdir(parents=True, exist_ok=True)
        fd = os.open(home / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise InputError(str(home), None, f"index folder is not writable ({exc.strerror}): "
                         "cannot build an index here; give another --index-dir") from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)    # closing drops the lock
