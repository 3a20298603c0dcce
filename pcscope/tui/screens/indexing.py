"""The first screen: open (or build) the index in a worker thread and show its progress.

An already-indexed profile reopens as memory maps in a fraction of a second; a new one
shows each step as the index builder reports it. Escape stops the build: the builder's
progress callback raises, the half-written build folder is removed, the last good index
(if any) is untouched, and the explorer quits.
"""

from __future__ import annotations

import threading
import time

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Static

from pcscope.tui.launch import OpenRequest, Prepared, prepare
from pcscope.tui.work import in_thread


class IndexingCancelled(Exception):
    """Raised inside the builder's progress callback when the user pressed Escape."""


class IndexingScreen(Screen):
    BINDINGS = [Binding("escape,x", "cancel", "Cancel", id="indexing.cancel")]

    class Opened(Message):
        def __init__(self, prepared: Prepared) -> None:
            super().__init__()
            self.prepared = prepared

    class Step(Message):
        def __init__(self, text: str) -> None:
            super().__init__()
            self.text = text

    def __init__(self, request: OpenRequest) -> None:
        super().__init__(classes="indexing-screen")
        self.request = request
        self._cancelled = threading.Event()
        self._started = time.monotonic()
        self._steps: list[str] = []

    def compose(self) -> ComposeResult:
        with Vertical(classes="indexing"):
            yield Static(Content.assemble(
                ("pcscope", "bold $primary"), f"  opening {self.request.inputs.profile.name}"),
                id="indexing-title")
            yield Static("", id="indexing-steps")
            yield Static(Content.assemble(("Escape cancels", "$pcscope-muted")),
                         id="indexing-hint")

    def on_mount(self) -> None:
        self.set_interval(1.0, self._tick)
        in_thread(self, self._open, name="opening the index", group="indexing")

    def _open(self) -> Prepared:
        def progress(text: str) -> None:
            if self._cancelled.is_set():
                raise IndexingCancelled()
            self.post_message(self.Step(text))

        prepared = prepare(self.request, progress)
        self.post_message(self.Opened(prepared))
        return prepared

    def on_indexing_screen_step(self, event: Step) -> None:
        self._steps = [*self._steps[-8:], event.text]
        self._draw()

    def _tick(self) -> None:
        self._draw()

    def _draw(self) -> None:
        elapsed = time.monotonic() - self._started
        lines = [Content(f"  {step}") for step in self._steps]
        lines.append(Content.assemble((f"  {elapsed:.0f} s", "$pcscope-muted")))
        self.query_one("#indexing-steps", Static).update(Content("\n").join(lines))

    def action_cancel(self) -> None:
        self._cancelled.set()
        self.app.exit(return_code=130, message="pcscope: indexing cancelled")
