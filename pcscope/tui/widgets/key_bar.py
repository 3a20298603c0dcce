"""The bottom line: the keys the focused pane answers to, redrawn as one line of text.

Textual's ``Footer`` builds a widget per key and rebuilds them all on every focus change
(tens of milliseconds here, on every pane switch); this draws the same hints as text.
"""

from __future__ import annotations

from textual.content import Content
from textual.widget import Widget


class KeyBar(Widget):
    def __init__(self) -> None:
        super().__init__(id="key-bar")

    def on_mount(self) -> None:
        self.screen.bindings_updated_signal.subscribe(self, lambda _screen: self.refresh())

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def render(self) -> Content:
        parts: list[Content] = []
        shown: set[str] = set()
        for _node, binding, enabled, _tooltip in self.screen.active_bindings.values():
            if not binding.show or binding.action in shown:
                continue
            shown.add(binding.action)
            style = "bold $accent" if enabled else "$pcscope-muted"
            parts.append(Content.assemble(
                (f" {self.app.get_key_display(binding)} ", style), f"{binding.description} "))
        return Content("").join(parts)
