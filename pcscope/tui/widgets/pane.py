"""A titled pane of the main screen; its ``pane`` name keys the tab bar and number keys.

The pane holding the focus shows it in its title (not by a CSS class or ``:focus-within``:
either restyles the pane's children, which then redraw every line they show).
"""

from __future__ import annotations

from textual.containers import Vertical
from textual.content import Content
from textual.widget import Widget


class Pane(Vertical):
    def __init__(self, pane: str, title: str, *children: Widget, held: bool = False) -> None:
        super().__init__(*(() if held else children), id=f"pane-{pane}", classes="pane")
        # A pane the first frame does not show holds its content back: mounting and styling
        # it would only delay that frame. ``fill`` mounts it when the pane is first shown,
        # or just after the first frame, whichever comes first.
        self._held = children if held else ()
        self.pane = pane
        self.title = title
        self.active = False
        self.status = ""
        self.border_title = title

    @property
    def filled(self) -> bool:
        return not self._held

    def fill(self) -> bool:
        """Mount the held-back content (at once: it can be queried and focused next);
        True when this call mounted it."""
        if not self._held:
            return False
        content, self._held = self._held, ()
        self.mount(*content)
        return True

    def set_active(self, active: bool) -> None:
        if active != self.active:
            self.active = active
            self.border_title = (Content.assemble((f" {self.title} ", "bold reverse $primary"))
                                 if active else self.title)

    def set_status(self, text: str) -> None:
        """A short state line in the pane's bottom border (count, sort, filter …)."""
        if text != self.status:
            self.status = text
            self.border_subtitle = text
