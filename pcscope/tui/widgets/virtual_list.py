"""A cursor list that draws only the rows on screen (Textual's Line API, as `toolong` does).

Subclasses say how many rows there are and how to draw one (``row_text``, as a ``Row`` of
styled pieces); the list keeps rendered rows in an LRU cache keyed by (row, width,
generation), so scrolling a million-row list costs the visible rows only and nothing is
measured up front (unlike ``DataTable``, which measures every cell).
"""

from __future__ import annotations

from rich.cells import cell_len
from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.cache import LRUCache
from textual.geometry import Region, Size
from textual.message import Message
from textual.scroll_view import ScrollView
from textual.strip import Strip

from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.keys_in_order import KeysInOrder


def set_virtual_height(view: ScrollView, height: int) -> None:
    """Change how many lines a Line API view scrolls over without a layout pass.

    Assigning ``virtual_size`` asks Textual for a whole-screen layout and redraw (tens
    of milliseconds at 160×48) although the view's own box does not change; this sets it
    quietly and updates the scrollbar as Textual's own resize path does. Views using it
    keep their vertical scrollbar always shown (``overflow-y: scroll``) so that no
    scrollbar appearing or going ever needs a layout either."""
    size = Size(view.size.width, height)
    if size != view.virtual_size:
        view.set_reactive(ScrollView.virtual_size, size)
        view._scroll_update(size)  # Textual's scrollbar/offset update (ScrollView._size_updated)
    view.refresh()


class Row:
    """One list row as styled pieces, turned into segments as they are: rich ``Text``'s
    span handling would cost more than the drawing itself."""

    __slots__ = ("segments", "cell_len")

    def __init__(self) -> None:
        self.segments: list[Segment] = []
        self.cell_len = 0

    def append(self, text: str, style: Style | None = None) -> None:
        if text:
            self.segments.append(Segment(text, style))
            self.cell_len += cell_len(text)

    def extend(self, other: Row) -> None:
        self.segments += other.segments
        self.cell_len += other.cell_len


class VirtualList(KeysInOrder, ScrollView, can_focus=True):
    BINDINGS = bindings("list")
    COMPONENT_CLASSES = {"virtual-list--cursor", "virtual-list--cursor-blurred"}

    class Highlighted(Message):
        """The cursor moved to ``index``."""

        def __init__(self, source: VirtualList, index: int) -> None:
            super().__init__()
            self.source = source
            self.index = index

        @property
        def control(self) -> VirtualList:
            return self.source

    class Selected(Highlighted):
        """Enter (or a click on the cursor row) on ``index``."""

    def __init__(self, *, id: str | None = None, classes: str | None = None) -> None:
        super().__init__(id=id, classes=classes)
        self._count = 0
        self._cursor = 0
        self._generation = 0  # bumped when rows change meaning: cached rows become stale
        self._rows: LRUCache[tuple[int, int, int], Strip] = LRUCache(1024)
        self._styles: dict[str, Style] = {}  # component styles, until the CSS changes

    # -- what subclasses provide ---------------------------------------------------------
    def row_text(self, index: int, width: int) -> Row:
        raise NotImplementedError

    # -- state ---------------------------------------------------------------------------
    @property
    def count(self) -> int:
        return self._count

    @property
    def cursor(self) -> int:
        return self._cursor

    def reset(self, count: int, cursor: int = 0) -> None:
        """New rows: forget cached rendering, place the cursor and tell listeners."""
        self._count = count
        self._generation += 1
        self._rows.clear()
        set_virtual_height(self, count)
        self._cursor = -1
        self.move_to(cursor, force=True)
        self.refresh()

    def invalidate(self) -> None:
        """Same rows, different rendering (new badges, theme): redraw what is visible."""
        self._generation += 1
        self._rows.clear()
        self.refresh()

    def move_to(self, index: int, *, force: bool = False) -> None:
        if self._count == 0:
            self._cursor = 0
            return
        index = max(0, min(index, self._count - 1))
        if index == self._cursor and not force:
            return
        old, self._cursor = self._cursor, index
        self._refresh_row(old)
        self._refresh_row(index)
        self._reveal()
        self.post_message(self.Highlighted(self, index))

    # -- actions -------------------------------------------------------------------------
    def action_cursor(self, step: int) -> None:
        self.move_to(self._cursor + step)

    def action_page(self, direction: int) -> None:
        self.move_to(self._cursor + direction * max(1, self._page_height() - 1))

    def action_first(self) -> None:
        self.move_to(0)

    def action_last(self) -> None:
        self.move_to(self._count - 1)

    def action_select(self) -> None:
        if self._count:
            self.post_message(self.Selected(self, self._cursor))

    # -- Line API ------------------------------------------------------------------------
    def render_line(self, y: int) -> Strip:
        scroll_x, scroll_y = self.scroll_offset
        index = scroll_y + y
        width = self.scrollable_content_region.width
        if index >= self._count or width <= 0:
            return Strip.blank(width, self._base_style())
        key = (index, width, self._generation)
        strip = self._rows.get(key)
        if strip is None:
            strip = self._strip(self.row_text(index, width), width)
            self._rows.set(key, strip)
        if index == self._cursor:
            name = "virtual-list--cursor" if self.has_focus else "virtual-list--cursor-blurred"
            strip = Strip(Segment.apply_style(strip, post_style=self.cell_style(name, full=True)),
                          strip.cell_length)
        return strip.crop(scroll_x, scroll_x + width)

    def _strip(self, row: Row, width: int) -> Strip:
        base = self._base_style()
        strip = Strip(row.segments, row.cell_len).adjust_cell_length(width, base)
        return strip.apply_style(base)

    def _base_style(self) -> Style:
        style = self._styles.get("")
        if style is None:
            style = self._styles[""] = self.rich_style
        return style

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._new_theme)

    def _new_theme(self, _theme) -> None:
        # Only a theme changes the component colours (focus and class changes restyle this
        # widget too, but must not cost a redraw of every row).
        self._styles.clear()
        self.invalidate()

    # -- events --------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        set_virtual_height(self, self._count)
        self._reveal()

    def on_focus(self) -> None:
        self._refresh_row(self._cursor)

    def on_blur(self) -> None:
        self._refresh_row(self._cursor)

    def on_click(self, event: events.Click) -> None:
        index = self.scroll_offset.y + event.y
        if 0 <= index < self._count:
            if index == self._cursor:
                self.action_select()
            else:
                self.move_to(index)

    # -- helpers -------------------------------------------------------------------------
    def _page_height(self) -> int:
        return self.scrollable_content_region.height

    def _refresh_row(self, index: int) -> None:
        y = index - self.scroll_offset.y
        if 0 <= y < self.size.height:
            self.refresh(Region(0, y, self.size.width, 1))

    def _reveal(self) -> None:
        height = self._page_height()
        if height <= 0:
            return
        top = self.scroll_offset.y
        if self._cursor < top:
            self.scroll_to(y=self._cursor, animate=False, immediate=True)
        elif self._cursor >= top + height:
            self.scroll_to(y=self._cursor - height + 1, animate=False, immediate=True)

    def cell_style(self, name: str, *, full: bool = False) -> Style:
        """The rich style of a component class (looked up once per stylesheet state:
        Textual computes it by walking the DOM, too slow for every cell)."""
        key = f"{name}:full" if full else name
        style = self._styles.get(key)
        if style is None:
            style = self._styles[key] = self.get_component_rich_style(name, partial=not full)
        return style
