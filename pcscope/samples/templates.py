"""Background code: small AArch64 idioms that windows are composed of.

Each template emits a few instructions into a Builder. Templates read ``b.idx`` (the
loop index register, or None) so indexed addressing follows the enclosing loop. The
names are what kinds.py mixes; none of them plants an issue (their simulated behaviour is
the workload's background, drawn in alpgen.py).
"""

from __future__ import annotations

from collections.abc import Callable

from pcscope.samples.codegen import (
    FLAGS,
    SP,
    TARGET,
    ZR,
    Builder,
    Effect,
    himm,
    imm,
    mem,
    r,
    v,
    w,
    x,
)

COND = ("eq", "ne", "lo", "hs", "lt", "ge", "gt", "le", "hi", "ls")


def _index(b: Builder) -> int:
    return b.idx if b.idx is not None else b.xt()


def field_update(b: Builder) -> None:
    o, a = b.xt(), b.xt()
    off = b.off(4, 0x80)
    b.emit(f"ldr {w(a)}, {mem(x(o), off)}", "load", r(a), r(o))
    b.emit(f"add {w(a)}, {w(a)}, #1", "alu", r(a), r(a))
    b.emit(f"str {w(a)}, {mem(x(o), off)}", "store", (), r(a, o))


def array_sum(b: Builder) -> None:
    base, val, acc, i = b.xt(), b.xt(), b.xt(), _index(b)
    b.emit(f"ldr {x(val)}, [{x(base)}, {x(i)}, lsl #3]", "load", r(val), r(base, i))
    b.emit(f"add {x(acc)}, {x(acc)}, {x(val)}", "alu", r(acc), r(acc, val))


def byte_scan(b: Builder) -> None:
    p, c, a = b.xt(), b.xt(), b.xt()
    ch = b.choice((0x2f, 0x0a, 0x2c, 0x3a, 0x20, 0x3d))
    b.emit(f"ldrb {w(c)}, [{x(p)}], #1", "load", r(c), r(p), wb=r(p))
    b.emit(f"cmp {w(c)}, {imm(ch)}", "alu", FLAGS, r(c))
    b.emit(f"csel {x(a)}, {x(p)}, {x(a)}, eq", "alu", r(a), r(p, a) + FLAGS)


def memcpy_simd(b: Builder) -> None:
    src, dst, q0, q1 = b.xt(), b.xt(), b.vt(), b.vt()
    b.emit(f"ldp q{q0}, q{q1}, [{x(src)}], #0x20", "load", v(q0, q1), r(src), wb=r(src))
    b.emit(f"stp q{q0}, q{q1}, [{x(dst)}], #0x20", "store", (), v(q0, q1) + r(dst), wb=r(dst))


def call_site(b: Builder) -> None:
    a = b.xs()
    b.emit(f"mov x0, {x(a)}", "alu", r(0), r(a))
    if b.rng.random() < 0.5:
        c = b.xs()
        b.emit(f"mov x1, {x(c)}", "alu", r(1), r(c))
    b.emit(f"bl #0x{b.call_target():x}", "bl", r(0, 1, 30), r(0, 1) + SP)
    if b.rng.random() < 0.5:
        skip = b.new_label()
        b.emit(f"cbz x0, {TARGET}", "bcond", (), r(0), target=skip)
        b.emit(f"mov {x(a)}, x0", "alu", r(a), r(0))
        b.place(skip)
    else:
        b.emit(f"mov {x(a)}, x0", "alu", r(a), r(0))


def hash_mix(b: Builder) -> None:
    h, k, t = b.xt(), b.xt(), b.xt()
    s1, s2 = b.choice((33, 29, 31, 27)), b.choice((15, 17, 13))
    b.emit(f"eor {x(h)}, {x(h)}, {x(h)}, lsr {imm(s1)}", "alu", r(h), r(h))
    b.emit(f"mul {x(h)}, {x(h)}, {x(k)}", "mul", r(h), r(h, k))
    b.emit(f"lsr {x(t)}, {x(h)}, {imm(s2)}", "alu", r(t), r(h))
    b.emit(f"eor {x(h)}, {x(h)}, {x(t)}", "alu", r(h), r(h, t))


