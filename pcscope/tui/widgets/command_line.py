"""The bottom line: the run status, or — while a question is open — a one-line prompt
(go to PC, filter, note, export path), as in vim's command line.

Both share one row on two layers and swap by visibility, which needs no layout pass (a
modal screen would cost two whole-screen redraws: opening it and coming back).
"""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.content import Content
from textual.widgets import Static

from pcscope.tui.keymap import bindings
from pcscope.tui.widgets.keys_in_order import FieldInput

Check = Callable[[str], str | None]  # the answer -> an error to show, or None if fine
Answer = Callable[[str | None], None]  # the answer, or None when cancelled


class CommandInput(FieldInput):
    # Enter answers at once, not through Input's Submitted message: the keys typed after
    # it in the same burst go where the answer took the focus (keys_in_order).
    BINDINGS = bindings("prompt")

    def action_submit(self) -> None:
        self.parent.parent.submit(self.value)  # type: ignore[union-attr]

    def action_cancel(self) -> None:
        self.parent.parent.cancel()  # type: ignore[union-attr]


class CommandLine(Horizontal):
    def __init__(self, idle: str = "") -> None:
        super().__init__(id="command-line")
        self.status = Static(idle, id="run-status")
        self.label = Static("", id="command-prompt")
        self.input = CommandInput(id="command-input", compact=True)
        self._answer: Answer | None = None
        self._check: Check | None = None
        self._return_to = None  # the widget that had the focus before the question

    def compose(self) -> ComposeResult:
        yield self.status
        with Horizontal(id="command-ask"):
            yield self.label
            yield self.input

    def on_mount(self) -> None:
        self.input.cursor_blink = False
        self.query_one("#command-ask").visible = False

    @property
    def asking(self) -> bool:
        return self._answer is not None

    def ask(self, prompt: str, answer: Answer, *, value: str = "",
            check: Check | None = None) -> None:
        """Open the prompt. Called from a key's action, never from a message handler: the
        keys typed after that key in the same burst are the answer only if the prompt has
        the focus before they are taken (keys_in_order)."""
        self._answer, self._check = answer, check
        self._return_to = self.screen.focused
        self.label.update(Content.assemble((f" {prompt}: ", "bold $accent")))
        self.input.value = value
        self.input.cursor_position = len(value)
        self.query_one("#command-ask").visible = True
        self.status.visible = False
        # Now, not queued behind the keys already waiting: those typed after the key that
        # asked (`:` then a PC, in one burst) are the answer.
        self.screen.set_focus(self.input)

    def submit(self, value: str) -> None:
        """Enter: the answer, unless the check finds it wrong (then the prompt stays)."""
        if self._answer is None:  # the question is already answered
            return
        text = value.strip()
        error = self._check(text) if self._check and text else None
        if error:
            self.label.update(Content.assemble((f" {error} ", "bold $error")))
            return
        self._finish(text)

    def cancel(self) -> None:
        if self._answer is not None:
            self._finish(None)

    def _finish(self, text: str | None) -> None:
        answer, self._answer, self._check = self._answer, None, None
        self.query_one("#command-ask").visible = False
        self.status.visible = True
        if self._return_to is not None and self._return_to.is_attached:
            self.screen.set_focus(self._return_to)  # now: the answer may move it on
        answer(text)
