"""Handing memory freed between the steps of an index build back to the system."""

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