def simd_fma(b: Builder) -> None:
    p, a, acc, c = b.xt(), b.vt(), b.vt(), b.vt()
    lanes = b.choice(("4s", "2d"))
    if b.rng.random() < 0.6:
        b.emit(f"ld1 {{v{a}.{lanes}}}, [{x(p)}], #0x10", "load", v(a), r(p), wb=r(p))
    else:
        b.emit(f"ld1 {{v{a}.{lanes}}}, [{x(p)}]", "load", v(a), r(p))
    b.emit(f"fmla v{acc}.{lanes}, v{a}.{lanes}, v{c}.{lanes}", "fma", v(acc), v(acc, a, c))


def fp_scalar(b: Builder) -> None:
    p, i, a, s, acc = b.xt(), _index(b), b.vt(), b.vt(), b.vt()
    b.emit(f"ldr d{a}, [{x(p)}, {x(i)}, lsl #3]", "load", v(a), r(p, i))
    b.emit(f"fmul d{a}, d{a}, d{s}", "fmul", v(a), v(a, s))
    b.emit(f"fadd d{acc}, d{acc}, d{a}", "fadd", v(acc), v(acc, a))


def crc_block(b: Builder) -> None:
    p, val, c = b.xt(), b.xt(), b.xt()
    b.emit(f"ldr {x(val)}, [{x(p)}], #8", "load", r(val), r(p), wb=r(p))
    b.emit(f"crc32cx {w(c)}, {w(c)}, {x(val)}", "crc", r(c), r(c, val))


def bitfield(b: Builder) -> None:
    a, s, t = b.xt(), b.xt(), b.xt()
    lsb, width = b.rng.randrange(0, 24), b.choice((4, 8, 12, 16))
    b.emit(f"ubfx {x(a)}, {x(s)}, {imm(lsb)}, {imm(width)}", "alu", r(a), r(s))
    b.emit(f"lsl {w(t)}, {w(a)}, {imm(b.choice((2, 3, 4)))}", "alu", r(t), r(a))
    b.emit(f"orr {x(s)}, {x(s)}, {x(t)}", "alu", r(s), r(s, t))
    skip = b.new_label()
    b.emit(f"tbnz {w(a)}, {imm(b.rng.randrange(0, 8))}, {TARGET}", "bcond", (), r(a),
           target=skip)
    b.emit(f"add {w(t)}, {w(t)}, {imm(b.choice((1, 2, 4, 0x10)))}", "alu", r(t), r(t))
    b.place(skip)


def string_cmp(b: Builder) -> None:
    p, q, c1, c2 = b.xt(), b.xt(), b.xt(), b.xt()
    out = b.new_label()
    b.emit(f"ldrb {w(c1)}, [{x(p)}], #1", "load", r(c1), r(p), wb=r(p))
    b.emit(f"ldrb {w(c2)}, [{x(q)}], #1", "load", r(c2), r(q), wb=r(q))
    b.emit(f"cmp {w(c1)}, {w(c2)}", "alu", FLAGS, r(c1, c2))
    b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=out)
    b.emit(f"cbz {w(c1)}, {TARGET}", "bcond", (), r(c1), target=out)
    b.place(out)


def binary_search(b: Builder) -> None:
    lo, hi, m, arr, val, key = (b.xt() for _ in range(6))
    b.emit(f"add {x(m)}, {x(lo)}, {x(hi)}", "alu", r(m), r(lo, hi))
    b.emit(f"lsr {x(m)}, {x(m)}, #1", "alu", r(m), r(m))
    b.emit(f"ldr {x(val)}, [{x(arr)}, {x(m)}, lsl #3]", "load", r(val), r(arr, m))
    b.emit(f"cmp {x(val)}, {x(key)}", "alu", FLAGS, r(val, key))
    b.emit(f"csel {x(lo)}, {x(m)}, {x(lo)}, lo", "alu", r(lo), r(m, lo) + FLAGS)
    b.emit(f"csel {x(hi)}, {x(m)}, {x(hi)}, hs", "alu", r(hi), r(m, hi) + FLAGS)


