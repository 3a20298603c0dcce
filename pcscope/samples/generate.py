"""Generate a synthetic AArch64 workload: profile, raw ALP and ground truth.

    pcscope sample --kind C --seed 3 -o DIR
    pcscope sample --kind A --scale 1000000 -o DIR   # benchmark size

writes DIR/profile.csv.gz (formats.md §1), DIR/alp.jsonl.gz (§2, raw per (loop, PC),
hot windows only), DIR/truth.json (planted issues and their look-alikes, with §4
categories) and DIR/README.md. Output streams window by window and is planned a block of
windows at a time (layout.py), so memory does not grow with the size asked. The same
options give byte-identical files.
"""

from __future__ import annotations

import itertools
import json
import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from pcscope.core.ids import hex_pc, win_id
from pcscope.samples.alpgen import Agg, Loop, record, resolve, schedule
from pcscope.samples.codegen import Insn, final_text
from pcscope.samples.compose import background, kernel_window
from pcscope.samples.kinds import KINDS, KindSpec
from pcscope.samples.layout import EXTRA_LOOP_SHARE, Plan, WindowPlan, plan_blocks
from pcscope.samples.output import output
from pcscope.samples.planted import Kernel

ITERATION_SCALE = 4e7  # ALP iterations of a window holding the whole profile
TOKENS_PER_ROW = 17    # --scale default: 1M rows -> ~17M ALP tokens


@dataclass(frozen=True)
class Options:
    kind: str
    seed: int
    out: Path
    windows: int | None = None
    scale: int | None = None
    alp_tokens: int | None = None


@dataclass(frozen=True)
class Summary:
    out: Path
    windows: int
    rows: int
    hot: int
    alp_records: int
    alp_chars: int
    planted: int
    lookalikes: int
    seconds: float

    def line(self, kind: str, seed: int) -> str:
        return (f"wrote {self.out} (kind {kind}, seed {seed}): {self.windows:,} windows, "
                f"{self.rows:,} rows, {self.hot:,} hot windows, ALP {self.alp_records:,} "
                f"records ~{self.alp_chars // 4:,} tokens, {self.planted} planted + "
                f"{self.lookalikes} look-alikes, {self.seconds:.1f} s")


def cost(ins: Insn) -> float:
    """Relative samples per execution: slow instructions collect more."""
    return 1.0 + 0.05 * min(ins.latency, 100.0)


def csv_field(text: str) -> str:
    if "," in text or '"' in text or "\n" in text:
        return '"' + text.replace('"', '""') + '"'
    return text


def allocate(total: int, weights: list[float], floor: int) -> list[int]:
    """Integers >= floor summing to total, proportional to weights (cumulative rounding:
    each value is the step between rounded running sums, so the total is exact)."""
    rest = total - floor * len(weights)
    scale = rest / (sum(weights) or 1.0)
    out, acc, prev = [], 0.0, 0
    for wt in weights[:-1]:
        acc += wt
        cur = round(acc * scale)
        out.append(floor + cur - prev)
        prev = cur
    out.append(floor + rest - prev)  # the last takes what rounding left: exact total
    return out


