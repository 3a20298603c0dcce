"""The ALP pane: the simulator's evidence for the selected PC.

The pipeline timeline draws each stage as a bar from the previous stage's cycle to its
own (a Gantt row per stage, scaled to the pane), then the derived waits, the branch and
memory figures with their rates, and the per-loop records the PC's figures aggregate.
"""

from __future__ import annotations

from textual.content import Content

from pcscope.core.ids import alp_id, hex_pc
from pcscope.tui import render
from pcscope.tui.widgets.text_pane import TextPane

LABEL = "$pcscope-muted"
BAR = "$pcscope-alp"
HEAD = "bold $primary"
MAX_LOOPS = 50  # per-loop rows shown; the rest are counted


class AlpView(TextPane):
    def __init__(self, *, id: str | None = None) -> None:
        super().__init__(Content("Loading ALP…"), id=id)
        self.alp = None
        self.loaded = False
        self.pc: int | None = None

    def set_alp(self, alp) -> None:
        self.alp, self.loaded = alp, True
        self._draw()

    def show_pc(self, pc: int) -> None:
        if pc != self.pc:
            self.pc = pc
            self._draw()

    def on_resize(self) -> None:
        super().on_resize()
        self._draw()

    def _draw(self) -> None:
        self.update(self.content())

    def content(self) -> Content:
        if not self.loaded:
            return Content("Loading ALP…")
        if self.alp is None:
            return Content("No ALP given (open the profile with --alp FILE).")
        if self.pc is None:
            return Content("Select a PC in the assembly pane.")
        record = self.alp.get(self.pc)
        if record is None:
            return Content(f"No ALP record at {hex_pc(self.pc)} (not in a simulated loop).")
        width = max(20, self.scrollable_content_region.width or 40)
        parts: list[Content] = [self._title(record)]
        parts += stage_lines(record, width)
        if record.branch is not None:
            parts.append(branch_line(record.branch))
        if record.mem is not None:
            parts.append(mem_line(record.mem))
        parts += loop_lines(self.alp.per_loop.get(self.pc, []))
        return Content("\n").join(parts)

    def _title(self, record) -> Content:
        loops = ", ".join(record.loops) or "one region"
        return Content.assemble(
            (alp_id(record.pc), HEAD), "  ", record.asm or "",
            (f"\niterations {render.count(record.iterations)} · loops {loops}", LABEL),
            "" if record.matched else ("  (PC not in the profile)", "$warning"),
        )


def stage_lines(record, width: int) -> list[Content]:
    stages = record.stages
    if not stages:
        return [Content.assemble(("no pipeline stages recorded", LABEL))]
    from pcscope.core.alp import STAGES  # loaded with the ALP, after the first frame

    names = [s for s in STAGES if s in stages] + [s for s in stages if s not in STAGES]
    span = max(stages.values()) or 1.0
    room = max(8, width - 18)
    lines = [Content.assemble(("Pipeline", HEAD), ("  cycles after fetch", LABEL))]
    previous = 0.0
    for name in names:
        at = stages[name]
        start = round(min(previous, at) / span * room)
        end = max(start + 1, round(at / span * room))
        bar = " " * start + "█" * (end - start)
        lines.append(Content.assemble(
            (f"{name:>9} ", LABEL), f"{render.cycles(at):>6} ", (bar, BAR)))
        previous = at
    waits = [("issue wait", record.issue_wait), ("execute", record.execute_latency),
             ("retire wait", record.retire_wait)]
    shown = [f"{label} {render.cycles(value)}" for label, value in waits if value is not None]
    if shown:
        lines.append(Content.assemble(("  " + " · ".join(shown), LABEL)))
    return lines


def branch_line(branch) -> Content:
    return Content.assemble(
        ("Branch ", HEAD), branch.kind,
        f"\n  executed  {render.count(branch.executed):>7}",
        f"\n  taken     {render.count(branch.taken):>7} ({render.rate(branch.taken_rate)})",
        "\n  mispredicted ", (f"{render.count(branch.mispredicted)} "
                             f"({render.rate(branch.mispredict_rate)})", "bold $warning"),
    )


def mem_line(mem) -> Content:
    figures = [
        ("L1D miss", mem.l1d_miss, mem.l1d_miss_rate),
        ("L2 miss", mem.l2_miss, mem.l2_miss_rate),
        ("LLC miss", mem.llc_miss, mem.llc_miss_rate),
        ("TLB miss", mem.tlb_miss, mem.tlb_miss_rate),
        ("store fwd", mem.store_forwarded, mem.store_forward_rate),
    ]
    parts: list = [("Memory ", HEAD), mem.kind,
                   f"\n  accesses  {render.count(mem.accesses):>7}"]
    for label, n, rate in figures:
        if n is not None:
            parts.append(f"\n  {label:<9} {render.count(n):>7} ({render.rate(rate)})")
    if mem.avg_latency is not None:
        parts.append(f"\n  avg latency {render.cycles(mem.avg_latency)} cycles")
    return Content.assemble(*parts)


def loop_lines(records: list) -> list[Content]:
    if not records:
        return []
    lines = [Content.assemble((f"Per-loop records ({len(records)})", HEAD))]
    for loop_record in records[:MAX_LOOPS]:
        raw = loop_record.raw
        stages = raw.get("stages") or {}
        figures = [f"{k[0]}{render.cycles(stages[k])}" for k in ("issue", "complete", "retire")
                   if k in stages]
        lines.append(Content.assemble(
            (f"  {loop_record.loop or '(region)'}", "bold"),
            f" iter {render.count(raw.get('iterations'))}", _loop_rate(raw),
            f"  {' '.join(figures)}", (f"  ln {loop_record.line}", LABEL),
        ))
    if len(records) > MAX_LOOPS:
        lines.append(Content.assemble((f"  … {len(records) - MAX_LOOPS} more", LABEL)))
    return lines


def _loop_rate(raw: dict) -> str:
    branch, mem = raw.get("branch") or {}, raw.get("mem") or {}
    if branch.get("executed"):
        return f" mp {render.rate(branch.get('mispredicted', 0) / branch['executed'])}"
    if mem.get("accesses"):
        return f" l1 {render.rate(mem.get('l1d_miss', 0) / mem['accesses'])}"
    return ""