def hash_probe(b: Builder) -> None:
    h, mask, tab, e, k, key = (b.xt() for _ in range(6))
    out = b.new_label()
    b.emit(f"and {x(e)}, {x(h)}, {x(mask)}", "alu", r(e), r(h, mask))
    b.emit(f"ldr {x(e)}, [{x(tab)}, {x(e)}, lsl #3]", "load", r(e), r(tab, e))
    b.emit(f"cbz {x(e)}, {TARGET}", "bcond", (), r(e), target=out)
    b.emit(f"ldr {x(k)}, [{x(e)}, {imm(b.choice((8, 0x10, 0x18)))}]", "load", r(k), r(e))
    b.emit(f"cmp {x(k)}, {x(key)}", "alu", FLAGS, r(k, key))
    b.emit(f"b.eq {TARGET}", "bcond", (), FLAGS, target=out)
    b.place(out)


def vcall(b: Builder) -> None:
    o, vt, f = b.xs(), b.xt(), b.xt()
    slot = b.choice((0x10, 0x18, 0x20, 0x28, 0x30, 0x48))
    b.emit(f"ldr {x(vt)}, [{x(o)}]", "load", r(vt), r(o))
    b.emit(f"ldr {x(f)}, [{x(vt)}, {imm(slot)}]", "load", r(f), r(vt))
    b.emit(f"mov x0, {x(o)}", "alu", r(0), r(o))
    b.emit(f"blr {x(f)}", "blr", r(0, 30), r(f, 0))


def interp_dispatch(b: Builder) -> None:
    ip, op, tab, t = b.xs(), b.xt(), b.xs(), b.xt()
    b.emit(f"ldrb {w(op)}, [{x(ip)}], #1", "load", r(op), r(ip), wb=r(ip))
    b.emit(f"ldr {x(t)}, [{x(tab)}, {x(op)}, lsl #3]", "load", r(t), r(tab, op))
    b.emit(f"br {x(t)}", "br", (), r(t))


def oop_load(b: Builder) -> None:
    o, n, heap, o2, k, kk = (b.xt() for _ in range(6))
    out = b.new_label()
    b.emit(f"ldr {w(n)}, [{x(o)}, {imm(b.choice((8, 0xc, 0x10, 0x14)))}]", "load", r(n), r(o))
    b.emit(f"add {x(o2)}, {x(heap)}, {w(n)}, uxtw #3", "alu", r(o2), r(heap, n))
    b.emit(f"ldr {w(k)}, [{x(o2)}, #8]", "load", r(k), r(o2))
    b.emit(f"cmp {w(k)}, {w(kk)}", "alu", FLAGS, r(k, kk))
    b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=out)
    b.place(out)


def card_mark(b: Builder) -> None:
    o, c, ct = b.xt(), b.xt(), b.xt()
    b.emit(f"lsr {x(c)}, {x(o)}, #9", "alu", r(c), r(o))
    b.emit(f"strb wzr, [{x(ct)}, {x(c)}]", "store", (), r(ct, c))


def safepoint_poll(b: Builder) -> None:
    p = b.xt()
    out = b.new_label()
    b.emit(f"ldr {x(p)}, [x28, {imm(b.choice((0x20, 0x28, 0x390, 0x3a8)))}]", "load",
           r(p), r(28))
    b.emit(f"tbnz {w(p)}, #0, {TARGET}", "bcond", (), r(p), target=out)
    b.place(out)


