"""Functions with their totals, hottest first: perf report's first level. Enter lists the
function's windows in the hot pane (then assembly, as perf report drills down)."""

from __future__ import annotations

import numpy as np
from textual.message import Message

from pcscope.core.ids import is_hidden_name
from pcscope.core.profile import Profile
from pcscope.tui import render
from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.virtual_list import Row, VirtualList

BAR_WIDTH = 8


class FunctionList(VirtualList):
    BINDINGS = bindings("functions")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {
        "hot--share", "hot--bar", "hot--function", "hot--hidden", "hot--range",
    }

    class FunctionChosen(Message):
        def __init__(self, name: str) -> None:
            super().__init__()
            self.name = name

    class Back(Message):
        """F again: back to the windows."""

    def __init__(self, profile: Profile) -> None:
        super().__init__(id="function-list")
        self.profile = profile
        functions = profile.functions
        self.order = np.lexsort((np.arange(len(functions)), -functions.value))
        self._windows = np.bincount(profile.windows.function[profile.windows.function >= 0],
                                    minlength=len(functions))
        self._top = int(functions.value.max()) if len(functions) else 0

    def on_mount(self) -> None:
        self.reset(len(self.order))

    @property
    def function(self) -> int | None:
        return int(self.order[self.cursor]) if len(self.order) else None

    def action_open(self) -> None:
        if self.function is not None:
            name = self.profile.function_names[self.function]
            self.post_message(self.FunctionChosen(name))

    def action_select(self) -> None:
        self.action_open()

    def action_windows(self) -> None:
        self.post_message(self.Back())

    def row_text(self, index: int, width: int) -> Row:
        f = int(self.order[index])
        fn = self.profile.functions[f]
        text = Row()
        text.append(f" {render.share(fn.weight)} ", self.cell_style("hot--share"))
        text.append(render.bar(fn.value / self._top if self._top else 0.0, BAR_WIDTH),
                    self.cell_style("hot--bar"))
        tail = f" {render.plural(int(self._windows[f]), 'window')}"
        room = max(8, width - text.cell_len - len(tail) - 2)
        name = fn.name or "(no function)"
        style = "hot--hidden" if is_hidden_name(fn.name) else "hot--function"
        text.append(" " + (name if len(name) <= room else name[: room - 1] + "…").ljust(room),
                    self.cell_style(style))
        text.append(tail, self.cell_style("hot--range"))
        return text

    def describe(self) -> str:
        total = len(self.order)
        return f"{self.cursor + 1:,}/{total:,} functions" if total else "no functions"
