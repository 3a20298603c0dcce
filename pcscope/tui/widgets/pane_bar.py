"""The one-line pane switcher: ``1 Hot  2 Asm …`` with the active pane highlighted.

It never takes the focus (number keys and ``[`` / ``]`` switch panes); a click runs the
same ``show_pane`` action the keys do.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget

from pcscope.tui.keymap import PANES

SHORT = {"hot": "Hot", "asm": "Asm", "alp": "ALP", "findings": "Findings", "calls": "Calls",
         "search": "Search", "guide": "Guide"}


class PaneBar(Widget):
    def __init__(self) -> None:
        super().__init__(id="pane-bar")
        self.active = "hot"
        self.badges: dict[str, str] = {}  # e.g. findings -> "3", calls -> "12/60"

    def set_active(self, pane: str) -> None:
        if pane != self.active:
            self.active = pane
            self.refresh()

    def set_badge(self, pane: str, text: str) -> None:
        if self.badges.get(pane) != text:
            self.badges[pane] = text
            self.refresh()

    def render(self) -> Content:
        parts: list = []
        for n, (name, _title) in enumerate(PANES, start=1):
            label = f" {n} {SHORT[name]}"
            if self.badges.get(name):
                label += f" ({self.badges[name]})"
            label += " "
            style = "bold reverse $primary" if name == self.active else ""
            click = f"@click=screen.show_pane('{name}')"
            parts.append(Content.assemble((label, f"{style} {click}".strip())))
        return Content("").join(parts)
