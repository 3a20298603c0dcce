"""Handing memory freed between the steps of an index build back to the system."""

from __future__ import annotations

import ctypes
import gc
from collections.abc import Iterator
from contextlib import contextmanager


def return_free_memory() -> None:
    """glibc keeps freed blocks in its heap for reuse, so a build's RSS would stay at the sum
    of its steps' temporaries; ``malloc_trim`` returns the free pages (a few ms). Between
    steps only: a lower mmap threshold does the same for every array but costs ~0.5 s of
    page faults at 1M rows. Other C libraries: nothing to do."""
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # no malloc_trim here (not glibc)
        pass


@contextmanager
def collector_paused() -> Iterator[None]:
    """No automatic cyclic garbage collection inside: an index build makes millions of
    objects that live until its end and next to no cycles, so each automatic full pass
    (three at 1M rows, ~0.1 s each) walks them and frees nothing. Refcounting still frees
    everything else; a build collects what it must itself (``gc.collect``)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
