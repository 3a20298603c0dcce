"""Scrollable styled text drawn line by line (Line API).

``Static`` in a scroll container re-measures and lays out the whole screen whenever its
text changes; panes that change text on every cursor move (ALP, details) use this
instead: the text is wrapped once per width and theme, and new text only redraws the
pane.
"""

from __future__ import annotations

from textual.content import Content
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.visual import Visual

from pcscope.tui.widgets.keys_in_order import KeysInOrder
from pcscope.tui.widgets.virtual_list import set_virtual_height


class TextPane(KeysInOrder, ScrollView, can_focus=True):
    def __init__(self, content: Content | None = None, *, id: str | None = None,
                 classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._content = content or Content("")
        self._lines: list[Strip] | None = None
        self._width = -1

    def update(self, content: Content) -> None:
        self._content = content
        self._lines = None
        self.scroll_to(y=0, animate=False, immediate=True)
        self._wrap()

    def _wrap(self) -> list[Strip]:
        width = self.scrollable_content_region.width
        if self._lines is None or width != self._width:
            self._width = width
            self._lines = (Visual.to_strips(self, self._content, width, None, self.visual_style,
                                            pad=True) if width > 0 else [])
            set_virtual_height(self, len(self._lines))
        return self._lines

    def render_line(self, y: int) -> Strip:
        lines = self._wrap()
        index = self.scroll_offset.y + y
        width = self.scrollable_content_region.width
        if index >= len(lines):
            return Strip.blank(width, self.rich_style)
        return lines[index].crop(0, width)

    def on_resize(self) -> None:
        self._lines = None
        self.refresh()

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._new_theme)

    def _new_theme(self, _theme) -> None:
        self._lines = None  # colours resolve again
        self.refresh()
