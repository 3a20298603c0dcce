"""The plan of a sample, made one block of at most BLOCK_WINDOWS windows at a time.

A block's plan holds its modules' functions, windows, addresses, weights and hot set, all
decided before any of its rows is written, so the writer streams window by window. Big
samples (`--scale`) are a sequence of blocks, each planned, written and dropped, so memory
does not grow with the size asked; what one block hands the next is a few numbers per
module (`Carry`). A sample of at most BLOCK_WINDOWS windows (every bundled one) is one
block, planned over all its windows at once.

Across blocks: each module stays one contiguous range of addresses (a first pass lays out
the later blocks to learn how much room each module needs), weights and ALP tokens are
shared out by window count, and the hot set (which windows get ALP records) is the 90%
coverage set of each block. Planted windows and their look-alikes are all in block 0.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from pcscope.core.errors import UsageError
from pcscope.samples.compose import KERNEL_MIN
from pcscope.samples.kinds import KindSpec

BLOCK_WINDOWS = 4096
COVERAGE = 0.90
DERIVED_GAP = 68          # > 64 bytes: derivation starts a new window (docs/formats.md §1)
EXTRA_LOOP_SHARE = 0.6    # share of a window's PCs an extra loop region covers
PLT_ROWS_MAX = 96         # 24 stubs of 4 instructions


@dataclass(slots=True)
class FunctionPlan:
    name: str      # "" = no function known
    module: int
    entry: int = 0
    value: int = 0


@dataclass(slots=True)
class WindowPlan:
    module: int
    rows: int                 # rows in the profile
    omitted: int = 0          # further instructions present in the code, absent from it
    function: int = -1
    first_pc: int = 0
    value: int = 0            # sum of the weight column (cycles or samples)
    kernel: str | None = None
    bad: bool = False         # planted (True) or look-alike (False), for kernel windows
    plt: bool = False
    label: str | None = None
    hot: bool = False
    loops: int = 0            # ALP loop regions; 0 = no ALP records

    @property
    def n(self) -> int:
        return self.rows + self.omitted


@dataclass
class Plan:
    """One block of a sample."""

    spec: KindSpec
    seed: int
    modules: list[str]
    functions: list[FunctionPlan]
    windows: list[WindowPlan]
    calls: list[tuple[int, ...]]          # per module: addresses a `bl` may target
    got: list[int] = field(default_factory=list)  # GOT slot address of each PLT stub
    order: list[int] = field(default_factory=list)  # generation order of windows
    hot: list[int] = field(default_factory=list)    # hot windows, descending weight
    first: int = 0            # index of the block's first window in the whole sample
    sample_windows: int = 0   # windows in the whole sample

    @property
    def total(self) -> int:
        return sum(w.value for w in self.windows)

    @property
    def rows(self) -> int:
        return sum(w.rows for w in self.windows)


@dataclass
class Carry:
    """What one block hands the next."""

    pools: list[list[str] | None]          # per module: symbol names not yet used
    cursors: list[int] = field(default_factory=list)  # per module: end of its code so far
    plt_calls: tuple[int, ...] = ()        # the main binary's PLT stubs (block 0 has them)
    hidden: int = 0                        # <unknown_N> names given so far
    records: float = 0.0                   # ALP records planned so far (estimated)


def plan_blocks(spec: KindSpec, seed: int, windows: int | None = None,
                rows: int | None = None, alp_tokens: int | None = None) -> Iterator[Plan]:
    """The sample's plan, block by block (write each before asking for the next)."""
    count = windows or (_default_windows(spec, rows) if rows else spec.windows)
    least = 8 * len(spec.categories) + 30  # kernel pairs amid enough background
    if count < least:
        raise UsageError(f"--windows {count} is too few for kind {spec.name} "
                         f"(needs at least {least})")
    sizes = split(count, [1] * -(-count // BLOCK_WINDOWS))
    block_rows = _block_rows(spec, rows, sizes) if rows is not None else [None] * len(sizes)
    totals = split(spec.total, sizes)
    tokens = split(alp_tokens, sizes) if alp_tokens is not None else None
    later = [_spans(spec, seed, k, sizes[k], block_rows[k]) for k in range(1, len(sizes))]
    carry = Carry([None] * len(spec.modules))
    first, wanted = 0, 0.0
    for k, size in enumerate(sizes):
        plan = Plan(spec, seed, [m.name for m in spec.modules], [], [], [], first=first,
                    sample_windows=count)
        records = None
        if tokens is not None:  # ALP records; what earlier blocks took over or under counts
            wanted += 4 * tokens[k] / spec.record_chars
            records = wanted - carry.records
        _block(plan, _rng(spec, seed, k), k, size, block_rows[k], totals[k], records, carry,
               later)
        yield plan
        first += size


def _block_rows(spec: KindSpec, rows: int, sizes: list[int]) -> list[int]:
    """Every window needs 3 rows; block 0 also holds the planted, look-alike and PLT
    windows, which need more. What is left over is shared out by window count."""
    count = sum(sizes)
    kernels = 2 * len(spec.categories)
    reserve = (KERNEL_MIN + 10) * kernels + PLT_ROWS_MAX
    need = 3 * (count - kernels) + reserve
    if rows < need:
        raise UsageError(f"--scale {rows:,} is too few rows for {count:,} windows: give at "
                         f"least {need:,} (3 rows a window, up to {KERNEL_MIN + 10} for each "
                         f"of the {kernels} planted and look-alike windows) or fewer --windows")
    out = [3 * n + extra for n, extra in zip(sizes, split(rows - need, sizes), strict=True)]
    out[0] += reserve - 3 * kernels  # block 0's bigger windows
    return out


def split(total: int, parts: list[int]) -> list[int]:
    """`total` shared out in proportion to `parts`, exactly (cumulative rounding down)."""
    whole, out, acc, prev = sum(parts), [], 0, 0
    for p in parts:
        acc += p
        cur = total * acc // whole
        out.append(cur - prev)
        prev = cur
    return out


def _rng(spec: KindSpec, seed: int, block: int) -> random.Random:
    suffix = "" if block == 0 else f":{block}"
    return random.Random(f"pcscope-sample:{spec.name}:{seed}:plan{suffix}")


def _block(plan: Plan, rng: random.Random, k: int, size: int, rows: int | None, total: int,
           records: float | None, carry: Carry, later: list[list[int]]) -> None:
    spec = plan.spec
    kernels = [(c, bad) for c in spec.categories for bad in (True, False)] if k == 0 else []
    _windows(plan, rng, size, kernels, rows, plt=k == 0)
    _functions(plan, rng, carry.pools)
    if k == 0:
        carry.cursors = _addresses(plan, rng, later)
        carry.plt_calls = _plt(plan, rng)
    else:
        carry.cursors = _continue(plan, rng, carry.cursors, carry.plt_calls)
    _values(plan, rng, total)
    carry.hidden = _name_hidden(plan, carry.hidden)
    carry.records += _alp_loops(plan, rng, records)
    plan.order = sorted(range(len(plan.windows)), key=lambda i: plan.windows[i].first_pc)
    if spec.shuffle_rows:
        rng.shuffle(plan.order)
    if spec.labels:
        numbers = list(range(plan.first + 1, plan.first + len(plan.windows) + 1))
        rng.shuffle(numbers)
        for w, number in zip(plan.windows, numbers, strict=True):
            w.label = f"w{number}"


def _spans(spec: KindSpec, seed: int, k: int, size: int, rows: int | None) -> list[int]:
    """First pass over a later block: the bytes of code each module's part of it takes
    (the same draws as its real planning, laid out from address 0)."""
    plan = Plan(spec, seed, [m.name for m in spec.modules], [], [], [])
    rng = _rng(spec, seed, k)
    _windows(plan, rng, size, [], rows, plt=False)
    _functions(plan, rng, [[] for _ in spec.modules])
    return _continue(plan, rng, [0] * len(spec.modules), ())


def _default_windows(spec: KindSpec, rows: int) -> int:
    mean = spec.rows_median * math.exp(spec.rows_sigma ** 2 / 2)
    return max(1, round(rows / mean))


def _draw_rows(spec: KindSpec, rng: random.Random) -> int:
    n = round(spec.rows_median * math.exp(rng.gauss(0.0, spec.rows_sigma)))
    return max(3, min(spec.rows_max, n))


def _windows(plan: Plan, rng: random.Random, count: int, kernels: list[tuple[str, bool]],
             rows: int | None, plt: bool) -> None:
    spec = plan.spec
    shares = [m.share for m in spec.modules]
    main = next((i for i, m in enumerate(spec.modules) if m.plt), None)
    fixed: list[WindowPlan] = []
    if plt and main is not None:
        fixed.append(WindowPlan(main, 4 * rng.randint(8, PLT_ROWS_MAX // 4), plt=True))
    for cat, bad in kernels:
        mod = rng.choices(range(len(shares)), shares)[0]
        fixed.append(WindowPlan(mod, rng.randint(KERNEL_MIN, KERNEL_MIN + 10), kernel=cat,
                                bad=bad))
    free = [WindowPlan(rng.choices(range(len(shares)), shares)[0], _draw_rows(spec, rng))
            for _ in range(count - len(fixed))]
    if rows is not None:
        _fit_rows(free, rows - sum(w.rows for w in fixed), rng)
    for w in free:
        if spec.omit and w.rows >= 8 and rng.random() < spec.omit:
            w.omitted = rng.randint(1, 2)
    plan.windows = free + fixed
    rng.shuffle(plan.windows)


def _fit_rows(free: list[WindowPlan], target: int, rng: random.Random) -> None:
    """Scale the drawn sizes so the profile has exactly `target` rows."""
    if target < 3 * len(free):
        raise UsageError(f"--scale leaves {max(target, 0)} rows for {len(free)} windows "
                         "(at least 3 each): give fewer --windows or more rows")
    scale = target / sum(w.rows for w in free)
    for w in free:
        w.rows = max(3, round(w.rows * scale))
    diff = target - sum(w.rows for w in free)
    step = 1 if diff > 0 else -1
    while diff:
        w = free[rng.randrange(len(free))]
        if w.rows + step >= 3:
            w.rows += step
            diff -= step


def _functions(plan: Plan, rng: random.Random, pools: list[list[str] | None]) -> None:
    """Group each module's windows into functions and name them (hidden names later),
    taking names from `pools` (made here on first use) so no block reuses another's."""
    spec = plan.spec
    for m, mod in enumerate(spec.modules):
        if pools[m] is None:
            pools[m] = _name_pool(mod.names, rng)
        names = pools[m]
        members = [w for w in plan.windows if w.module == m and not w.plt]
        for w in plan.windows:
            if w.module == m and w.plt:
                w.function = len(plan.functions)
                plan.functions.append(FunctionPlan("<unknown>", m))
        k = 0
        while k < len(members):
            size = min(12, 1 + int(rng.expovariate(0.6)))
            roll = rng.random()
            if roll < mod.blank:
                name = ""
            elif roll < mod.blank + mod.hidden or not names:
                name = "<unknown>"
            else:
                name = names.pop()
            for w in members[k:k + size]:
                w.function = len(plan.functions)
            plan.functions.append(FunctionPlan(name, m))
            k += size


def _name_pool(names: tuple[str, ...], rng: random.Random) -> list[str]:
    """Symbol names, then compiler clones of them (GCC's .constprop/.isra/.part)."""
    pool = list(names)
    rng.shuffle(pool)
    clones = []
    for suffix in (".constprop.0", ".isra.0", ".part.0"):
        for name in names:
            clones.append(f"{name} [clone {suffix}]" if "(" in name else f"{name}{suffix}")
    rng.shuffle(clones)
    return clones + pool  # pop() takes plain names first


@dataclass
class _Regions:
    """Where modules are mapped: a Linux arm64 PIE layout or the qemu-user one of the real
    corpus. Libraries are stacked upwards from `lib`, each above the previous one's end."""

    main: int
    jit: int
    lib: int

    @classmethod
    def draw(cls, rng: random.Random) -> _Regions:
        if rng.random() < 0.6:
            return cls(main=0xAAAA_0000_0000 + rng.randrange(0x100, 0x1FFF) * 0x100000,
                       jit=0xFFFF_4000_0000 + rng.randrange(0x10, 0x1FF) * 0x100000,
                       lib=0xFFFF_9000_0000 + rng.randrange(0x10, 0x200) * 0x100000)
        return cls(main=0x55_0000_0000,
                   jit=0x40_0000_0000 + rng.randrange(0x10, 0xFFF) * 0x100000,
                   lib=0x55_0280_0000 + rng.randrange(0, 0x40) * 0x100000)


_MB = 0x100000


def _addresses(plan: Plan, rng: random.Random, later: list[list[int]]) -> list[int]:
    """Map block 0's modules, leaving each room for its code in `later` blocks; returns
    where each module's code of block 0 ends."""
    spec = plan.spec
    by_function = _by_function(plan)
    regions = _Regions.draw(rng)
    main_below_libs = regions.main < regions.lib
    plan.calls = [() for _ in spec.modules]
    ends = [0] * len(spec.modules)
    for m in _module_order(spec):
        role = spec.modules[m].role
        base = {"main": regions.main, "jit": regions.jit}.get(role, regions.lib)
        if role == "lib" and main_below_libs:
            base = max(base, regions.main)  # a large main binary pushes libraries up
        funcs = _functions_of(plan, m, by_function, rng)
        start = base + rng.randrange(0x10, 0x400) * 0x100
        ends[m] = _lay_out(plan, rng, funcs, by_function, start)
        cursor = ends[m]
        for spans in later:
            cursor = _align(cursor) + spans[m]
        end = (cursor + _MB - 1) // _MB * _MB
        if role == "main":
            regions.main = end
        elif role == "lib":
            regions.lib = end + rng.randrange(2, 64) * _MB
        plan.calls[m] = tuple(plan.functions[f].entry for f in funcs)
    return ends


def _continue(plan: Plan, rng: random.Random, cursors: list[int],
              plt_calls: tuple[int, ...]) -> list[int]:
    """Lay out a later block's code of each module after the previous block's; returns
    where each module's code now ends."""
    spec = plan.spec
    by_function = _by_function(plan)
    plan.calls = [() for _ in spec.modules]
    ends = list(cursors)
    for m in _module_order(spec):
        funcs = _functions_of(plan, m, by_function, rng)
        ends[m] = _lay_out(plan, rng, funcs, by_function, _align(cursors[m]))
        stubs = plt_calls if spec.modules[m].plt else ()
        plan.calls[m] = tuple(plan.functions[f].entry for f in funcs) + stubs
    return ends


def _module_order(spec: KindSpec) -> list[int]:
    roles = {"main": 0, "jit": 1, "lib": 2}
    return sorted(range(len(spec.modules)), key=lambda m: roles[spec.modules[m].role])


def _by_function(plan: Plan) -> list[list[WindowPlan]]:
    by_function: list[list[WindowPlan]] = [[] for _ in plan.functions]
    for w in plan.windows:
        by_function[w.function].append(w)
    return by_function


def _functions_of(plan: Plan, m: int, by_function: list[list[WindowPlan]],
                  rng: random.Random) -> list[int]:
    """Module m's functions in address order: shuffled, the PLT first."""
    funcs = [f for f, fp in enumerate(plan.functions) if fp.module == m]
    rng.shuffle(funcs)
    funcs.sort(key=lambda f: not by_function[f][0].plt)
    return funcs


def _lay_out(plan: Plan, rng: random.Random, funcs: list[int],
             by_function: list[list[WindowPlan]], cursor: int) -> int:
    """Functions one after another from `cursor`; returns where the last one ends."""
    labels = plan.spec.labels
    for f in funcs:
        cursor = _align(cursor)
        plan.functions[f].entry = cursor
        cursor += 4 * rng.choice((0, 0, 0, rng.randrange(1, 32)))
        for w in by_function[f]:
            if rng.random() < 0.3:
                cursor = _align(cursor)  # loop heads are often aligned
            w.first_pc = cursor
            cursor += 4 * w.n + _window_gap(labels, rng)
        cursor += _window_gap(labels, rng) + 4 * rng.randrange(0, 64)
    return cursor


def _align(address: int) -> int:
    return (address + 15) & ~15


def _window_gap(labels: bool, rng: random.Random) -> int:
    """Bytes of unsampled code after a window; derived windows need more than 64."""
    if labels:
        return 0 if rng.random() < 0.25 else 4 * rng.randrange(1, 120)
    return DERIVED_GAP + 4 * rng.randrange(0, 120)


def _plt(plan: Plan, rng: random.Random) -> tuple[int, ...]:
    """The main binary's PLT: its stubs become extra call targets of that module (of
    every block: the addresses are returned)."""
    for w in plan.windows:
        if not w.plt:
            continue
        stubs = w.n // 4
        got = ((w.first_pc + 0x1F000) & ~0xFFF) + rng.randrange(0, 4) * 0x1000
        off = rng.randrange(0x100, 0xD00) // 8 * 8
        plan.got = [got + off + 8 * k for k in range(stubs)]
        addrs = tuple(w.first_pc + 16 * k for k in range(stubs))
        plan.calls[w.module] = plan.calls[w.module] + addrs
        return addrs
    return ()


def _values(plan: Plan, rng: random.Random, total: int) -> None:
    """Heavy-tailed window weights summing to about `total`; planted windows and
    look-alikes hot and alike."""
    ws = plan.windows
    pairs: dict[str, list[int]] = {}
    for i, w in enumerate(ws):
        if w.kernel:
            pairs.setdefault(w.kernel, []).append(i)
    for _attempt in range(8):  # a rare draw crowds kernels out of the hot set: redraw
        if _draw_values(plan, pairs, total, rng):
            for i in plan.hot:
                ws[i].hot = True
            return
    raise UsageError(f"kind {plan.spec.name}: too few --windows ({len(ws)}) for every "
                     "planted window to be hot")


def _draw_values(plan: Plan, pairs: dict[str, list[int]], total: int,
                 rng: random.Random) -> bool:
    spec, ws = plan.spec, plan.windows
    draws = [rng.lognormvariate(0.0, spec.sigma) for _ in ws]
    scale = total / sum(draws)
    floor = 0 if spec.zero_rows else 1
    drawn = [max(floor * w.rows, round(d * scale)) for w, d in zip(ws, draws, strict=True)]
    for w, value in zip(ws, drawn, strict=True):
        w.value = value
    # Kernels take ranks in the hottest part of the distribution; when that leaves one
    # outside the hot set, in an ever hotter part.
    span = int(0.45 * len(hot_windows(ws)))
    while True:
        for w, value in zip(ws, drawn, strict=True):
            w.value = value
        _place_kernels(ws, pairs, max(span, len(pairs)), rng)
        plan.hot = hot_windows(ws)
        hot = set(plan.hot)
        if all(i in hot for m in pairs.values() for i in m):
            return True
        if span <= len(pairs):
            return False
        span //= 2


def _place_kernels(ws: list[WindowPlan], pairs: dict[str, list[int]], span: int,
                   rng: random.Random) -> None:
    # Donors: heavy background windows, but none that alone holds a big share (a pair
    # taking two such weights would crowd the other kernels out of the hot set).
    cap = 0.04 * sum(w.value for w in ws)
    others = sorted((i for i, w in enumerate(ws) if not w.kernel and w.value <= cap),
                    key=lambda i: -ws[i].value)
    ranks = rng.sample(range(min(span, len(others))), len(pairs))
    for (_cat, members), rank in zip(sorted(pairs.items()), ranks, strict=True):
        # The pair takes (about) the weight of a hot background window, which takes the
        # planted window's drawn weight instead: the distribution keeps its shape.
        donor = others[rank]
        base = ws[donor].value
        ws[donor].value = ws[members[0]].value
        for i in members:
            ws[i].value = max(ws[i].rows, round(base * rng.uniform(0.9, 1.1)))


def hot_windows(ws: list[WindowPlan], coverage: float = COVERAGE) -> list[int]:
    """docs/formats.md §1: by weight desc (ties: lower first PC) until `coverage` is reached."""
    total = sum(w.value for w in ws)
    order = sorted(range(len(ws)), key=lambda i: (-ws[i].value, ws[i].first_pc))
    hot, acc = [], 0
    for i in order:
        hot.append(i)
        acc += ws[i].value
        if acc >= coverage * total:
            break
    return hot


def _name_hidden(plan: Plan, named: int) -> int:
    """<unknown_N> numbered by descending function weight, as in the real corpus (within
    a block, after the `named` of earlier blocks); returns the names given so far."""
    for w in plan.windows:
        plan.functions[w.function].value += w.value
    hidden = [f for f in plan.functions if f.name == "<unknown>"]
    hidden.sort(key=lambda f: (-f.value, f.entry))
    for k, f in enumerate(hidden, named + 1):
        f.name = f"<unknown_{k:02d}>"
    return named + len(hidden)


def _alp_loops(plan: Plan, rng: random.Random, need: float | None) -> float:
    """Loop regions per hot window; with a target of `need` ALP records, more or fewer to
    match it. Returns the records planned."""
    ws = plan.windows
    for i in plan.hot:
        ws[i].loops = rng.choices((1, 2, 3), (0.65, 0.25, 0.10))[0]

    def records(w: WindowPlan) -> float:
        return w.n * (1 + EXTRA_LOOP_SHARE * (w.loops - 1)) if w.loops else 0.0
    if need is not None:
        _fit_loops(plan, rng, need, records)
    return sum(records(ws[i]) for i in plan.hot)


def _fit_loops(plan: Plan, rng: random.Random, need: float,
               records: Callable[[WindowPlan], float]) -> None:
    ws = plan.windows
    have = sum(records(ws[i]) for i in plan.hot)
    if have > need:
        kept = 0.0
        for i in sorted(plan.hot, key=lambda i: (ws[i].kernel is None, -ws[i].value)):
            if kept >= need and ws[i].kernel is None:  # kernels always keep their evidence
                ws[i].loops = 0
            kept += records(ws[i])
        return
    extra = (need - have) / (EXTRA_LOOP_SHARE * sum(ws[i].n for i in plan.hot))
    for i in plan.hot:
        ws[i].loops += int(extra) + (rng.random() < extra - int(extra))
