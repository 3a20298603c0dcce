"""Issue kernels: a planted problem and its benign look-alike for each category.

A kernel emits one loop into a window's Builder. The planted (``bad``) and look-alike
forms have the same instruction shape (same mnemonics in the same order, different
registers and constants); only their simulated behaviour differs, so the problem is
visible in the ALP and not in the text. ``evidence`` is the instruction that carries it.

``alt`` builds the alternative variant (``--variant alt``): the same problem and look-alike,
with the cost shown in the ALP fields the default variant does not use for it — a
mispredict as counts without an executed count, a miss as L2 misses and the stages'
execute latency instead of L1D misses and avg_latency, a barrier as its own execute
latency and the next memory operation's issue wait, a spin as a ~100%-taken back-edge of
its own ALP loop, LL/SC retries as executions of the pair per iteration with the failure
branch's taken count unreported, an FP chain as execute latency (the op issues at once and
waits for its inputs while executing), and so on per kernel.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from random import Random

from pcscope.samples.alpgen import Agg
from pcscope.samples.codegen import FLAGS, TARGET, Builder, Effect, himm, imm, r, v, w, x


@dataclass(frozen=True)
class Kernel:
    evidence: int                 # instruction index carrying the evidence
    pcs: tuple[int, ...]          # every instruction of the kernel
    what: Callable[[Agg], str]    # one line about the evidence, from its aggregated ALP
    # (first, end, executions per iteration) of an inner loop the ALP records as a loop of
    # its own, so its instructions run once per (inner) iteration; None: one loop
    inner: tuple[int, int, float] | None = None


def _hide(alt: bool, *fields: str) -> tuple[str, ...]:
    """The ALP fields the alternative variant leaves out of a record."""
    return fields if alt else ()


# What a load's record leaves out in the alternative variant: its L1D count and average
# latency (the L2/LLC counts and the stages' execute latency carry the miss).
_LOAD_ALT = ("l1d_miss", "avg_latency")


def _loop_end(b: Builder, loop: str, i: int, n: int, trip: float) -> None:
    b.emit(f"add {x(i)}, {x(i)}, #1", "alu", r(i), r(i))
    b.emit(f"cmp {x(i)}, {x(n)}", "alu", FLAGS, r(i, n))
    b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=loop,
           fx=Effect(taken=1.0 - 1.0 / trip, mispredict=0.6 / trip))


def _count_end(b: Builder, loop: str, c: int, trip: float, step: int = 1) -> None:
    b.emit(f"subs {x(c)}, {x(c)}, {imm(step)}", "alu", r(c) + FLAGS, r(c))
    b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=loop,
           fx=Effect(taken=1.0 - 1.0 / trip, mispredict=0.6 / trip))


def _hit(b: Builder, lat: tuple[float, float] = (4.0, 4.6)) -> Effect:
    """A load that hits L1: what every look-alike's memory op looks like."""
    u = b.rng.uniform
    return Effect(l1d=u(0.0005, 0.006), l2=u(0.0, 0.0005), llc=0.0, tlb=u(0.0, 0.0005),
                  latency=u(*lat), forwarded=0.0)


def _miss(b: Builder, l1d: tuple[float, float], l2: tuple[float, float],
          llc: tuple[float, float], tlb: tuple[float, float], floor: float,
          cap: float = 200.0) -> Effect:
    """Misses as fractions of accesses; latency follows from them, within [floor, cap]."""
    u = b.rng.uniform
    m1 = u(*l1d)
    m2 = m1 * u(*l2)
    m3 = m2 * u(*llc)
    t = u(*tlb)
    lat = 6.0 + 14.0 * m1 + 45.0 * m2 + 170.0 * m3 + 60.0 * t
    return Effect(l1d=m1, l2=m2, llc=m3, tlb=t, forwarded=0.0,
                  latency=min(cap, max(floor, lat) * u(1.0, 1.25)))


def _head(b: Builder, count: int) -> list[int]:
    """Pinned registers for loop-invariant values and counters."""
    return [b.pin(b.xs()) for _ in range(count)]


