"""Composing one window of exactly n instructions: background code or an issue kernel.

A looped window is preheader (cold) + loop body (templates, then a back-edge) + exit
(cold); a straight-line window is templates with an optional prologue and return.
Kernel windows wrap one planted/look-alike loop the same way, with register-only setup
so nothing outside the loop perturbs the loop's simulated timings.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence

from pcscope.samples import templates as t
from pcscope.samples.codegen import Builder, himm, mem, r, x
from pcscope.samples.planted import KERNELS, Kernel

# Templates for the cold code after a kernel loop (no loop-carried state).
_EXIT_FILL = ("stack_spill", "select_minmax", "call_site", "field_update", "const_addr",
              "bitfield", "hash_mix")


def _fill(b: Builder, names: Sequence[str], cum_weights: Sequence[float] | None,
          upto: int) -> None:
    """Templates until at least `upto` instructions, then cut back to exactly `upto`."""
    choices, rng = b.rng.choices, b.rng
    while len(b) < upto:
        b.begin_block()
        t.TEMPLATES[choices(names, cum_weights=cum_weights)[0] if cum_weights
                    else rng.choice(names)](b)
    b.truncate(upto)


def _trip(rng: random.Random, lo: float, hi: float) -> float:
    return math.exp(rng.uniform(math.log(lo), math.log(hi)))


def background(rng: random.Random, n: int, names: Sequence[str], cum_weights: Sequence[float],
               calls: tuple[int, ...], loop_prob: float) -> Builder:
    b = Builder(rng, calls)
    if n >= 8 and rng.random() < loop_prob:
        _looped(b, n, names, cum_weights)
    else:
        _straight(b, n, names, cum_weights)
    return b


def _straight(b: Builder, n: int, names: Sequence[str], cum_weights: Sequence[float]) -> None:
    roll = b.rng.random()
    tail = 3 if n >= 6 and roll < 0.4 else (1 if n >= 3 and roll < 0.6 else 0)
    if n >= 10 and b.rng.random() < 0.3:
        t.prologue(b)
    _fill(b, names, cum_weights, n - tail)
    if tail == 3:
        t.epilogue(b)
    elif tail == 1:
        t.tail_call(b)


def _looped(b: Builder, n: int, names: Sequence[str], cum_weights: Sequence[float]) -> None:
    rng = b.rng
    trip = _trip(rng, 3.0, 400.0)
    b.freq = 1.0 / trip
    if n >= 16 and rng.random() < 0.35:
        t.prologue(b)
    i = b.pin(b.xs())
    b.idx = i
    b.emit(f"mov {x(i)}, xzr", "alu", r(i))
    style = rng.choice(t.EDGE_STYLES)
    if style == "cmp":
        lim = b.limit = b.pin(b.xs())
        b.emit(f"ldr {x(lim)}, {mem('x0', b.off(8, 0x40))}", "load", r(lim), r(0))
    tail = 3 if n >= 12 and rng.random() < 0.5 else (1 if rng.random() < 0.3 else 0)
    body = n - len(b) - t.edge_len(style) - tail
    b.freq = 1.0
    b.place("loop")
    _fill(b, names, cum_weights, len(b) + max(body, 0))
    t.back_edge(b, "loop", 1.0 - 1.0 / trip, style)
    b.freq = 1.0 / trip
    if tail == 3:
        t.epilogue(b)
    elif tail == 1:
        t.tail_call(b)
    b.truncate(n)


def kernel_window(rng: random.Random, n: int, category: str, bad: bool,
                  calls: tuple[int, ...], shape: random.Random,
                  alt: bool = False) -> tuple[Builder, Kernel]:
    """`shape` makes the structural choices: a planted window and its look-alike get
    generators with the same seed, so they share the instruction shape. `alt`: the
    alternative variant's ALP fields (planted.py)."""
    b = Builder(rng, calls)
    trip = _trip(rng, 60.0, 3000.0)
    b.freq = 1.0 / trip
    if rng.random() < 0.5:
        t.prologue(b)
    for _ in range(rng.randint(1, 4)):
        a = b.xt()
        if rng.random() < 0.5:
            arg = rng.randrange(0, 8)
            b.emit(f"mov {x(a)}, {x(arg)}", "alu", r(a), r(arg))
        else:
            b.emit(f"movz {x(a)}, {himm(rng.randrange(0, 0x400))}", "alu", r(a))
    b.freq = 1.0
    b.begin_block()
    kernel = KERNELS[category](b, bad, trip, shape, alt)
    b.freq = 1.0 / trip
    if len(b) + 3 > n:
        raise ValueError(f"{category} kernel needs {len(b) + 3} instructions, window has {n}")
    _fill(b, _EXIT_FILL, None, n - 3)
    t.epilogue(b)
    return b, kernel


KERNEL_MIN = 36  # instructions a kernel window must have room for (largest kernel + wrapper)
