"""The registers a call may change, read from its callee's code when the profile holds it.

AAPCS64 lets a callee change x0-x18 (shapes.CALL_CLOBBERED), and code that knows nothing of
the callee must read a call that way. A compiler that knows the callee (GCC's -fipa-ra, a
static function of the same unit) keeps values in the registers it sees the callee leave
alone: code reading x15 after such a call without setting it reads the value from before.
So when every instruction the callee can run is in the profile (its rows from its first,
following fall-through and direct jumps to its returns, with no call, system call or
register jump among them), the call changes only the caller-saved registers those rows write; otherwise
every one of them. The rows a direct jump or a fall-through reaches must all be there: a
callee partly missing from the profile may write anything in the part not seen.
"""

from __future__ import annotations

from collections.abc import Callable

from pcscope.core import isa, shapes
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

CALLEE_ROWS = 4096  # rows of a callee read at most: a larger one is read the ABI's way
_SYSTEM = frozenset(("svc", "hvc", "smc"))  # calls to a more privileged level: what they
# write (x0 at least) is not in their operands


class CallEffects:
    """Per row, the registers it may change (``changes``): what it writes and, for a call,
    what its callee may (read once per callee)."""

    def __init__(self, profile: Profile, op: Callable[[int], Op]) -> None:
        self.p = profile
        self.op = op
        self._callee: dict[int, tuple[str, ...]] = {}  # by the callee's first pc

    def changes(self, row: int) -> tuple[str, ...]:
        o = self.op(row)
        if not isa.is_call(o.mnemonic):
            return o.dest
        if o.target is None:  # through a register: the callee is not known
            return shapes.sets(o)
        if o.target not in self._callee:
            self._callee[o.target] = self._writes(o.target)
        return (*o.dest, *self._callee[o.target])

    def _writes(self, first: int) -> tuple[str, ...]:
        """The caller-saved registers the callee at ``first`` writes, in shapes.CALL_CLOBBERED
        order; all of them when its code is not all in the profile or it calls or jumps
        through a register."""
        start = self.p.row_of(first)
        if start is None:
            return shapes.CALL_CLOBBERED
        seen: set[int] = set()
        written: set[str] = set()
        stack = [start]
        while stack:
            r = stack.pop()
            if r in seen:
                continue
            seen.add(r)
            o = self.op(r)
            m = o.mnemonic
            if len(seen) > CALLEE_ROWS or isa.is_call(m) or isa.is_indirect(m) or m in _SYSTEM:
                return shapes.CALL_CLOBBERED
            written.update(o.dest)
            if o.target is not None:
                to = self.p.row_of(o.target)
                if to is None:
                    return shapes.CALL_CLOBBERED
                stack.append(to)
            if not isa.ends_flow(m):
                if r + 1 >= len(self.p) or self.op(r + 1).pc != o.pc + 4:
                    return shapes.CALL_CLOBBERED
                stack.append(r + 1)
        return tuple(reg for reg in shapes.CALL_CLOBBERED if reg in written)