def bump_alloc(b: Builder) -> None:
    top, end, n = b.xt(), b.xt(), b.xt()
    off = b.choice((0x58, 0x60, 0x1b0))
    slow = b.new_label()
    b.emit(f"ldp {x(top)}, {x(end)}, [x28, {imm(off)}]", "load", r(top, end), r(28))
    b.emit(f"add {x(n)}, {x(top)}, {imm(b.choice((0x10, 0x18, 0x20, 0x30)))}", "alu",
           r(n), r(top))
    b.emit(f"cmp {x(n)}, {x(end)}", "alu", FLAGS, r(n, end))
    b.emit(f"b.hi {TARGET}", "bcond", (), FLAGS, target=slow)
    b.emit(f"str {x(n)}, [x28, {imm(off)}]", "store", (), r(n, 28))
    b.place(slow)


def lock_fast(b: Builder) -> None:
    """An uncontended mutex fast path as glibc writes it with LSE (casa)."""
    m, z, one = b.xt(), b.xt(), b.xt()
    b.emit(f"movz {w(z)}, #0", "alu", r(z))
    b.emit(f"movz {w(one)}, {himm(1)}", "alu", r(one))
    b.emit(f"casa {w(z)}, {w(one)}, [{x(m)}]", "atomic", r(z), r(z, one, m))
    b.emit(f"cmp {w(z)}, #0", "alu", FLAGS, r(z))


def stack_spill(b: Builder) -> None:
    a, c = b.xt(), b.xt()
    off = b.off(8, 0x60) + 0x10
    b.emit(f"str {x(a)}, [sp, {imm(off)}]", "store", (), r(a) + SP)
    b.emit(f"add {x(c)}, {x(c)}, {x(a)}", "alu", r(c), r(c, a))
    b.emit(f"ldr {x(a)}, [sp, {imm(off)}]", "load", r(a), SP)


def prefetch_stream(b: Builder) -> None:
    p, a, c = b.xt(), b.xt(), b.xt()
    dist = b.choice((0x100, 0x180, 0x200, 0x400))
    b.emit(f"prfm pldl1keep, [{x(p)}, {imm(dist)}]", "prefetch", (), r(p))
    b.emit(f"ldp {x(a)}, {x(c)}, [{x(p)}], #0x10", "load", r(a, c), r(p), wb=r(p))


def const_addr(b: Builder) -> None:
    a, p = b.xt(), b.xt()
    b.emit(f"movz {x(a)}, {himm(b.rng.randrange(1, 0xffff))}", "alu", r(a))
    b.emit(f"movk {x(a)}, {himm(b.rng.randrange(1, 0xffff))}, lsl #16", "alu", r(a), r(a))
    page = (b.call_target() & ~0xfff) + b.rng.randrange(1, 64) * 0x1000
    b.emit(f"adrp {x(p)}, #0x{page:x}", "alu", r(p))
    b.emit(f"add {x(p)}, {x(p)}, {imm(b.off(8, 0x1000))}", "alu", r(p), r(p))


def select_minmax(b: Builder) -> None:
    a, c, d = b.xt(), b.xt(), b.xt()
    b.emit(f"cmp {x(a)}, {x(c)}", "alu", FLAGS, r(a, c))
    b.emit(f"csel {x(d)}, {x(a)}, {x(c)}, {b.choice(COND)}", "alu", r(d), r(a, c) + FLAGS)
    b.emit(f"cset {w(a)}, {b.choice(COND)}", "alu", r(a), FLAGS)


def madd_index(b: Builder) -> None:
    a, c, d, base, val = (b.xt() for _ in range(5))
    b.emit(f"madd {x(a)}, {x(c)}, {x(d)}, {x(a)}", "mul", r(a), r(a, c, d))
    b.emit(f"add {x(base)}, {x(base)}, {x(a)}, lsl #4", "alu", r(base), r(base, a))
    b.emit(f"ldr {w(val)}, [{x(base)}, #4]", "load", r(val), r(base))


