"""Handing memory freed between the steps of an index build back to the system, and
keeping it in a process that answers queries."""

from __future__ import annotations

import ctypes


def return_free_memory() -> None:
    """glibc keeps freed blocks in its heap for reuse, so a build's RSS would stay at the sum
    of its steps' temporaries; ``malloc_trim`` returns the free pages (a few ms). Between
    steps only: a lower mmap threshold does the same for every array but costs ~0.5 s of
    page faults at 1M rows. Other C libraries: nothing to do."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no malloc_trim here (not glibc)
        pass


_M_TRIM_THRESHOLD = -1  # mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3


def keep_freed_memory() -> None:
    """A query makes and frees temporaries of a few hundred KB to a few MB (masks over the
    distinct texts, selections over rank ranges). With glibc's starting thresholds they are
    mapped anew, or the heap top is given back, after each query, so every query faults
    their pages in again: ~280 page faults for ``ldr`` at 1M rows, most of its time on a
    busy machine. The thresholds glibc itself moves to after freeing a large block (32 MB
    mapped, 64 MB trimmed) keep them: at most 64 MB of freed heap stays with the process.
    Process-wide: called where queries are answered (QueryEngine), not by `pcscope index`.
    Other C libraries: nothing to do."""
    try:
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)
        libc.mallopt(_M_TRIM_THRESHOLD, 64 << 20)
    except (OSError, AttributeError):  # no mallopt here (not glibc)
        pass