def indirect_branch(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    mp = u(0.18, 0.36) if bad else u(0.001, 0.006)
    loop, start = b.new_label(), len(b)
    if shape.random() < 0.5:
        arr, i, n = _head(b, 3)
        o, vt, f = b.xs(), b.xt(), b.xt()
        slot = b.choice((0x10, 0x18, 0x20, 0x28, 0x38, 0x50))
        b.place(loop)
        b.emit(f"ldr {x(o)}, [{x(arr)}, {x(i)}, lsl #3]", "load", r(o), r(arr, i), fx=_hit(b))
        b.emit(f"ldr {x(vt)}, [{x(o)}]", "load", r(vt), r(o), fx=_hit(b))
        b.emit(f"ldr {x(f)}, [{x(vt)}, {imm(slot)}]", "load", r(f), r(vt), fx=_hit(b))
        b.emit(f"mov x0, {x(o)}", "alu", r(0), r(o))
        ev = b.emit(f"blr {x(f)}", "blr", r(0, 30), r(f, 0),
                    fx=Effect(mispredict=mp, unreported=_hide(alt, "executed")))
        _loop_end(b, loop, i, n, trip)
        shape = "virtual call through a vtable slot"
    else:
        ip, tab, acc, cnt = _head(b, 4)
        op, t = b.xt(), b.xt()
        b.place(loop)
        b.emit(f"ldrb {w(op)}, [{x(ip)}], #1", "load", r(op), r(ip), wb=r(ip), fx=_hit(b))
        b.emit(f"ldr {x(t)}, [{x(tab)}, {x(op)}, lsl #3]", "load", r(t), r(tab, op),
               fx=_hit(b))
        ev = b.emit(f"br {x(t)}", "br", (), r(t),
                    fx=Effect(mispredict=mp, unreported=_hide(alt, "executed")))
        b.emit(f"add {x(acc)}, {x(acc)}, {x(op)}", "alu", r(acc), r(acc, op))
        _count_end(b, loop, cnt, trip)
        shape = "opcode-table dispatch"
    if bad and alt:
        def what(a: Agg) -> str:
            return (f"{shape}: the indirect branch mispredicts {a.mispredicted:,} times in "
                    f"{a.iterations:,} iterations (no executed count)")
    elif bad:
        def what(a: Agg) -> str:
            return (f"{shape}: the indirect branch mispredicts {a.mispredict_rate:.0%} of "
                    f"{a.executed:,} executions")
    else:
        def what(a: Agg) -> str:
            return (f"same {shape} shape, but the target is predictable "
                    f"({a.mispredicted / a.iterations:.2%} mispredicted per iteration)"
                    if alt else f"same {shape} shape, but the target is predictable "
                    f"({a.mispredict_rate:.2%} mispredicted)")
    return Kernel(ev, tuple(range(start, len(b))), what)


def branch_mispredict(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    if bad:
        taken, mp = u(0.35, 0.65), u(0.12, 0.28)
    else:
        taken = u(0.02, 0.06) if b.rng.random() < 0.5 else u(0.94, 0.98)
        mp = u(0.001, 0.008)
    p, i, n, acc, cnt, thr = _head(b, 6)
    val = b.xt()
    loop, skip, start = b.new_label(), b.new_label(), len(b)
    b.place(loop)
    b.emit(f"ldr {w(val)}, [{x(p)}, {x(i)}, lsl #2]", "load", r(val), r(p, i), fx=_hit(b))
    fx = Effect(taken=taken, mispredict=mp, unreported=_hide(alt, "executed"))
    style = shape.choice(("cmp", "cbz", "tbz"))
    if style == "cmp":
        b.emit(f"cmp {w(val)}, {w(thr)}", "alu", FLAGS, r(val, thr))
        ev = b.emit(f"b.{shape.choice(('gt', 'le', 'hi', 'ls', 'lt'))} {TARGET}", "bcond", (),
                    FLAGS, target=skip, fx=fx)
    elif style == "cbz":
        ev = b.emit(f"{shape.choice(('cbz', 'cbnz'))} {w(val)}, {TARGET}", "bcond", (), r(val),
                    target=skip, fx=fx)
    else:
        ev = b.emit(f"{shape.choice(('tbz', 'tbnz'))} {w(val)}, {imm(b.rng.randrange(0, 8))}, "
                    f"{TARGET}", "bcond", (), r(val), target=skip, fx=fx)
    b.emit(f"add {x(acc)}, {x(acc)}, {w(val)}, sxtw", "alu", r(acc), r(acc, val),
           freq=1.0 - taken)
    b.emit(f"add {w(cnt)}, {w(cnt)}, #1", "alu", r(cnt), r(cnt), freq=1.0 - taken)
    b.place(skip)
    _loop_end(b, loop, i, n, trip)
    if alt:
        def what(a: Agg) -> str:
            return (f"{'data-dependent' if bad else 'same biased'} {a.mnemonic} filter: "
                    f"{a.mispredicted:,} mispredicts in {a.iterations:,} iterations "
                    f"(no executed count)")
    elif bad:
        def what(a: Agg) -> str:
            return (f"data-dependent {a.mnemonic} on loaded values mispredicts "
                    f"{a.mispredict_rate:.0%} (taken {a.taken_rate:.0%})")
    else:
        def what(a: Agg) -> str:
            return (f"same {a.mnemonic} filter shape, biased and well predicted "
                    f"({a.mispredict_rate:.2%} mispredicted)")
    return Kernel(ev, tuple(range(start, len(b))), what)


def dependent_load(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    node, key = _head(b, 2)
    k = b.xt()
    koff, noff = shape.choice((0, 0x10, 0x18)), b.choice((8, 0x20, 0x28))
    loop, found, start = b.new_label(), b.new_label(), len(b)

    def eff() -> Effect:
        if bad:
            return _miss(b, (0.55, 0.9), (0.35, 0.7), (0.2, 0.6), (0.01, 0.05),
                         b.rng.uniform(35.0, 150.0))
        return _hit(b)
    chase = replace(eff(), unreported=_LOAD_ALT) if alt else eff()
    b.place(loop)
    b.emit(f"ldr {x(k)}, {'[' + x(node) + ']' if koff == 0 else f'[{x(node)}, {imm(koff)}]'}",
           "load", r(k), r(node), fx=chase)
    b.emit(f"cmp {x(k)}, {x(key)}", "alu", FLAGS, r(k, key))
    b.emit(f"b.eq {TARGET}", "bcond", (), FLAGS, target=found,
           fx=Effect(taken=1.0 / trip, mispredict=0.5 / trip))
    ev = b.emit(f"ldr {x(node)}, [{x(node)}, {imm(noff)}]", "load", r(node), r(node), fx=chase)
    b.emit(f"cbnz {x(node)}, {TARGET}", "bcond", (), r(node), target=loop,
           fx=Effect(taken=1.0 - 1.0 / trip, mispredict=0.8 / trip))
    b.place(found)
    if bad:
        def what(a: Agg) -> str:
            return (f"linked-list walk: {a.asm} loads the next node from the previous one; "
                    + (f"L2 misses shown, latency {a.latency:.0f} cycles (execute latency)"
                       if alt else f"L1D misses {a.l1d_rate:.0%}, avg latency "
                       f"{a.latency:.0f} cycles"))
    else:
        def what(a: Agg) -> str:
            return (f"same pointer walk ({a.asm}) over a cache-resident list: avg latency "
                    f"{a.latency:.1f} cycles")
    return Kernel(ev, tuple(range(start, len(b))), what)


def cache_miss(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    if bad:
        fx = _miss(b, (0.25, 0.5), (0.5, 0.85), (0.3, 0.7), (0.0005, 0.004), 20.0, 80.0)
    else:
        fx = _hit(b)
    if alt:
        fx = replace(fx, unreported=_LOAD_ALT)
    src, s1, s2, n = _head(b, 4)
    loop, start = b.new_label(), len(b)
    b.place(loop)
    if shape.random() < 0.5:
        a, c = b.xt(), b.xt()
        ev = b.emit(f"ldp {x(a)}, {x(c)}, [{x(src)}], #0x10", "load", r(a, c), r(src),
                    wb=r(src), fx=fx)
        b.emit(f"add {x(s1)}, {x(s1)}, {x(a)}", "alu", r(s1), r(s1, a))
        b.emit(f"eor {x(s2)}, {x(s2)}, {x(c)}", "alu", r(s2), r(s2, c))
    else:
        q, acc = b.vt(), b.vt()
        ev = b.emit(f"ldr q{q}, [{x(src)}], #0x10", "load", v(q), r(src), wb=r(src), fx=fx)
        b.emit(f"add v{acc}.2d, v{acc}.2d, v{q}.2d", "simd", v(acc), v(acc, q))
        b.emit(f"add {x(s1)}, {x(s1)}, #0x10", "alu", r(s1), r(s1))
    _count_end(b, loop, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"sequential stream ({a.asm}), no dependency between iterations, misses "
                    + (f"L2 (latency {a.latency:.0f}, execute latency)" if alt else
                       f"L1D on {a.l1d_rate:.0%} of accesses (avg latency {a.latency:.0f})"))
    else:
        def what(a: Agg) -> str:
            return (f"same streaming loop ({a.asm}) over cache-resident data: "
                    + (f"latency {a.latency:.1f}" if alt else f"L1D misses {a.l1d_rate:.2%}"))
    return Kernel(ev, tuple(range(start, len(b))), what)


def atomic_llsc(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    attempts = u(2.5, 6.0) if bad else u(1.0, 1.02)
    objs, i, n = _head(b, 3)
    p, old, new, st = b.xt(), b.xt(), b.xt(), b.xt()
    if bad and alt:  # retries show only as executions of the pair per iteration
        ld = _hit(b, (4.5, 6.0))
        stx = Effect(l1d=0.0, l2=0.0, llc=0.0, tlb=0.0, latency=u(2.0, 4.0))
    elif bad:
        ld = _miss(b, (0.4, 0.8), (0.3, 0.6), (0.05, 0.2), (0.0, 0.002), 40.0, 140.0)
        stx = Effect(l1d=u(0.1, 0.3), l2=0.0, llc=0.0, tlb=0.0, latency=u(20.0, 45.0))
    else:
        ld = _hit(b, (4.5, 6.0))
        stx = Effect(l1d=0.0, l2=0.0, llc=0.0, tlb=0.0, latency=u(2.0, 4.0))
    loop, retry, start = b.new_label(), b.new_label(), len(b)
    size = shape.choice(("w", "x"))
    reg = w if size == "w" else x
    b.place(loop)
    b.emit(f"ldr {x(p)}, [{x(objs)}, {x(i)}, lsl #3]", "load", r(p), r(objs, i), fx=_hit(b))
    b.place(retry)
    b.emit(f"ldaxr {reg(old)}, [{x(p)}]", "atomic", r(old), r(p), freq=attempts, fx=ld)
    b.emit(f"add {reg(new)}, {reg(old)}, #1", "alu", r(new), r(old), freq=attempts)
    ev = b.emit(f"stlxr {w(st)}, {reg(new)}, [{x(p)}]", "atomic", r(st), r(new, p),
                freq=attempts, fx=stx)
    b.emit(f"cbnz {w(st)}, {TARGET}", "bcond", (), r(st), target=retry, freq=attempts,
           fx=Effect(taken=1.0 - 1.0 / attempts,
                     mispredict=u(0.1, 0.25) if bad else u(0.0, 0.002),
                     unreported=_hide(alt, "taken")))
    _loop_end(b, loop, i, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"ldaxr/stlxr increment retries: the store-exclusive runs "
                    f"{a.per_iteration:.1f}x per iteration (contended line)")
    else:
        def what(a: Agg) -> str:
            return (f"same exclusive-pair increment, uncontended: {a.per_iteration:.2f} "
                    f"store-exclusives per iteration")
    return Kernel(ev, tuple(range(start, len(b))), what)


def atomic_contention(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    if bad and alt:  # a far atomic: executed at the shared cache, no L1D miss counted
        fx = Effect(l1d=b.rng.uniform(0.0, 0.01), l2=0.0, llc=0.0, tlb=0.0,
                    latency=b.rng.uniform(70.0, 200.0), unreported=("avg_latency",))
    elif bad:
        fx = _miss(b, (0.5, 0.95), (0.4, 0.8), (0.05, 0.2), (0.0, 0.002),
                   b.rng.uniform(70.0, 200.0), 260.0)
    else:
        fx = _hit(b, (6.0, 10.0))
        if alt:
            fx = replace(fx, unreported=("avg_latency",))
    ctx, total, n = _head(b, 3)
    c, one, old = b.xt(), b.xt(), b.xt()
    off = b.choice((0x40, 0x80, 0xc0, 0x100, 0x8))
    loop, start = b.new_label(), len(b)
    b.place(loop)
    b.emit(f"ldr {x(c)}, [{x(ctx)}, {imm(off)}]", "load", r(c), r(ctx), fx=_hit(b))
    op = shape.choice(("ldaddal", "ldadd", "ldaddl", "swpal", "casal"))
    if op == "casal":  # compare-and-swap increment: expected value, new value, swap
        b.emit(f"ldr {w(old)}, [{x(c)}]", "load", r(old), r(c), fx=_hit(b))
        b.emit(f"add {w(one)}, {w(old)}, #1", "alu", r(one), r(old))
        ev = b.emit(f"casal {w(old)}, {w(one)}, [{x(c)}]", "atomic", r(old), r(old, one, c),
                    fx=fx)
    else:
        b.emit(f"movz {w(one)}, {himm(b.choice((1, 1, 2, 0x10)))}", "alu", r(one))
        ev = b.emit(f"{op} {w(one)}, {w(old)}, [{x(c)}]", "atomic", r(old), r(one, c), fx=fx)
    b.emit(f"add {x(total)}, {x(total)}, {w(old)}, uxtw", "alu", r(total), r(total, old))
    _count_end(b, loop, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"{a.mnemonic} on a shared counter: avg latency {a.latency:.0f} cycles, "
                    f"L1D misses {a.l1d_rate:.0%} ("
                    + ("far atomic, execute latency" if alt else "line ping-pong") + ")")
    else:
        def what(a: Agg) -> str:
            return f"same {a.mnemonic} on a private line: avg latency {a.latency:.1f} cycles"
    return Kernel(ev, tuple(range(start, len(b))), what)


def barrier(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    if bad:
        store = Effect(l1d=u(0.5, 0.9), l2=u(0.1, 0.3), llc=0.0, tlb=0.0, latency=u(30.0, 60.0))
    else:
        store = Effect(l1d=u(0.0, 0.003), l2=0.0, llc=0.0, tlb=0.0, latency=u(1.0, 1.5))
    seq, buf, i, n, ctl = _head(b, 5)
    f = b.xt()
    loop, start = b.new_label(), len(b)
    b.place(loop)
    b.emit(f"add {x(seq)}, {x(seq)}, #1", "alu", r(seq), r(seq))
    b.emit(f"str {x(seq)}, [{x(buf)}, {x(i)}, lsl #3]", "store", (), r(seq, buf, i), fx=store)
    ev = b.emit(f"dmb {shape.choice(('ish', 'ish', 'ishst'))}", "barrier",
                fx=Effect(late=("drain",)) if alt else None)
    b.emit(f"ldr {x(f)}, [{x(ctl)}, {imm(b.choice((8, 0x10, 0x40)))}]", "load", r(f), r(ctl),
           fx=_hit(b))
    _loop_end(b, loop, i, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"{a.asm} after a store that misses: the barrier "
                    + (f"executes for {a.execute:.0f} cycles" if alt else
                       f"waits {a.issue_wait:.0f} cycles to issue")
                    + " and holds younger loads")
    else:
        def what(a: Agg) -> str:
            return (f"same {a.asm} after a store that hits: "
                    + (f"{a.execute:.1f} cycles execute latency" if alt else
                       f"{a.issue_wait:.1f} cycles issue wait"))
    return Kernel(ev, tuple(range(start, len(b))), what)


def division(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    fx = (Effect(latency=u(22.0, 36.0), extra_wait=u(4.0, 12.0)) if bad
          else Effect(latency=u(6.0, 9.0)))
    if alt:  # no complete stage: the consumer's issue wait carries the latency
        fx = replace(fx, unreported=("complete",))
    p, d, tab, acc, i, n = _head(b, 6)
    a, q, rem, val = b.xt(), b.xt(), b.xt(), b.xt()
    signed = shape.random() < 0.4
    reg = w if signed else x
    loop, start = b.new_label(), len(b)
    b.place(loop)
    b.emit(f"ldr {reg(a)}, [{x(p)}, {x(i)}, lsl #{2 if signed else 3}]", "load", r(a), r(p, i),
           fx=_hit(b))
    ev = b.emit(f"{'sdiv' if signed else 'udiv'} {reg(q)}, {reg(a)}, {reg(d)}", "div",
                r(q), r(a, d), fx=fx)
    b.emit(f"msub {reg(rem)}, {reg(q)}, {reg(d)}, {reg(a)}", "mul", r(rem), r(q, d, a))
    idx = f"{w(rem)}, sxtw #3" if signed else f"{x(rem)}, lsl #3"
    b.emit(f"ldr {x(val)}, [{x(tab)}, {idx}]", "load", r(val), r(tab, rem), fx=_hit(b))
    b.emit(f"add {x(acc)}, {x(acc)}, {x(val)}", "alu", r(acc), r(acc, val))
    _loop_end(b, loop, i, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"{a.asm} feeds the remainder and the table index: "
                    + ("its consumer waits for it to issue (no complete stage)" if alt else
                       f"execute latency {a.execute:.0f} cycles") + " on the loop's critical path")
    else:
        def what(a: Agg) -> str:
            return (f"same {a.mnemonic}/msub shape with small operands"
                    + ("" if alt else f": {a.execute:.1f} cycles"))
    return Kernel(ev, tuple(range(start, len(b))), what)


def store_forwarding(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    src, tmp, acc, i, n = _head(b, 5)
    a, out = b.xt(), b.xt()
    off = b.choice((8, 0x10, 0x18, 0x20, 0x28))
    if bad:
        fx = Effect(l1d=u(0.0, 0.002), l2=0.0, llc=0.0, tlb=0.0, forwarded=u(0.0, 0.06),
                    latency=u(14.0, 24.0))
    else:
        fx = Effect(l1d=u(0.0, 0.002), l2=0.0, llc=0.0, tlb=0.0, forwarded=u(0.9, 0.99),
                    latency=u(4.5, 5.5))
    if alt:  # no forwarding counter: the latency of an L1-hitting load carries it
        fx = replace(fx, unreported=("store_forwarded", "avg_latency"))
    narrow = w if bad else x  # a 32-bit store under a 64-bit load cannot forward
    loop, start = b.new_label(), len(b)
    b.place(loop)
    b.emit(f"ldr {narrow(a)}, [{x(src)}, {x(i)}, lsl #{2 if bad else 3}]", "load", r(a),
           r(src, i), fx=_hit(b))
    b.emit(f"str {narrow(a)}, [{x(tmp)}, {imm(off)}]", "store", (), r(a, tmp),
           fx=Effect(l1d=0.0, l2=0.0, llc=0.0, tlb=0.0, latency=1.0))
    ev = b.emit(f"ldr {x(out)}, [{x(tmp)}, {imm(off)}]", "load", r(out), r(tmp, a), fx=fx)
    b.emit(f"add {x(acc)}, {x(acc)}, {x(out)}", "alu", r(acc), r(acc, out))
    _loop_end(b, loop, i, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"{a.asm} reads 8 bytes just written by a 4-byte store: "
                    + ("" if alt else f"forwarded {a.forward_rate:.0%}, avg ")
                    + f"latency {a.latency:.0f} cycles")
    else:
        def what(a: Agg) -> str:
            return (f"same store-then-load ({a.asm}) with matching widths: "
                    + ("" if alt else f"forwarded {a.forward_rate:.0%}, ")
                    + f"{'' if alt else 'avg '}latency {a.latency:.1f}")
    return Kernel(ev, tuple(range(start, len(b))), what)


def spin_wait(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    u = b.rng.uniform
    locks, i, n = _head(b, 3)
    lk, val, one, old, d = b.xt(), b.xt(), b.xt(), b.xt(), b.xt()
    loop, spin, acq, start = b.new_label(), b.new_label(), b.new_label(), len(b)
    spins = u(25.0, 150.0) if bad else 1.0 + u(0.005, 0.03)
    poll = (_miss(b, (0.05, 0.2), (0.2, 0.5), (0.0, 0.1), (0.0, 0.001), 12.0, 35.0) if bad
            else _hit(b))
    b.place(loop)
    b.emit(f"ldr {x(lk)}, [{x(locks)}, {x(i)}, lsl #3]", "load", r(lk), r(locks, i), fx=_hit(b))
    b.place(spin)
    b.emit(f"ldr {w(val)}, [{x(lk)}]", "load", r(val), r(lk), freq=spins, fx=poll)
    b.emit(f"cmp {w(val)}, #0", "alu", FLAGS, r(val), freq=spins)
    if bad:
        ev = b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=spin, freq=spins,
                    fx=Effect(taken=1.0 - 1.0 / spins, mispredict=u(0.6, 1.0) / spins))
    else:
        ev = b.emit(f"b.eq {TARGET}", "bcond", (), FLAGS, target=acq, freq=spins,
                    fx=Effect(taken=1.0 / spins, mispredict=u(0.3, 0.8) * (spins - 1.0)))
        b.emit("yield", "hint", freq=spins - 1.0)
        b.emit(f"b {TARGET}", "b", target=spin, freq=spins - 1.0)
    b.place(acq)
    b.emit(f"movz {w(one)}, {himm(1)}", "alu", r(one))
    b.emit(f"swpa {w(one)}, {w(old)}, [{x(lk)}]", "atomic", r(old), r(one, lk),
           fx=Effect(l1d=u(0.0, 0.01), l2=0.0, llc=0.0, tlb=0.0, latency=u(8.0, 14.0)))
    b.emit(f"ldr {x(d)}, [{x(lk)}, #8]", "load", r(d), r(lk), fx=_hit(b))
    b.emit(f"add {x(d)}, {x(d)}, #1", "alu", r(d), r(d))
    b.emit(f"str {x(d)}, [{x(lk)}, #8]", "store", (), r(d, lk),
           fx=Effect(l1d=0.0, l2=0.0, llc=0.0, tlb=0.0, latency=1.0))
    b.emit(f"stlr wzr, [{x(lk)}]", "store", (), r(lk),
           fx=Effect(l1d=0.0, l2=0.0, llc=0.0, tlb=0.0, latency=u(2.0, 4.0)))
    _loop_end(b, loop, i, n, trip)
    body = b.labels[spin], b.labels[acq]  # the poll loop, up to the acquire
    if bad and alt:
        def what(a: Agg) -> str:
            exits = a.executed - a.taken
            polls = f"{a.executed / exits:.0f} polls per" if exits else "no exit seen in the"
            return (f"ldr/cmp/b.ne polling loop with no yield or wfe, its own ALP loop: "
                    f"back-edge taken {a.taken_rate:.1%} = {polls} acquisition")
    elif bad:
        def what(a: Agg) -> str:
            return (f"ldr/cmp/b.ne polling loop with no yield or wfe: {a.per_iteration:.0f} "
                    f"polls per acquisition, back-edge taken {a.taken_rate:.0%}")
    else:
        def what(a: Agg) -> str:
            return (f"polling loop with yield backoff that rarely spins: "
                    f"{a.per_iteration:.2f} polls per "
                    + ("poll-loop iteration (its own ALP loop)" if alt else "acquisition"))
    return Kernel(ev, tuple(range(start, len(b))), what,
                  inner=(*body, spins) if alt else None)


def tlb_miss(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    fx = (_miss(b, (0.5, 0.9), (0.3, 0.6), (0.1, 0.4), (0.25, 0.6), 40.0, 150.0) if bad
          else _hit(b))
    if alt:
        fx = replace(fx, unreported=_LOAD_ALT)
    acc, n = _head(b, 2)
    val = b.xt()
    loop, start = b.new_label(), len(b)
    if shape.random() < 0.5:
        p, stride = _head(b, 2)
        b.place(loop)
        ev = b.emit(f"ldr {x(val)}, [{x(p)}]", "load", r(val), r(p), fx=fx)
        b.emit(f"add {x(p)}, {x(p)}, {x(stride)}", "alu", r(p), r(p, stride))
    else:
        base, i = _head(b, 2)
        o = b.xt()
        b.place(loop)
        b.emit(f"lsl {x(o)}, {x(i)}, {imm(b.choice((12, 13, 14)))}", "alu", r(o), r(i))
        ev = b.emit(f"ldr {x(val)}, [{x(base)}, {x(o)}]", "load", r(val), r(base, o), fx=fx)
        b.emit(f"add {x(i)}, {x(i)}, #1", "alu", r(i), r(i))
    b.emit(f"add {x(acc)}, {x(acc)}, {x(val)}", "alu", r(acc), r(acc, val))
    _count_end(b, loop, n, trip)
    if bad:
        def what(a: Agg) -> str:
            return (f"page-strided walk ({a.asm}): DTLB misses on {a.tlb_rate:.0%} of "
                    f"accesses, avg latency {a.latency:.0f} cycles")
    else:
        def what(a: Agg) -> str:
            return (f"same strided walk ({a.asm}) within a few pages: DTLB misses "
                    f"{a.tlb_rate:.2%}")
    return Kernel(ev, tuple(range(start, len(b))), what)


def fp_dependency(b: Builder, bad: bool, trip: float, shape: Random, alt: bool) -> Kernel:
    xp, yp, n = _head(b, 3)
    a = [b.vt() for _ in range(4)]
    c = [b.vt() for _ in range(4)]
    accs = [b.vt()] * 4 if bad else [b.vt() for _ in range(4)]
    loop, start = b.new_label(), len(b)
    b.place(loop)
    for k in (0, 2):
        b.emit(f"ldp d{a[k]}, d{a[k + 1]}, [{x(xp)}], #0x10", "load", v(a[k], a[k + 1]),
               r(xp), wb=r(xp), fx=_hit(b))
        b.emit(f"ldp d{c[k]}, d{c[k + 1]}, [{x(yp)}], #0x10", "load", v(c[k], c[k + 1]),
               r(yp), wb=r(yp), fx=_hit(b))
    ev = -1
    for k in range(4):
        ev = b.emit(f"fmadd d{accs[k]}, d{a[k]}, d{c[k]}, d{accs[k]}", "fma", v(accs[k]),
                    v(a[k], c[k], accs[k]),
                    fx=Effect(late=v(a[k], c[k], accs[k])) if alt else None)
    _count_end(b, loop, n, trip, 4)
    if bad:
        def what(a: Agg) -> str:
            return ("four fmadd into one accumulator: each waits for the previous, "
                    + (f"execute latency {a.execute:.0f} cycles (inputs waited for in execution)"
                       if alt else f"issue wait {a.issue_wait:.0f} cycles") + f" at {a.asm}")
    else:
        def what(a: Agg) -> str:
            return ("same unrolled fmadd loop with four independent accumulators: "
                    + (f"execute latency {a.execute:.1f}" if alt else
                       f"issue wait {a.issue_wait:.1f}") + " cycles")
    return Kernel(ev, tuple(range(start, len(b))), what)


KERNELS: dict[str, Callable[[Builder, bool, float, Random, bool], Kernel]] = {
    "indirect-branch": indirect_branch,
    "branch-mispredict": branch_mispredict,
    "dependent-load": dependent_load,
    "cache-miss": cache_miss,
    "atomic-llsc": atomic_llsc,
    "atomic-contention": atomic_contention,
    "barrier": barrier,
    "division": division,
    "store-forwarding": store_forwarding,
    "spin-wait": spin_wait,
    "tlb-miss": tlb_miss,
    "fp-dependency": fp_dependency,
}
