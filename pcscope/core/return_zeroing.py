"""Registers zeroed on return: the signature of a hardening flag such as GCC's
``-fzero-call-used-regs=used-gpr`` (it clears every call-clobbered register a function used,
so nothing leaks to the caller).

Read from the instructions only: before a ``ret``, a run of ``mov``/``movz`` of ``#0`` into
general registers (contiguous, the return value registers x0/x1 not counted) that clears at
least MIN_CLEARED other registers is dead work for the program — nothing reads them before the
caller writes them again. One such function is a coincidence; at least MIN_FUNCTIONS of them
are the flag, and the mechanism is every such run of the profile. The cost is issue and
rename slots (the moves are cheap, not slow), so only its share of the instructions counts.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from pcscope.core import isa
from pcscope.core.mechanisms import Metric
from pcscope.core.patterns import CodeFacts
from pcscope.core.profile import Profile
from pcscope.core.shapes import Op

MIN_CLEARED = 2  # registers (other than x0/x1) one return clears
MIN_FUNCTIONS = 3  # functions doing it before the runs are a build flag, not one function
MIN_SHARE = 0.005  # share of the total the runs need
# instructions per call up to which a function is small: its run is a large part of each call,
# the functions the advice exempts (a longer function's run costs little per call)
SMALL = 64
_RESULT = frozenset(("x0", "x1"))  # may carry the return value


@dataclass(frozen=True)
class Zeroing:
    runs: dict[int, tuple[int, ...]]  # function code -> the zeroing rows before its returns
    returns: int  # executions of the returns with a run
    cleared: float  # registers cleared per such return
    small: float  # part of the runs' executions in small functions (at most SMALL per call)


def find(profile: Profile, facts: CodeFacts, op: Callable[[int], Op],
         claimed: np.ndarray) -> Zeroing | None:
    """The runs of the profile, less the ``claimed`` rows (another mechanism counts them),
    or None when they are not a build flag's (too few functions, too small a share)."""
    runs: dict[int, list[int]] = defaultdict(list)
    returns = cleared = 0
    pcs = profile.pc
    zero = facts.flags(lambda m: m in ("mov", "movz"))
    ret = facts.flags(isa.is_return)
    for row in np.flatnonzero(ret[1:] & zero[:-1]).tolist():
        row += 1
        run, k = [], row - 1
        while k >= 0 and int(pcs[k]) + 4 == int(pcs[k + 1]) and _zeroes(op(k)):
            run.append(k)
            k -= 1
        others = {op(r).dest[0] for r in run} - _RESULT
        if len(others) < MIN_CLEARED:
            continue
        runs[int(profile.function[row])].extend(r for r in run if not claimed[r])
        returns += int(profile.samples[row])
        cleared += int(profile.samples[row]) * len(others)
    if len(runs) < MIN_FUNCTIONS or not returns:
        return None
    runs = {fn: found for fn, found in runs.items() if found}
    rows = [r for found in runs.values() for r in found]
    executed = int(profile.samples[rows].sum())
    if float(profile.value[rows].sum()) < MIN_SHARE * profile.total or not executed:
        return None
    small = sum(int(profile.samples[list(found)].sum()) for fn, found in runs.items()
                if _per_call(profile, fn) <= SMALL)
    return Zeroing({fn: tuple(sorted(r)) for fn, r in runs.items()}, returns,
                   round(cleared / returns, 1), round(small / executed, 3))


def _per_call(profile: Profile, fn: int) -> float:
    """Instructions per call of function ``fn`` (its executions / its first row's count)."""
    rows = profile.function_rows(fn)
    entries = int(profile.samples[rows[0]])
    return int(profile.samples[rows].sum()) / entries if entries else float("inf")


def _zeroes(o: Op) -> bool:
    """``mov``/``movz`` of ``#0`` into one general register."""
    return o.mnemonic in ("mov", "movz") and len(o.operands) == 2 and \
        o.operands[1] in ("#0", "#0x0") and len(o.dest) == 1 and o.dest[0].startswith("x")


def metrics(z: Zeroing) -> list[Metric]:
    return [Metric("functions", len(z.runs), "functions", "functions whose returns clear "
                   f"at least {MIN_CLEARED} registers besides x0/x1"),
            Metric("returns", z.returns, "executions", "executions of those returns"),
            Metric("registers cleared per return", z.cleared, "instructions",
                   "mov/movz #0 before each such return (x0/x1 not counted)"),
            Metric("runs in small functions", round(100 * z.small, 1), "%",
                   f"executions of the runs in functions of at most {SMALL} instructions per "
                   f"call / all the runs' executions")]


def checks(z: Zeroing) -> list[str]:
    return ["a run of mov/movz #0 into call-clobbered registers directly before ret, in "
            f"{len(z.runs)} functions: dead writes for the program (a hardening flag such as "
            "-fzero-call-used-regs)"]
