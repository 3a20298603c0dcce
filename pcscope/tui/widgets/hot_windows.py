"""The hot-windows pane: every window, hottest first, drawn only where visible.

A row: selection mark (● = inside the hot selection that `A` analyzes), weight, a bar
relative to the hottest window, the function (hidden ``<unknown_N>`` names in italics),
pattern badges, ALP flags and the PC range.
"""

from __future__ import annotations

from dataclasses import replace

from textual.message import Message

from pcscope.core.ids import hex_pc, is_hidden_name
from pcscope.tui import render
from pcscope.tui.alp_glance import alp_flags
from pcscope.tui.hot_model import SORTS, Badges, HotModel, HotView
from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.command_line import CommandLine
from pcscope.tui.widgets.virtual_list import Row, VirtualList

BAR_WIDTH = 8
MIN_NAME = 16  # below this, the PC range makes way for the function name


class HotWindowsList(VirtualList):
    BINDINGS = bindings("hot")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {
        "hot--mark", "hot--share", "hot--bar", "hot--function", "hot--hidden",
        "hot--badge", "hot--alp", "hot--range",
    }

    class WindowChosen(Message):
        def __init__(self, window: int) -> None:
            super().__init__()
            self.window = window

    class ViewChanged(Message):
        """Sort or filter changed (the pane retitles itself)."""

    class FunctionsRequested(Message):
        """``F``: the pane shows functions with their totals instead of windows."""

    def __init__(self, model: HotModel, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.model = model
        weights = model.profile.windows.value
        self._top_value = int(weights.max()) if len(weights) else 0

    def on_mount(self) -> None:
        self.reset(len(self.model))

    @property
    def window(self) -> int | None:
        """The window under the cursor."""
        return self.model.window_at(self.cursor) if len(self.model) else None

    def set_badges(self, badges: Badges) -> None:
        self.model.badges = badges
        self.invalidate()

    def apply(self, view: HotView) -> None:
        """Re-sort/filter, keeping the cursor on the same window when it is still shown."""
        current = self.window
        self.model.apply(view)
        position = self.model.position_of(current) if current is not None else None
        self.reset(len(self.model), position or 0)
        self.post_message(self.ViewChanged())

    def show_window(self, window: int) -> None:
        if window == self.window:
            return
        position = self.model.position_of(window)
        if position is not None:
            self.move_to(position)

    # -- actions -------------------------------------------------------------------------
    def action_open(self) -> None:
        if self.window is not None:
            self.post_message(self.WindowChosen(self.window))

    def action_select(self) -> None:
        self.action_open()

    def action_cycle_sort(self) -> None:
        sort = SORTS[(SORTS.index(self.model.view.sort) + 1) % len(SORTS)]
        self.apply(self.model.with_sort(sort))

    def action_cycle_category(self) -> None:
        badges = self.model.badges
        if badges is None or not badges.categories:
            self.notify("no pattern categories (yet)", severity="warning")
            return
        choices = [None, *badges.categories]
        current = choices.index(self.model.view.category)
        category = choices[(current + 1) % len(choices)]
        self.apply(replace(self.model.view, category=category))

    def action_functions(self) -> None:
        self.post_message(self.FunctionsRequested())

    def action_filter_text(self) -> None:
        """``f``: the filter text, asked on the bottom line."""
        def done(text: str | None) -> None:
            if text is not None:
                self.apply(replace(self.model.view, text=text))

        self.screen.query_one(CommandLine).ask(
            "filter windows (function, module, label or PC)", done, value=self.model.view.text)

    def action_clear_filters(self) -> None:
        self.apply(HotView(self.model.view.sort))

    # -- drawing -------------------------------------------------------------------------
    def row_text(self, index: int, width: int) -> Row:
        model = self.model
        w = model.window_at(index)
        win = model.profile.windows[w]
        name = model.profile.function_names[win.function] if win.function >= 0 else ""
        text = Row()
        text.append("●" if model.in_selection[w] else " ", self.cell_style("hot--mark"))
        text.append(f" {render.share(win.weight)} ", self.cell_style("hot--share"))
        fraction = win.value / self._top_value if self._top_value else 0.0
        text.append(render.bar(fraction, BAR_WIDTH), self.cell_style("hot--bar"))
        tail = self._tail(w, win.first_pc, win.last_pc, ranged=True)
        if width - text.cell_len - tail.cell_len - 2 < MIN_NAME:
            tail = self._tail(w, win.first_pc, win.last_pc, ranged=False)
        room = max(8, width - text.cell_len - tail.cell_len - 2)
        label = name or "(no function)"
        style = "hot--hidden" if is_hidden_name(name) or not name else "hot--function"
        shown = label if len(label) <= room else label[: room - 1] + "…"
        text.append(" " + shown.ljust(room) + " ", self.cell_style(style))
        text.extend(tail)
        return text

    def _tail(self, window: int, first: int, last: int, ranged: bool) -> Row:
        tail = Row()
        badges = self.model.badges
        if badges is not None:
            for category in badges.categories_of(window):
                tail.append(render.badge(category), self.cell_style("hot--badge"))
                tail.append(" ")
            flags = alp_flags(int(badges.alp_bits[window]))
            if flags:
                tail.append(flags, self.cell_style("hot--alp"))
                tail.append(" ")
        if ranged:
            tail.append(f"{hex_pc(first)}–{hex_pc(last)}", self.cell_style("hot--range"))
        return tail

    def describe(self) -> str:
        """Where the cursor is (the list draws no scrollbar), how many are shown, the view."""
        total = len(self.model.profile.windows)
        shown = len(self.model)
        view = self.model.view
        if not shown and total and view.filters():
            hidden_by = " and ".join(view.filters())
            return f"0 of {total:,} windows: all hidden by {hidden_by} · C clears"
        counted = f"{shown:,}" if shown == total else f"{shown:,} of {total:,}"
        place = f"{self.cursor + 1:,}/" if shown else ""
        return f"{place}{counted} windows · {view.describe()}"
