"""What a gather-branch loop's branches on its keys do, carried typed with its mechanism.

pcscope.core.gather_partition finds each branch's role: a short diamond picking a value, a
loop exit, or a branch guarding a loop, a call or a long path. The mechanism's checks list
them in words for the reader; the advice reads them here (a metric is one figure, and
these are lists of branches), so no sentence is written to be parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec

# what a branch that is neither a value choice nor a loop exit guards
LOOP, CALL, LONG_PATH = "a loop", "a call", "a long path"


@dataclass(frozen=True)
class Guard:
    """A branch on the key that guards more than a value choice."""

    branch: str  # its text and PC, as the checks write it (```b.eq 0x10` at 0x20``)
    guards: str  # LOOP, CALL or LONG_PATH


class GatherValues(msgspec.Struct, frozen=True, tag="gather"):
    """The heaviest loop's branches on the key by role, in address order; a diamond or an
    exit by its mnemonic and PC (the checks give each whole; ``GatherValues()``: none); and
    the loop's loads and branches as its checks list them."""

    diamonds: tuple[str, ...] = ()
    exits: tuple[str, ...] = ()
    guards: tuple[Guard, ...] = ()
    streams: str = ""  # the index loads' texts (at most three, quoted)
    gathers: str = ""  # the key loads' texts
    decided: str = ""  # each branch on the key with its count and taken share
    rejoining: tuple[str, ...] = ()  # each diamond with where and how soon its sides rejoin
    partition: bool = False  # the heaviest loop stores index values back
    three_way: str = ""  # its three-way decisions on the key ("": none)
    scatters: str = ""  # the bucket scatters' stores and their loops' shares ("": none)
    loops: str = ""  # every loop by head: share, head count, keys, other indexed loads

    def guarding(self) -> str:
        """The guards, each with what it guards."""
        return "; ".join(f"{g.branch} ({g.guards})" for g in self.guards)