def fp_convert(b: Builder) -> None:
    i, d0, d1, o = b.xt(), b.vt(), b.vt(), b.xt()
    b.emit(f"scvtf d{d0}, {x(i)}", "fcvt", v(d0), r(i))
    b.emit(f"fmul d{d0}, d{d0}, d{d1}", "fmul", v(d0), v(d0, d1))
    b.emit(f"fcvtzs {x(o)}, d{d0}", "fcvt", r(o), v(d0))


def pre_index_walk(b: Builder) -> None:
    p, a = b.xt(), b.xt()
    step = b.choice((8, 0x10, 0x18, 0x20))
    b.emit(f"ldr {x(a)}, [{x(p)}, {imm(step)}]!", "load", r(a), r(p), wb=r(p))
    b.emit(f"str {w(ZR)}, [{x(a)}, {imm(b.off(4, 0x40))}]", "store", (), r(a))


TEMPLATES: dict[str, Callable[[Builder], None]] = {
    f.__name__: f
    for f in (
        field_update, array_sum, byte_scan, memcpy_simd, call_site, hash_mix, simd_fma,
        fp_scalar, crc_block, bitfield, string_cmp, binary_search, hash_probe, vcall,
        interp_dispatch, oop_load, card_mark, safepoint_poll, bump_alloc, lock_fast,
        stack_spill, prefetch_stream, const_addr, select_minmax, madd_index, fp_convert,
        pre_index_walk,
    )
}


# --- function entry / exit and loop back-edges ------------------------------------------

def prologue(b: Builder) -> None:
    frame = b.frame = b.choice((0x20, 0x30, 0x40, 0x50, 0x60))
    b.emit(f"stp x29, x30, [sp, {imm(-frame)}]!", "store", (), r(29, 30) + SP, wb=SP)
    b.emit("mov x29, sp", "alu", r(29), SP)
    b.emit("stp x19, x20, [sp, #0x10]", "store", (), r(19, 20) + SP)


def epilogue(b: Builder) -> None:
    """Undoes this window's prologue (or one in an earlier window of the function)."""
    frame = b.frame or b.choice((0x20, 0x30, 0x40, 0x50, 0x60))
    b.emit("ldp x19, x20, [sp, #0x10]", "load", r(19, 20), SP)
    b.emit(f"ldp x29, x30, [sp], {imm(frame)}", "load", r(29, 30), SP, wb=SP)
    b.emit("ret", "ret", (), r(30))


def tail_call(b: Builder) -> None:
    b.emit(f"b #0x{b.call_target():x}", "b")


EDGE_STYLES = ("subs", "cbnz", "cmp")


def edge_len(style: str) -> int:
    return 3 if style == "cmp" else 2


def back_edge(b: Builder, loop: str, taken: float, style: str) -> None:
    """The loop's closing compare-and-branch (on the pinned index register when it has one)."""
    i = b.idx
    fx = Effect(taken=taken)
    if i is None or style == "subs":
        c = b.xt()
        b.emit(f"subs {x(c)}, {x(c)}, #1", "alu", r(c) + FLAGS, r(c))
        b.emit(f"b.ne {TARGET}", "bcond", (), FLAGS, target=loop, fx=fx)
    elif style == "cbnz":
        b.emit(f"sub {x(i)}, {x(i)}, #1", "alu", r(i), r(i))
        b.emit(f"cbnz {x(i)}, {TARGET}", "bcond", (), r(i), target=loop, fx=fx)
    else:
        n = b.limit if b.limit is not None else b.xt()
        b.emit(f"add {x(i)}, {x(i)}, #1", "alu", r(i), r(i))
        b.emit(f"cmp {x(i)}, {x(n)}", "alu", FLAGS, r(i, n))
        b.emit(f"b.{b.choice(('ne', 'lo', 'lt'))} {TARGET}", "bcond", (), FLAGS,
               target=loop, fx=fx)
