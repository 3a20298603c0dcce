"""The guide pane: the guides' sections as an outline and the chosen section's text.

Sections are addressed by their evidence IDs (``guide:<doc>/<slug path>``); an evidence
link in a finding opens the section here.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.widgets import Static

from pcscope.core.readers.guides import section_index
from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.virtual_list import Row, VirtualList


class SectionList(VirtualList):
    BINDINGS = bindings("guide")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {"guide--doc", "guide--heading"}

    def __init__(self, sections: list) -> None:
        super().__init__(id="guide-sections")
        self.sections = sections

    def on_mount(self) -> None:
        self.reset(len(self.sections))

    def action_open(self) -> None:
        self.action_select()

    def row_text(self, index: int, width: int) -> Row:
        section = self.sections[index]
        text = Row()
        if section.level <= 1:
            text.append(f"{section.doc}: ", self.cell_style("guide--doc"))
        text.append("  " * max(0, section.level - 1) + section.heading,
                    self.cell_style("guide--heading"))
        return text


class GuideView(Horizontal):
    def __init__(self, sections: list) -> None:
        super().__init__(id="guide-view")
        self.sections = list(sections)
        position = {s.id: n for n, s in enumerate(self.sections)}
        self._index = {key: position[s.id] for key, s in section_index(self.sections).items()}
        self.sections_list = SectionList(self.sections)
        self.section_text = Static(Content(_empty(self.sections)), id="guide-text")
        self.shown: str | None = None

    def compose(self) -> ComposeResult:
        yield self.sections_list
        with VerticalScroll(id="guide-text-scroll"):
            yield self.section_text

    def show(self, section_id: str) -> bool:
        """Open a section by ID; False when no guide has it."""
        index = self._index.get(section_id)
        if index is None:
            return False
        self.sections_list.move_to(index)
        self._open(index)
        return True

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        if event.source is self.sections_list:
            event.stop()
            self._open(event.index)

    def _open(self, index: int) -> None:
        section = self.sections[index]
        self.shown = section.id
        self.section_text.update(Content.assemble(
            (" › ".join(section.path) or section.heading, "bold $primary"), "\n",
            (section.id, "$pcscope-link"), "\n\n", section.text.strip()))


def _empty(sections: list) -> str:
    if not sections:
        return "No guides given (open the profile with --guide FILE)."
    return f"{len(sections)} sections. Enter on one to read it."
