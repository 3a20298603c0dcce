"""The search pane: a query (Tantivy syntax, or a regex over the disassembly with F3),
its hits by samples, and Enter / n / N to visit them in the assembly pane.

The query runs in a worker thread against the workload's text index; a newer query
replaces a running one, Escape drops it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical
from textual.message import Message
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from pcscope.core.errors import PcscopeError
from pcscope.core.ids import hex_pc, parse_pc
from pcscope.core.workload import Workload
from pcscope.tui import render
from pcscope.tui.keymap import bindings_of
from pcscope.tui.widgets.keys_in_order import FieldInput
from pcscope.tui.widgets.virtual_list import Row, VirtualList
from pcscope.tui.work import in_thread

if TYPE_CHECKING:
    from pcscope.core.queries import Queries

LIMIT = 1000  # hits fetched per query (the index reports the total)


@dataclass(frozen=True)
class Hit:
    pc: int
    asm: str
    function: str
    samples: int


@dataclass(frozen=True)
class Outcome:
    query: str
    regex: bool
    hits: list[Hit]
    total: int
    truncated: bool
    error: str | None = None  # a query the index refused (shown in the pane, not a crash)


def run_query(engine: Queries, query: str, regex: bool) -> Outcome:
    """Ask the index's query engine (in a worker thread: the first search may build the
    Tantivy index, the first regex the lower-cased text column)."""
    try:
        result = engine.regex(query, "asm", LIMIT) if regex else engine.search(query, LIMIT)
    except (PcscopeError, ValueError) as exc:
        return Outcome(query, regex, [], 0, False, str(exc))
    hits = [Hit(parse_pc(h.pc), h.asm, h.function or "", h.samples) for h in result.hits]
    return Outcome(query, regex, hits, result.total, result.truncated)


class ResultsList(VirtualList):
    BINDINGS = bindings_of("search.open", "search.regex")
    COMPONENT_CLASSES = VirtualList.COMPONENT_CLASSES | {"search--pc", "search--samples",
                                                        "search--function"}

    def __init__(self) -> None:
        super().__init__(id="search-results")
        self.hits: list[Hit] = []

    def set_hits(self, hits: list[Hit]) -> None:
        self.hits = hits
        self.reset(len(hits))

    def action_open(self) -> None:
        self.action_select()

    def action_toggle_regex(self) -> None:
        self.parent.action_toggle_regex()  # type: ignore[union-attr]

    def row_text(self, index: int, width: int) -> Row:
        hit = self.hits[index]
        text = Row()
        text.append(f"{hex_pc(hit.pc):>12} ", self.cell_style("search--pc"))
        text.append(f"{render.count(hit.samples):>6} ", self.cell_style("search--samples"))
        text.append(f"{hit.asm:<28} ")
        text.append(hit.function, self.cell_style("search--function"))
        return text


class QueryInput(FieldInput):
    # Enter, Escape and Down move the focus to the hits at once: the keys typed after them
    # in the same burst go to the hits (keys_in_order).
    BINDINGS = bindings_of("search.regex", "search.results", "search.cancel")

    def action_toggle_regex(self) -> None:
        self.parent.parent.action_toggle_regex()  # type: ignore[union-attr]

    def action_focus_results(self) -> None:
        self.screen.set_focus(self.parent.parent.results)  # type: ignore[union-attr]

    def action_submit(self) -> None:
        self.parent.parent.enter(self.value)  # type: ignore[union-attr]

    def action_cancel(self) -> None:
        self.screen.action_cancel()  # type: ignore[attr-defined]


class SearchView(Vertical):
    class Results(Message):
        def __init__(self, hits: list[Hit], summary: str) -> None:
            super().__init__()
            self.hits = hits
            self.summary = summary

    class Chosen(Message):
        def __init__(self, pc: int) -> None:
            super().__init__()
            self.pc = pc

    def __init__(self, workload: Workload) -> None:
        super().__init__(id="search-view")
        self.workload = workload
        self.input = QueryInput(placeholder="mnemonic:ldaxr   function:memcpy   (F3: regex)",
                                id="search-input")
        self.mode = Static("query", id="search-mode")
        self.results = ResultsList()
        self.regex = False
        self.query_text = ""
        self._worker: Worker | None = None

    def compose(self) -> ComposeResult:
        with Horizontal(id="search-bar"):
            yield self.mode
            yield self.input
        yield self.results

    def on_mount(self) -> None:
        self.input.cursor_blink = False
        # After the first frame the Tantivy index is opened (or built, when `pcscope index`
        # has not) in the background, so a first search need not wait for it.
        self.call_after_refresh(self._prepare_index)

    def _prepare_index(self) -> None:
        in_thread(self, lambda: self.workload.text, name="search index", group="search-index")

    @property
    def busy(self) -> bool:
        return self._worker is not None and self._worker.state in (
            WorkerState.PENDING, WorkerState.RUNNING)

    def restore(self, query: str, regex: bool) -> None:
        self.regex = regex
        self.mode.update("regex" if regex else "query")
        if query:
            self.input.value = query
            self.submit(query)

    def action_toggle_regex(self) -> None:
        self.regex = not self.regex
        self.mode.update("regex" if self.regex else "query")
        if self.query_text:
            self.submit(self.query_text)

    def enter(self, value: str) -> None:
        """Enter is the one explicit step from the query to its hits: the focus moves
        now, never when the (background) search finishes."""
        if value.strip():
            self.submit(value.strip())
            self.screen.set_focus(self.results)

    def submit(self, query: str) -> None:
        self.query_text = query
        self.results.set_hits([])
        building = "" if self.workload.text_ready else " (building the search index)"
        self.post_message(self.Results([], f"searching…{building}"))
        regex = self.regex
        self._worker = in_thread(self, lambda: run_query(self.workload.queries, query, regex),
                                 name="search", group="search", exclusive=True)

    def cancel(self) -> None:
        if self._worker is not None:
            self._worker.cancel()
            self.post_message(self.Results([], "cancelled"))

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        if event.worker is not self._worker or event.state != WorkerState.SUCCESS:
            return
        outcome: Outcome = event.worker.result
        self.results.set_hits(outcome.hits)
        more = f" of {outcome.total:,}" if outcome.truncated else ""
        summary = f"{len(outcome.hits):,}{more} hits · {'regex' if outcome.regex else 'query'}"
        if outcome.error:
            summary = f"error: {outcome.error}"
        self.post_message(self.Results(outcome.hits, summary))

    def on_virtual_list_selected(self, event: VirtualList.Selected) -> None:
        if event.source is self.results:
            event.stop()
            self.post_message(self.Chosen(self.results.hits[event.index].pc))
