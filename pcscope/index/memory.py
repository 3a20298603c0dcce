"""How an index build asks the C library to hand freed memory back."""

from __future__ import annotations

import ctypes

_M_MMAP_THRESHOLD = -3  # glibc's mallopt parameter


def unmap_large_blocks() -> None:
    """glibc serves blocks below its mmap threshold from the heap and raises that threshold
    each time a mapped block is freed (up to 32 MB), so after a few frees a build's
    4-16 MB arrays come from the heap and stay resident when freed: the peak is then the
    sum of every step's temporaries. A fixed 1 MiB threshold maps each large block and
    unmaps it when freed. Other C libraries: nothing to do."""
    try:
        ctypes.CDLL(None).mallopt(_M_MMAP_THRESHOLD, 1 << 20)
    except (OSError, AttributeError):  # no mallopt here (not glibc)
        pass
