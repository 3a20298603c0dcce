"""That a mechanism's function is likely hand-written assembly, carried typed with it.

pcscope.core.hand_written tells such a function from the mark a build flag leaves on its
module's other functions. The mechanism's check states the evidence for the reader; the
advice turns its recommendation into an edit of the assembly from here, so no sentence is
read back to decide it.
"""

from __future__ import annotations

import msgspec


class HandWrittenValues(msgspec.Struct, frozen=True, tag="hand-written"):
    """The evidence, as the check says it after its lead (pcscope.core.hand_written.CHECK)."""

    evidence: str
