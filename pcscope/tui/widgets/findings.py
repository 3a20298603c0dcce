"""The findings pane: the run's ideas (best first), one idea in full, its evidence as links.

Ideas are the report's idea objects (docs/formats.md §4), each showing its own share (its PCs and
its mechanisms' sites), grouped by mechanism: ideas about the same mechanism sit together, in
the rank of the best of them. The engineer's triage — accepted, rejected or undecided, plus
a note — lives beside them (kept in the session store by the screen); Enter on an evidence
ID, a mechanism's included, asks the screen to jump to it.
"""

from __future__ import annotations

from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from pcscope.core.errors import EvidenceError
from pcscope.core.triage import Verdict
from pcscope.tui import render
from pcscope.tui.idea_view import ShownIdea
from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.command_line import CommandLine
from pcscope.tui.widgets.virtual_list import Row, VirtualList
from pcscope.tui.work import in_thread

VERDICT_MARK = {"accepted": "✓", "rejected": "✗", "proposed": "·"}
NOTE_MARK = "✎"  # the idea carries an engineer's note


class IdeasList(VirtualList):
    BINDINGS = bindings("findings")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {
        "idea--accepted", "idea--rejected", "idea--proposed", "idea--weight", "idea--category",
    }

    class VerdictChanged(Message):
        def __init__(self, idea: str, verdict: Verdict) -> None:
            super().__init__()
            self.idea = idea
            self.verdict = verdict

    def __init__(self) -> None:
        super().__init__(id="ideas-list")
        self.ideas: list[ShownIdea] = []
        self.verdicts: dict[str, Verdict] = {}

    @property
    def idea(self) -> ShownIdea | None:
        return self.ideas[self.cursor] if self.ideas else None

    def set_ideas(self, ideas: list[ShownIdea]) -> None:
        current = self.idea.id if self.idea else None
        self.ideas = by_mechanism(ideas)
        ids = [i.id for i in self.ideas]
        self.reset(len(self.ideas), ids.index(current) if current in ids else 0)

    def set_verdicts(self, verdicts: dict[str, Verdict]) -> None:
        self.verdicts = dict(verdicts)
        self.invalidate()

    def verdict_of(self, idea_id: str) -> Verdict:
        return self.verdicts.get(idea_id, Verdict())

    def action_open_idea(self) -> None:
        """Enter: the detail's evidence list takes the focus (at once: keys_in_order)."""
        if self.idea is not None:
            self.screen.set_focus(self.query_ancestor(FindingsView).evidence)

    def action_select(self) -> None:
        self.action_open_idea()

    def action_verdict(self, verdict: str) -> None:
        idea = self.idea
        if idea is None:
            return
        changed = Verdict(verdict, self.verdict_of(idea.id).note)
        self.verdicts[idea.id] = changed
        self.invalidate()
        self.post_message(self.VerdictChanged(idea.id, changed))

    def action_scroll_detail(self, lines: int) -> None:
        """J / K: read a long claim without leaving the list."""
        self.post_message(self.DetailScrolled(lines))

    class DetailScrolled(Message):
        def __init__(self, lines: int) -> None:
            super().__init__()
            self.lines = lines

    def action_note(self) -> None:
        """``i``: the engineer's note on the idea, asked on the bottom line."""
        if self.idea is None:
            return
        idea = self.idea.id

        def done(text: str | None) -> None:
            if text is not None:
                self.set_note(idea, text)

        self.screen.query_one(CommandLine).ask(f"note on {idea}", done,
                                               value=self.verdict_of(idea).note)

    def set_note(self, idea_id: str, note: str) -> None:
        changed = Verdict(self.verdict_of(idea_id).verdict, note)
        self.verdicts[idea_id] = changed
        self.invalidate()
        self.post_message(self.VerdictChanged(idea_id, changed))

    def row_text(self, index: int, width: int) -> Row:
        idea = self.ideas[index]
        triage = self.verdict_of(idea.id)
        verdict = triage.verdict
        text = Row()
        text.append(f" {VERDICT_MARK.get(verdict, '?')}", self.cell_style(f"idea--{verdict}"))
        text.append(f"{NOTE_MARK if triage.note else ' '} ", self.cell_style("idea--category"))
        text.append(f"{render.share(idea.weight)} own ", self.cell_style("idea--weight"))
        text.append(f"c{idea.confidence:.2f} ", self.cell_style("idea--weight"))
        text.append(f"{idea.category:<17} ", self.cell_style("idea--category"))
        if idea.mechanisms:
            text.append(f"{idea.mechanisms[0].removeprefix('mech:')} ",
                        self.cell_style("idea--category"))
        text.append(idea.title)
        return text


def by_mechanism(ideas: list[ShownIdea]) -> list[ShownIdea]:
    """Ideas in rank order, except that those sharing a first mechanism follow the best of
    them."""
    groups: dict[str, list[ShownIdea]] = {}
    for idea in ideas:
        groups.setdefault(idea.mechanisms[0] if idea.mechanisms else idea.id, []).append(idea)
    return [idea for group in groups.values() for idea in group]


