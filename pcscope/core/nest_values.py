"""Which other mechanisms are the inner and outer loops of a loop's nest, carried typed with
its mechanism.

pcscope.core.loop_nests finds them. The mechanism's checks name each in words for the
reader; the advice names them from here (these are mechanism IDs, not figures), so no
sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class NestValues(msgspec.Struct, frozen=True, tag="nest"):
    """The IDs of the mechanisms whose loops nest in this one's (``inner``) and whose loops
    this one's nests in (``outer``), in the order the checks name them (``NestValues()``:
    none)."""

    inner: tuple[str, ...] = ()
    outer: tuple[str, ...] = ()
