"""Functions that are likely hand-written assembly, so an idea about them is an edit of their
instructions, not C source, compiler flags or attributes.

A build flag leaves the same mark on every function the compiler makes. When at least
return_zeroing.MIN_FUNCTIONS functions of a module clear the call-clobbered registers they used
before returning (``-fzero-call-used-regs``), a function of that module that writes such a
register (x1-x17: x0 carries the result) and returns without clearing anything did not come out
of that compiler run. Together with no frame (no ``stp x29, x30`` or stack adjustment) and no
call, it is likely assembly (a ``.S`` or perlasm file). It stays an inference: the function
could come from another compiler run or carry an attribute, so the check states its evidence.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import replace

import numpy as np

from pcscope.core import isa
from pcscope.core.hand_written_values import HandWrittenValues
from pcscope.core.mechanisms import Mechanism
from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile
from pcscope.core.return_zeroing import MIN_FUNCTIONS
from pcscope.core.return_zeroing import find as zeroing_runs
from pcscope.core.shapes import Op

CHECK = "likely hand-written assembly: "  # the check's lead (the advice reads the value)
_FRAME = frozenset(("sp", "x29"))
_CLOBBERED = frozenset(f"x{n}" for n in range(1, 18))
_OWN = frozenset(("libc-routine", "libc-lock", "plt", "jit", "per-operation", "return-zeroing",
                  "outline-atomic"))  # kinds whose advice already fits such code


def mark(profile: Profile, facts: CodeFacts, op: Callable[[int], Op],
         found: list[Mechanism]) -> list[Mechanism]:
    """``found`` with the evidence check added to each mechanism that lies in one function
    likely written in assembly (the C library's routines and multi-function mechanisms keep
    their own advice)."""
    marks = _Marks(profile, facts, op)
    out = []
    for m in found:
        names = {s.function for s in m.sites}
        said = marks.of(next(iter(names))) if len(names) == 1 and m.kind not in _OWN else None
        out.append(replace(m, checks=(*m.checks, CHECK + said),
                           values=(*m.values, HandWrittenValues(said))) if said else m)
    return out


class _Marks:
    def __init__(self, profile: Profile, facts: CodeFacts, op: Callable[[int], Op]) -> None:
        self.p, self.op = profile, op
        zeroing = zeroing_runs(profile, facts, op, np.zeros(len(profile), dtype=bool))
        self.zeroing = set(zeroing.runs) if zeroing is not None else set()
        self.by_module = Counter(int(profile.module[profile.function_rows(fn)[0]])
                                 for fn in self.zeroing if fn >= 0)
        self.codes = {name: code for code, name in enumerate(profile.function_names)}

    def of(self, name: str) -> str | None:
        """The evidence that function ``name`` is hand-written (the check after CHECK), or
        None."""
        fn = self.codes.get(name, -1)
        if fn < 0 or fn in self.zeroing:
            return None
        rows = self.p.function_rows(fn).tolist()
        module = int(self.p.module[rows[0]])
        others = self.by_module[module]
        written = _bare([self.op(r) for r in rows]) if others >= MIN_FUNCTIONS else []
        if not written:
            return None
        return (f"no frame, no call, and it returns without clearing the registers "
                f"it writes ({', '.join(written)}), while {others} other functions of "
                f"{self.p.modules[module]} clear theirs before returning (a "
                f"-fzero-call-used-regs build)")


def _bare(ops: list[Op]) -> list[str]:
    """The call-clobbered registers a frameless leaf function writes, or [] when it has a
    frame, makes a call, never returns or clears a register right before a return."""
    returns = [i for i, o in enumerate(ops) if isa.is_return(o.mnemonic)]
    if not returns or any(i and ops[i - 1].mnemonic in ("mov", "movz") and
                          ops[i - 1].operands[1:] in (("#0",), ("#0x0",)) for i in returns):
        return []
    if any(isa.is_call(o.mnemonic) or set(o.dest) & _FRAME or
           (isa.is_store(o.mnemonic) and o.addr[:1] in (("sp",), ("x29",))) for o in ops):
        return []
    return sorted({r for o in ops for r in o.dest} & _CLOBBERED, key=lambda r: int(r[1:]))