class Writer:
    """Streams one sample's three files, block by block, window by window."""

    plan: Plan          # the block being written
    plan_total: int     # its weight

    def __init__(self, spec: KindSpec, profile: TextIO, alp: TextIO) -> None:
        self.spec = spec
        self.profile = profile
        self.alp = alp
        self.names = [n for n, _ in self.spec.mix]
        self.cum_weights = list(itertools.accumulate(wt for _, wt in self.spec.mix))
        self.loop_number = 0
        self.windows = self.rows = self.total = self.hot = self.blocks = 0
        self.alp_records = self.alp_chars = 0
        # Truth entries with their window's weight: the share needs the file's total.
        self.truth: dict[str, list[tuple[dict, int]]] = {"planted": [], "lookalikes": []}
        header = ["function"] + (["window"] if self.spec.labels else []) + ["module", "pc",
                 "samples"] + (["cycles"] if self.spec.cycles else []) + ["asm"]
        profile.write(",".join(header) + "\n")

    def block(self, plan: Plan) -> None:
        self.plan, self.plan_total = plan, plan.total
        for index in plan.order:
            self._window(index)
        self.blocks += 1
        self.windows += len(plan.windows)
        self.rows += plan.rows
        self.total += self.plan_total
        self.hot += len(plan.hot)

    def _window(self, index: int) -> None:
        wp = self.plan.windows[index]
        number = self.plan.first + index
        rng = random.Random(f"pcscope-sample:{self.spec.name}:{self.plan.seed}:w{number}")
        insns, texts, kernel = self._build(wp, rng)
        omitted = self._omitted(wp, insns, kernel, rng)
        self._rows(wp, insns, texts, omitted, rng)
        if wp.loops:
            agg = self._alp(wp, insns, texts, rng, kernel.evidence if kernel else None)
            if kernel is not None:
                self._truth(wp, texts, kernel, agg)

    def _build(self, wp: WindowPlan, rng: random.Random
               ) -> tuple[list[Insn], list[str], Kernel | None]:
        calls = self.plan.calls[wp.module]
        kernel = None
        if wp.plt:
            insns = plt_stubs(self.plan.got)
            return insns, [i.text for i in insns], None
        if wp.kernel:
            shape = random.Random(f"pcscope-sample:{self.spec.name}:{self.plan.seed}:"
                                  f"{wp.kernel}:shape")
            b, kernel = kernel_window(rng, wp.n, wp.kernel, wp.bad, calls, shape)
        else:
            b = background(rng, wp.n, self.names, self.cum_weights, calls,
                           self.spec.loop_prob)
        return b.insns, final_text(b.insns, b.labels, wp.first_pc), kernel

    @staticmethod
    def _omitted(wp: WindowPlan, insns: list[Insn], kernel: Kernel | None,
                 rng: random.Random) -> set[int]:
        """Instructions the sampler never hit: cold ones inside the window (never its first
        or last, so the window keeps its extent)."""
        if not wp.omitted:
            return set()
        keep = set(kernel.pcs) if kernel else set()
        inner = [k for k in range(1, len(insns) - 1) if k not in keep]
        cold = [k for k in inner if insns[k].freq < 0.5]
        pool = cold if len(cold) >= wp.omitted else inner
        return set(rng.sample(pool, wp.omitted))

    def _rows(self, wp: WindowPlan, insns: list[Insn], texts: list[str], omitted: set[int],
              rng: random.Random) -> None:
        present = [k for k in range(len(insns)) if k not in omitted]
        costs = [cost(insns[k]) for k in present]
        rnd = rng.random
        shares = [insns[k].freq * c * (0.7 + 0.6 * rnd()) for k, c in zip(present, costs,
                                                                         strict=True)]
        values = allocate(wp.value, shares, 0 if self.spec.zero_rows else 1)
        lead = [self.plan.functions[wp.function].name, self.plan.modules[wp.module]]
        if self.spec.labels:
            lead.insert(1, wp.label)
        prefix = ",".join(csv_field(f) for f in lead)
        base = wp.first_pc
        lines = []
        for k, c, val in zip(present, costs, values, strict=True):
            asm = texts[k]
            if "," in asm:  # asm never holds quotes or newlines: quoting is enough
                asm = f'"{asm}"'
            if self.spec.cycles:
                samples = max(1 if val else 0, round(val / (0.35 * c * (0.8 + 0.45 * rnd()))))
                lines.append(f"{prefix},0x{base + 4 * k:x},{samples},{val},{asm}\n")
            else:
                lines.append(f"{prefix},0x{base + 4 * k:x},{val},{asm}\n")
        self.profile.write("".join(lines))

    def _loops(self, wp: WindowPlan, n: int, rng: random.Random) -> list[Loop]:
        # The window's share of the file, taking the block to hold its share of the
        # windows: the file's total is known only after the last block.
        total, plan = self.plan_total, self.plan
        share = (wp.value / total * (len(plan.windows) / plan.sample_windows) if total
                 else 0.0)
        main = max(500, round(share * ITERATION_SCALE * rng.uniform(0.6, 1.4)))
        loops = []
        for k in range(wp.loops):
            self.loop_number += 1
            label = f"L{self.loop_number:04d}"
            if k == 0:
                loops.append(Loop(label, main, 0, n))
                continue
            size = max(1, round(EXTRA_LOOP_SHARE * n))
            start = rng.randrange(0, n - size + 1)
            loops.append(Loop(label, max(100, round(main * rng.uniform(0.05, 2.0))), start,
                              start + size))
        return loops

    def _alp(self, wp: WindowPlan, insns: list[Insn], texts: list[str], rng: random.Random,
             evidence: int | None) -> Agg:
        """Write the window's ALP records; return the evidence instruction's aggregate."""
        env = self.spec.env
        sims = [resolve(ins, env, rng) for ins in insns]
        timing = schedule(insns, sims)
        loops = self._loops(wp, len(insns), rng)
        with_loop = env.loop_key_always or len(loops) > 1
        agg = Agg()
        write = self.alp.write
        for loop in loops:
            for k in range(loop.start, loop.end):
                line = record(wp.first_pc + 4 * k, texts[k], insns[k], sims[k], timing[k],
                              loop, env, rng, with_loop)
                write(line + "\n")
                self.alp_records += 1
                self.alp_chars += len(line) + 1
                if k == evidence:
                    agg.add(json.loads(line), texts[k])
        return agg

    def _truth(self, wp: WindowPlan, texts: list[str], kernel: Kernel, agg: Agg) -> None:
        pc = wp.first_pc + 4 * kernel.evidence
        entry = {
            "category": wp.kernel,
            "pc": hex_pc(pc),
            "window": win_id(wp.first_pc),
            "what": kernel.what(agg),
            "asm": texts[kernel.evidence],
            "pcs": [hex_pc(wp.first_pc + 4 * k) for k in kernel.pcs],
            "function": self.plan.functions[wp.function].name,
            "module": self.plan.modules[wp.module],
        }
        self.truth["planted" if wp.bad else "lookalikes"].append((entry, wp.value))


