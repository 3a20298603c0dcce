"""The guide pane: the guides' sections as an outline (or the hits of a guide search) and
the chosen section rendered as Markdown, reflowed to the pane's width.

Sections are addressed by their evidence IDs (``guide:<doc>/<slug path>``); an evidence
link in a finding opens the section here. ``/`` in this pane searches the guides (BM25 over
headings and text, phrases allowed) in a worker thread; Escape goes back to the outline.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.command_line import CommandLine
from pcscope.tui.widgets.virtual_list import Row, VirtualList
from pcscope.tui.work import in_thread

if TYPE_CHECKING:
    from textual.widgets import Markdown

HITS = 30  # guide sections listed per search


class SectionList(VirtualList):
    """The outline, or a search's hits (heading and the best matching fragment)."""

    BINDINGS = bindings("guide")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {"guide--doc", "guide--heading",
                                                        "guide--match"}

    def __init__(self, sections: list) -> None:
        super().__init__(id="guide-sections")
        self.sections = sections
        self.shown: list[int] = list(range(len(sections)))  # section positions, in order
        self.matches: dict[int, object] = {}  # position -> GuideMatch while searching

    def on_mount(self) -> None:
        self.reset(len(self.shown))

    def action_open(self) -> None:
        self.action_select()

    def action_search_guides(self) -> None:
        self.parent.ask_search()  # type: ignore[union-attr]

    def action_outline(self) -> None:
        """Escape leaves a search; with none shown it does what Escape does elsewhere."""
        if self.matches:
            self.parent.show_outline()  # type: ignore[union-attr]
        else:
            self.screen.action_cancel()  # type: ignore[attr-defined]

    def row_text(self, index: int, width: int) -> Row:
        position = self.shown[index]
        section = self.sections[position]
        text = Row()
        match = self.matches.get(position)
        if match is not None:
            text.append(section.heading, self.cell_style("guide--heading"))
            fragment = " ".join(match.snippet.split())  # type: ignore[attr-defined]
            text.append(f"  {fragment}", self.cell_style("guide--match"))
            return text
        if section.level <= 1:
            text.append(f"{section.doc}: ", self.cell_style("guide--doc"))
        text.append("  " * max(0, section.level - 1) + section.heading,
                    self.cell_style("guide--heading"))
        return text


class GuideView(Horizontal):
    class Searched(Message):
        def __init__(self, summary: str) -> None:
            super().__init__()
            self.summary = summary

    def __init__(self, load_sections: Callable[[], list]) -> None:
        super().__init__(id="guide-view")
        self._load_sections = load_sections  # decoded when the pane is first shown
        self.section_text: Markdown | None = None  # made when a section is first opened
        self.shown: str | None = None
        self.query = ""
        self._search_index = None  # built in memory on the first search (a few ms)
        self._worker: Worker | None = None

    @cached_property
    def sections(self) -> list:
        return list(self._load_sections())

    @cached_property
    def _index(self) -> dict[str, int]:
        from pcscope.core.readers.guides import section_index

        position = {s.id: n for n, s in enumerate(self.sections)}
        return {key: position[s.id] for key, s in section_index(self.sections).items()}

    @cached_property
    def sections_list(self) -> SectionList:
        return SectionList(self.sections)

    @cached_property
    def placeholder(self) -> Static:
        return Static(_empty(self.sections), id="guide-empty")

    def compose(self) -> ComposeResult:
        yield self.sections_list
        with VerticalScroll(id="guide-text-scroll"):
            yield self.placeholder

    def show(self, section_id: str) -> bool:
        """Open a section by ID (a former ID too); False when no guide has it."""
        index = self._index.get(section_id)
        if index is None:
            return False
        if index not in self.sections_list.shown:
            self.show_outline()
        self.sections_list.move_to(self.sections_list.shown.index(index))
        self._open(index)
        return True

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        if event.source is self.sections_list:
            event.stop()
            self._open(self.sections_list.shown[event.index])

    def _open(self, index: int) -> None:
        section = self.sections[index]
        self.shown = section.id
        title = " › ".join(section.path) or section.heading
        text = f"**{title}**  \n`{section.id}`\n\n{section.text.strip()}"
        scroll = self.query_one("#guide-text-scroll", VerticalScroll)
        if self.section_text is None:
            # The Markdown renderer (markdown-it, pygments) loads with the first section
            # read, not with the explorer: most sessions open no guide, and the first frame
            # should not wait for it.
            from textual.widgets import Markdown

            self.section_text = Markdown(text, id="guide-text")
            self.placeholder.remove()
            scroll.mount(self.section_text)
        else:
            self.section_text.update(text)
        scroll.scroll_home(animate=False)

    # -- search --------------------------------------------------------------------------
    def ask_search(self) -> None:
        """`/` in the guide pane: the query, asked on the bottom line."""
        def done(query: str | None) -> None:
            if query:
                self.search(query)

        self.screen.query_one(CommandLine).ask("search guides (words, \"phrases\", -word)",
                                               done, value=self.query)

    def search(self, query: str) -> None:
        self.query = query
        sections = self.sections

        def work():
            if self._search_index is None:
                from pcscope.index.text import GuideIndex

                self._search_index = GuideIndex.build(sections)
            return self._search_index.search(query, HITS)

        self._worker = in_thread(self, work, name="guide search", group="guide-search",
                                 exclusive=True)

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker or event.state != WorkerState.SUCCESS:
            return
        listing = self.sections_list
        found = [(self._index[m.id], m) for m in event.worker.result if m.id in self._index]
        listing.matches = dict(found)
        listing.shown = [position for position, _ in found]
        listing.reset(len(listing.shown))  # the focus stays where the engineer left it
        noun = "section" if len(found) == 1 else "sections"
        self.post_message(self.Searched(
            f"{len(found)} {noun} match {self.query!r} · Escape: all sections"))

    def show_outline(self) -> None:
        listing = self.sections_list
        if not listing.matches:
            return
        listing.matches = {}
        listing.shown = list(range(len(self.sections)))
        listing.reset(len(listing.shown), self._index.get(self.shown or "", 0))
        self.query = ""
        self.post_message(self.Searched(f"{len(self.sections)} sections"))


def _empty(sections: list) -> str:
    if not sections:
        return "No guides given (open the profile with --guide FILE)."
    return f"{len(sections)} sections. Enter on one to read it; / searches them."
