"""The assembly pane: the window holding the selected PC, one instruction per row.

A row: PC, samples, share of the total, a heat bar (relative to the window's hottest
instruction), the disassembly, a ``→`` when Enter can follow it, pattern badges and ALP
badges. Enter follows a branch or call into the window of its target; Backspace / ← goes
back and → forward, like a browser; ``H`` jumps to the hottest PC and Tab / Shift-Tab
cycle hot PCs in descending samples (as ``perf annotate`` does).
"""

from __future__ import annotations

import numpy as np
from textual.message import Message

from pcscope.core import isa
from pcscope.core.ids import hex_pc
from pcscope.core.workload import Workload
from pcscope.tui import render
from pcscope.tui.alp_glance import AlpGlance
from pcscope.tui.history import History
from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.virtual_list import Row, VirtualList

HEAT_WIDTH = 4
GAP_MARK = "┊"  # before a PC when the addresses skip (code the profile never counted)
BASIS_LABEL = {"samples": "samples", "cycles": "cycles", "executions": "execs"}


class AssemblyView(VirtualList):
    BINDINGS = bindings("asm")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {
        "asm--pc", "asm--samples", "asm--share", "asm--heat", "asm--text", "asm--follow",
        "asm--badge", "asm--alp", "asm--hit",
    }

    class PcChanged(Message):
        """The selected PC changed (cursor move or navigation)."""

        def __init__(self, pc: int) -> None:
            super().__init__()
            self.pc = pc

    def __init__(self, workload: Workload, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.workload = workload
        self.profile = workload.profile
        self.glance: AlpGlance | None = None  # set once the ALP is loaded (off the UI thread)
        self.history = History()
        self.window: int | None = None
        self.rows = np.zeros(0, dtype=np.int64)
        self._hot_order = np.zeros(0, dtype=np.int64)
        self._top = 0
        self._pc_width = 8
        self.marked: set[int] = set()  # PCs highlighted (search hits)

    # -- what is shown -------------------------------------------------------------------
    @property
    def pc(self) -> int | None:
        if not len(self.rows):
            return None
        return int(self.profile.pc[self.rows[self.cursor]])

    def show_pc(self, pc: int, *, remember: bool = True) -> bool:
        """Open the window of ``pc`` with the cursor on it; False if it is not sampled."""
        row = self.profile.row_of(pc)
        if row is None:
            return False
        if remember and self.pc is not None and self.pc != pc:
            self.history.visit(self.pc)
        self._open(int(self.profile.window[row]), row)
        return True

    def show_window(self, window: int) -> None:
        """Open ``window`` with the cursor on its hottest PC."""
        rows = self.profile.window_rows(window)
        if not len(rows):
            return
        hottest = int(rows[np.argmax(self.profile.value[rows])])
        self.show_pc(int(self.profile.pc[hottest]))

    def set_alp(self, alp) -> None:
        self.glance = AlpGlance(alp) if alp is not None else None
        self.invalidate()

    def set_marked(self, pcs: set[int]) -> None:
        self.marked = pcs
        self.invalidate()

    def _open(self, window: int, row: int) -> None:
        if window != self.window:
            self.window = window
            self.rows = np.asarray(self.profile.window_rows(window))
            values = self.profile.value[self.rows]
            self._top = int(values.max()) if len(values) else 0
            last = int(self.profile.pc[self.rows[-1]]) if len(self.rows) else 0
            self._pc_width = len(hex_pc(last))
            # Hottest first; ties by lower PC (rows ascend with PC).
            self._hot_order = np.lexsort((self.rows, -values))
            self.reset(len(self.rows), int(np.searchsorted(self.rows, row)))
        else:
            self.move_to(int(np.searchsorted(self.rows, row)))

    def on_virtual_list_highlighted(self, event: VirtualList.Highlighted) -> None:
        if event.source is self and self.pc is not None:
            event.stop()
            self.post_message(self.PcChanged(self.pc))

    # -- actions -------------------------------------------------------------------------
    def action_follow(self) -> None:
        pc = self.pc
        if pc is None:
            return
        asm = self.profile.asm(self.rows[self.cursor])
        target = isa.branch_target(asm, pc)
        if target is None:
            self.notify(f"{asm.split()[0] if asm else 'this'} at {hex_pc(pc)} has no direct "
                        "target to follow", severity="warning")
        elif not self.show_pc(target):
            self.notify(f"target {hex_pc(target)} is not in the profile (never sampled)",
                        severity="warning")

    def action_select(self) -> None:
        self.action_follow()

    def action_back(self) -> None:
        if self.pc is not None and (pc := self.history.back(self.pc)) is not None:
            self.show_pc(pc, remember=False)

    def action_forward(self) -> None:
        if self.pc is not None and (pc := self.history.forward(self.pc)) is not None:
            self.show_pc(pc, remember=False)

    def action_hottest(self) -> None:
        if len(self._hot_order):
            self.move_to(int(self._hot_order[0]))

    def action_cycle_hot(self, step: int) -> None:
        """Next (or previous) PC in descending-samples order from the current one."""
        order = self._hot_order
        if not len(order):
            return
        rank = int(np.flatnonzero(order == self.cursor)[0])
        self.move_to(int(order[(rank + step) % len(order)]))

    # -- drawing -------------------------------------------------------------------------
    def header(self) -> str:
        """The column names, with the unit of the counts (the share and heat are of the
        same counts: samples, cycles or executions, as the profile says)."""
        unit = BASIS_LABEL.get(self.profile.basis, self.profile.basis)[:7]
        return (f" {'pc':>{self._pc_width}} {unit:>7} {'share':>6} {'heat':<{HEAT_WIDTH}} asm"
                f"   ({GAP_MARK} addresses skip · → Enter follows)")

    def row_text(self, index: int, width: int) -> Row:
        p = self.profile
        row = int(self.rows[index])
        pc = int(p.pc[row])
        value = int(p.value[row])
        asm = p.asm(row)
        text = Row()
        gap = index > 0 and pc - int(p.pc[self.rows[index - 1]]) > 4
        text.append(GAP_MARK if gap else " ", self.cell_style("asm--follow"))
        mark = "asm--hit" if pc in self.marked else "asm--pc"
        text.append(f"{hex_pc(pc):>{self._pc_width}} ", self.cell_style(mark))
        text.append(f"{render.count(value):>7} ", self.cell_style("asm--samples"))
        text.append(f"{render.share(p.share(row))} ", self.cell_style("asm--share"))
        heat = value / self._top if self._top else 0.0
        text.append(render.bar(heat, HEAT_WIDTH), self.cell_style("asm--heat"))
        tail = self._badges(pc)
        follow = "→" if isa.branch_target(asm, pc) is not None else " "
        room = max(12, width - text.cell_len - tail.cell_len - 4)
        shown = asm if len(asm) <= room else asm[: room - 1] + "…"
        text.append(" " + shown.ljust(room), self.cell_style("asm--text"))
        text.append(f" {follow} ", self.cell_style("asm--follow"))
        text.extend(tail)
        return text

    def _badges(self, pc: int) -> Row:
        tail = Row()
        for category in self.workload.patterns.categories_at(pc):
            tail.append(render.badge(category) + " ", self.cell_style("asm--badge"))
        badge = self.glance.badge(pc) if self.glance is not None else None
        if badge is not None:
            tail.append(badge, self.cell_style("asm--alp"))
        return tail

    def describe(self) -> str:
        if self.window is None:
            return "no window open"
        win = self.profile.windows[self.window]
        name = self.profile.function_names[win.function] if win.function >= 0 else "(no function)"
        return f"{name} · {win.id} · {win.n:,} instructions · {render.share(win.weight)}"


