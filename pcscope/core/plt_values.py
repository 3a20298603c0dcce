"""Where a module's PLT stubs lead, carried typed with its mechanism.

pcscope.core.mechanism_finder matches stubs by count to functions of other modules
(pcscope.core.stub_targets) and to C-library routines. The mechanism's checks list them
for the reader; the advice names them from here (a metric is one figure, and these are
lists of names), so no sentence is written to be parsed back.
"""

from __future__ import annotations

import msgspec


class PltValues(msgspec.Struct, frozen=True, tag="plt"):
    """The functions of other modules and the C-library routines the stubs lead to, most
    calls first, each with its calls (``memcpy (1,234)``)."""

    other_modules: tuple[str, ...] = ()
    libc_routines: tuple[str, ...] = ()
