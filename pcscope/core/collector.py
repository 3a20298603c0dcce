"""Pausing the garbage collector while long-lived objects are made.

Imports and an index's decoded tables make many objects that live as long as the process
or the workload, and next to no garbage: the collector's passes meanwhile only walk them
(on `pcscope show`, about a tenth of the process's CPU time went to such passes).
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """No collection passes inside; the collector is left as it was found (a pause inside
    another pause does not end the outer one)."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()
