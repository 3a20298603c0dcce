"""AArch64 text in capstone style and the dataflow facts the sample generator needs.

An ``Insn`` is one generated instruction: its disassembly, its latency class, the
registers it reads and writes (for the pipeline model that fills the ALP stages), and an
optional ``Effect`` that overrides the default simulated behaviour (planted issues and
their look-alikes). A ``Builder`` accumulates the instructions of one window with a
per-window register pool, so different seeds give different registers and constants.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

# op -> ALP block kind. Only these ops carry a branch / mem block.
BRANCH_KIND = {
    "b": "direct", "bcond": "conditional", "br": "indirect", "blr": "indirect_call",
    "bl": "call", "ret": "return",
}
MEM_KIND = {"load": "load", "store": "store", "atomic": "atomic", "prefetch": "prefetch"}

# Execute latency (cycles) per op class, Neoverse-like; memory ops get theirs from the ALP.
LATENCY = {
    "alu": 1.0, "mul": 3.0, "div": 12.0, "fadd": 2.0, "fmul": 3.0, "fma": 4.0, "fdiv": 12.0,
    "fcvt": 3.0, "simd": 2.0, "crc": 2.0, "hint": 1.0, "barrier": 2.0, "load": 4.0,
    "store": 1.0, "atomic": 8.0, "prefetch": 1.0,
    "b": 1.0, "bcond": 1.0, "br": 1.0, "blr": 1.0, "bl": 1.0, "ret": 1.0,
}

TARGET = "@T"  # placeholder in asm text for a branch target, filled once PCs are known

# Integer registers a window may allocate: x16/x17 belong to PLT stubs, x18 to the
# platform, x28 to runtime thread state, x29/x30 to frame and link.
SCRATCH = tuple(range(0, 16))
SAVED = tuple(range(19, 28))
ZR = 31


@dataclass(frozen=True, slots=True)
class Effect:
    """Simulated behaviour that replaces the defaults drawn for an instruction."""

    taken: float | None = None          # branch taken rate
    mispredict: float | None = None     # branch mispredict rate
    l1d: float | None = None            # miss rates, as fractions of accesses
    l2: float | None = None
    llc: float | None = None
    tlb: float | None = None
    forwarded: float | None = None      # loads served by store-to-load forwarding
    latency: float | None = None        # memory avg_latency or execute latency
    extra_wait: float = 0.0             # structural issue wait (busy divider …)
    # The alternative variant (generate.py --variant alt) shows a cost in other ALP fields:
    unreported: tuple[str, ...] = ()    # fields this instruction's record leaves out: branch
    #                                     or memory counters, "avg_latency", stage names
    late: tuple[str, ...] = ()          # inputs waited for in execution, not before issue:
    #                                     registers (late accumulator forwarding), or "drain"
    #                                     (a barrier that issues at once, completes once older
    #                                     stores have drained)


class Insn(NamedTuple):
    """One instruction (a NamedTuple: windows at benchmark scale create millions)."""

    text: str                      # capstone-style asm; TARGET marks the branch target
    op: str                        # latency class / ALP block kind (see LATENCY)
    dst: tuple[str, ...] = ()      # registers written at completion
    src: tuple[str, ...] = ()      # registers read
    wb: tuple[str, ...] = ()       # base registers written back one cycle after issue
    target: str | int | None = None  # label (same window) or absolute address
    freq: float = 1.0              # executions per loop iteration
    fx: Effect | None = None

    @property
    def branch_kind(self) -> str | None:
        return BRANCH_KIND.get(self.op)

    @property
    def mem_kind(self) -> str | None:
        return MEM_KIND.get(self.op)

    @property
    def latency(self) -> float:
        if self.fx is not None and self.fx.latency is not None:
            return self.fx.latency
        return LATENCY[self.op]


# --- operand text -----------------------------------------------------------------------

def x(n: int) -> str:
    return "xzr" if n == ZR else f"x{n}"


def w(n: int) -> str:
    return "wzr" if n == ZR else f"w{n}"


# Bounded: combinations of three or four registers are many, and an unbounded cache
# would grow with the size of the sample.
@lru_cache(maxsize=1024)
def r(*ns: int) -> tuple[str, ...]:
    """Dependency keys of integer registers (the zero register carries no dependency)."""
    return tuple(f"r{n}" for n in ns if n != ZR)


@lru_cache(maxsize=1024)
def v(*ns: int) -> tuple[str, ...]:
    """Dependency keys of FP/SIMD registers."""
    return tuple(f"v{n}" for n in ns)


FLAGS = ("nzcv",)
SP = ("sp",)


def imm(n: int) -> str:
    """Capstone prints small immediates in decimal and the rest in hex."""
    if -10 < n < 10:
        return f"#{n}"
    return f"#-0x{-n:x}" if n < 0 else f"#0x{n:x}"


def himm(n: int) -> str:
    """movz/movk immediates: always hex except zero (capstone 4)."""
    return "#0" if n == 0 else f"#0x{n:x}"


def mem(base: str, off: int = 0) -> str:
    return f"[{base}]" if off == 0 else f"[{base}, {imm(off)}]"


# --- window builder ---------------------------------------------------------------------

class Builder:
    """The instructions of one window, with labels and a register pool of its own."""

    def __init__(self, rng: random.Random, calls: tuple[int, ...] = ()) -> None:
        self.rng = rng
        self.calls = calls
        self.insns: list[Insn] = []
        self.labels: dict[str, int] = {}
        self.freq = 1.0
        self.idx: int | None = None     # loop index register, for indexed addressing
        self.limit: int | None = None   # register holding the loop bound
        self.frame = 0                  # stack frame size a prologue set up
        self._pending: list[str] = []
        self._pinned: set[int] = set()
        self._busy: set[int] = set()
        self._busy_v: set[int] = set()
        self._next_label = 0

    # registers -------------------------------------------------------------------------
    def begin_block(self) -> None:
        """A new template: its temporaries may reuse registers of earlier templates."""
        self._busy = set(self._pinned)
        self._busy_v = set()

    def _pick(self, pool: tuple[int, ...]) -> int:
        busy, rnd, size = self._busy, self.rng.random, len(pool)
        for _ in range(12):  # pools are mostly free: a few random probes beat a scan
            n = pool[int(rnd() * size)]
            if n not in busy:
                break
        busy.add(n)
        return n

    def xt(self) -> int:
        """A temporary integer register (caller-saved preferred)."""
        return self._pick(SCRATCH if self.rng.random() < 0.8 else SAVED)

    def xs(self) -> int:
        """A register that must survive calls (callee-saved)."""
        return self._pick(SAVED)

    def pin(self, n: int) -> int:
        """Keep n out of every later allocation in this window (a loop-carried value)."""
        self._pinned.add(n)
        self._busy.add(n)
        return n

    def vt(self) -> int:
        busy, rnd = self._busy_v, self.rng.random
        for _ in range(12):
            n = int(rnd() * 32)
            if n not in busy:
                break
        busy.add(n)
        return n

    # constants ---------------------------------------------------------------------------
    def off(self, align: int = 8, top: int = 0x100) -> int:
        return self.rng.randrange(0, top // align) * align

    def choice(self, seq):
        return self.rng.choice(seq)

    def call_target(self) -> int:
        return self.rng.choice(self.calls) if self.calls else 0

    # labels and emission ---------------------------------------------------------------
    def new_label(self) -> str:
        self._next_label += 1
        return f"l{self._next_label}"

    def place(self, label: str) -> None:
        """The next emitted instruction carries this label."""
        self._pending.append(label)

    def emit(self, text: str, op: str, dst: tuple[str, ...] = (), src: tuple[str, ...] = (),
             *, wb: tuple[str, ...] = (), target: str | int | None = None,
             freq: float | None = None, fx: Effect | None = None) -> int:
        insns = self.insns
        if self._pending:
            for label in self._pending:
                self.labels[label] = len(insns)
            self._pending.clear()
        insns.append(Insn(text, op, dst, src, wb, target, self.freq if freq is None else freq,
                          fx))
        return len(insns) - 1

    def truncate(self, n: int) -> None:
        """Keep the first n instructions; labels past the cut then mean the window's end."""
        del self.insns[n:]
        self.labels = {k: i for k, i in self.labels.items() if i < n}

    def __len__(self) -> int:
        return len(self.insns)


def final_text(insns: list[Insn], labels: dict[str, int], first_pc: int) -> list[str]:
    """Final asm text of each instruction; a label never placed means the window's end."""
    end = first_pc + 4 * len(insns)
    out = []
    for ins in insns:
        if ins.target is None:
            out.append(ins.text)
            continue
        if isinstance(ins.target, int):
            addr = ins.target
        else:
            idx = labels.get(ins.target)
            addr = end if idx is None else first_pc + 4 * idx
        out.append(ins.text.replace(TARGET, f"#0x{addr:x}"))
    return out