def plt_stubs(got: list[int]) -> list[Insn]:
    """`adrp x16; ldr x17, [x16, #off]; add x16, x16, #off; br x17` per imported symbol."""
    out = []
    for slot in got:
        page, off = slot & ~0xFFF, slot & 0xFFF
        out += [
            Insn(f"adrp x16, #0x{page:x}", "alu", ("r16",)),
            Insn(f"ldr x17, [x16, #0x{off:x}]", "load", ("r17",), ("r16",)),
            Insn(f"add x16, x16, #0x{off:x}", "alu", ("r16",), ("r16",)),
            Insn("br x17", "br", (), ("r17",)),
        ]
    return out


def generate(opts: Options, progress: Callable[[str], None] = lambda _msg: None) -> Summary:
    """Write the sample; ``progress`` hears how far it got after each block of windows."""
    spec = KINDS[opts.kind]
    started = time.perf_counter()
    tokens = opts.alp_tokens
    if tokens is None and opts.scale is not None:
        tokens = TOKENS_PER_ROW * opts.scale
    blocks = plan_blocks(spec, opts.seed, windows=opts.windows, rows=opts.scale,
                         alp_tokens=tokens)
    out = Path(opts.out)
    level = 1 if opts.scale else 6  # benchmark inputs: speed over size
    with output(out / "profile.csv.gz", level) as profile, \
            output(out / "alp.jsonl.gz", level) as alp:
        writer = Writer(spec, profile, alp)
        for plan in blocks:
            writer.block(plan)
            progress(f"{writer.windows:,} of {plan.sample_windows:,} windows written "
                     f"({writer.rows:,} rows)")
    with output(out / "truth.json") as f:
        f.write(json.dumps(_truth_doc(opts.seed, writer), indent=1, sort_keys=True) + "\n")
    with output(out / "README.md") as f:
        f.write(readme(opts, writer))
    return Summary(out, writer.windows, writer.rows, writer.hot, writer.alp_records,
                   writer.alp_chars, len(writer.truth["planted"]),
                   len(writer.truth["lookalikes"]), time.perf_counter() - started)


def _truth_doc(seed: int, writer: Writer) -> dict:
    def order(entries: list[tuple[dict, int]]) -> list[dict]:
        weighted = [{**e, "weight": round(value / writer.total, 6)} for e, value in entries]
        return sorted(weighted, key=lambda e: (e["category"], e["pc"]))
    return {
        "seed": seed,
        "kind": writer.spec.name,
        "basis": "cycles" if writer.spec.cycles else "samples",
        "windows": writer.windows,
        "rows": writer.rows,
        "total": writer.total,
        "hot_windows": writer.hot,
        "blocks": writer.blocks,
        "coverage": 0.9,
        "alp_records": writer.alp_records,
        "planted": order(writer.truth["planted"]),
        "lookalikes": order(writer.truth["lookalikes"]),
    }


def command(opts: Options) -> str:
    parts = ["pcscope sample", f"--kind {opts.kind}", f"--seed {opts.seed}"]
    if opts.windows:
        parts.append(f"--windows {opts.windows}")
    if opts.scale:
        parts.append(f"--scale {opts.scale}")
    if opts.alp_tokens:
        parts.append(f"--alp-tokens {opts.alp_tokens}")
    return " ".join(parts + ["-o DIR"])


def readme(opts: Options, writer: Writer) -> str:
    spec = writer.spec
    coverage = "90% coverage" + (f" of each of its {writer.blocks} blocks of windows"
                                 if writer.blocks > 1 else "")
    return (
        f"# Sample workload {spec.name}\n\n{spec.summary} This copy has "
        f"{writer.windows:,} windows and {writer.rows:,} rows; the ALP holds "
        f"{writer.alp_records:,} raw (loop, PC) records for the {writer.hot:,} hot windows "
        f"({coverage}); `truth.json` lists {len(writer.truth['planted'])} planted issues "
        f"and {len(writer.truth['lookalikes'])} look-alikes (category, PC, window, what the "
        f"ALP shows). Synthetic data, made by `{command(opts)}`.\n"
    )