class EvidenceList(VirtualList):
    """The chosen idea's evidence IDs with what each resolves to; Enter jumps.

    Rows are drawn on the UI thread: an ID that resolves from a part not loaded yet (a
    recorded run's ``alp:`` before the ALP has decoded, its ``mech:`` before the mechanisms
    are read) is resolved in a worker, and shows ``…`` until then."""

    BINDINGS = bindings("evidence")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {"evidence--id", "evidence--missing"}

    class Chosen(Message):
        def __init__(self, evidence_id: str) -> None:
            super().__init__()
            self.evidence_id = evidence_id

    def __init__(self, store) -> None:
        super().__init__(id="evidence-list")
        self.store = store
        self.ids: list[str] = []
        self._resolved: dict[str, tuple[str, str]] = {}  # shown ID -> title, ID style
        self._resolving: Worker | None = None
        self._waiting: list[str] = []  # IDs the worker resolves (parts not loaded)

    def set_ids(self, ids: list[str]) -> None:
        self.ids = list(ids)
        self._resolved = {}
        self._waiting = [i for i in self.ids if not self.store.resolves_now(i)]
        self._resolving = None
        if self._waiting:
            store, waiting = self.store, self._waiting
            self._resolving = in_thread(self, lambda: {i: _title_of(store, i) for i in waiting},
                                        name="resolve evidence", group="evidence-titles",
                                        exclusive=True)
        self.reset(len(self.ids))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._resolving:
            return
        if event.state == WorkerState.SUCCESS:
            self._resolved.update(event.worker.result or {})
        elif event.state == WorkerState.ERROR:  # the app's handler has said why
            self._resolved.update((i, ("(not loaded)", "evidence--missing"))
                                  for i in self._waiting)
        else:
            return
        self.invalidate()

    def action_follow(self) -> None:
        if self.ids:
            self.post_message(self.Chosen(self.ids[self.cursor]))

    def action_select(self) -> None:
        self.action_follow()

    def action_back(self) -> None:
        self.screen.set_focus(self.query_ancestor(FindingsView).ideas)

    def row_text(self, index: int, width: int) -> Row:
        evidence_id = self.ids[index]
        resolved = self._resolved.get(evidence_id)
        if resolved is None and evidence_id not in self._waiting:
            resolved = self._resolved[evidence_id] = _title_of(self.store, evidence_id)
        title, style = resolved or ("…", "evidence--id")
        text = Row()
        text.append(f" {evidence_id}", self.cell_style(style))
        text.append(f"  {title}")
        return text


def _title_of(store, evidence_id: str) -> tuple[str, str]:
    """An evidence row's title and the style of its ID."""
    try:
        return store.resolve(evidence_id).title, "evidence--id"
    except EvidenceError:
        return "(does not resolve in this index)", "evidence--missing"


def idea_detail(idea: ShownIdea, verdict: Verdict) -> Content:
    muted = "$pcscope-muted"
    parts = []
    if verdict.note:  # the engineer's own words first
        parts.append(Content.assemble((f"{NOTE_MARK} Note ", "bold $accent"), verdict.note))
    parts += [
        Content.assemble((idea.title, "bold $primary")),
        Content.assemble(
            (idea.id, muted), "  ", (idea.category, "$pcscope-badge"),
            (" target ", muted), idea.target, (" basis ", muted), idea.basis,
            (" confidence ", muted), f"{idea.confidence:.2f}",
            (" own share ", muted), render.share(idea.weight),
            (" windows ", muted), render.share(idea.window_weight),
            (" upside ", muted), render.share(idea.upside),
            (" verdict ", muted), verdict.verdict),
        Content.assemble(("Claim ", "bold"), idea.claim),
        *([Content.assemble(("Numbers ", "bold"), idea.numbers)] if idea.numbers else []),
        *([Content.assemble(("Checks passed", "bold"), *(f"\n· {c}" for c in idea.checks))]
          if idea.checks else []),
        Content.assemble(("Recommendation ", "bold"), idea.recommendation),
        Content.assemble(("PCs ", "bold"), (" ".join(idea.pcs), "$pcscope-link")),
    ]
    if idea.mechanisms:
        parts.append(Content.assemble(("Mechanism ", "bold"),
                                      (" ".join(idea.mechanisms), "$pcscope-link")))
    if idea.upside_how:
        parts.append(Content.assemble(("Upside ", muted), idea.upside_how))
    if idea.merged_from:
        parts.append(Content.assemble(("merged from ", muted), " ".join(idea.merged_from)))
    return Content("\n").join(parts)


class FindingsView(Vertical):
    """Ideas list, then the highlighted idea and its evidence links."""

    def __init__(self, store) -> None:
        super().__init__(id="findings-view")
        self.ideas = IdeasList()
        self.detail = Static(Content("No ideas yet — press a or A to analyze."),
                             id="idea-detail")
        self.evidence = EvidenceList(store)

    def compose(self) -> ComposeResult:
        yield self.ideas
        with Vertical(id="idea-panel"):
            with VerticalScroll(id="idea-detail-scroll"):
                yield self.detail
            yield self.evidence

    def on_virtual_list_highlighted(self, event: VirtualList.Highlighted) -> None:
        if event.source is self.ideas:
            event.stop()
            self._draw()

    def on_ideas_list_verdict_changed(self, event: IdeasList.VerdictChanged) -> None:
        self._draw()  # the screen also hears it (bubbling) and stores it

    def on_ideas_list_detail_scrolled(self, event: IdeasList.DetailScrolled) -> None:
        event.stop()
        scroll = self.query_one("#idea-detail-scroll", VerticalScroll)
        scroll.scroll_relative(y=event.lines, animate=False)

    def _draw(self) -> None:
        idea = self.ideas.idea
        if idea is None:
            self.detail.update(Content("No ideas yet — press a or A to analyze."))
            self.evidence.set_ids([])
            return
        self.detail.update(idea_detail(idea, self.ideas.verdict_of(idea.id)))
        links = idea.evidence_links
        if self.evidence.ids != links:
            self.evidence.set_ids(links)
