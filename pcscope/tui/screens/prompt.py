"""A one-line question (go to PC, filter, note, export path): Enter answers, Escape cancels."""

from __future__ import annotations

from collections.abc import Callable

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

Check = Callable[[str], str | None]  # the answer -> an error to show, or None if fine


class PromptScreen(ModalScreen[str | None]):
    BINDINGS = [Binding("escape", "dismiss_none", "Cancel", id="prompt.cancel")]

    def __init__(self, title: str, *, value: str = "", placeholder: str = "",
                 check: Check | None = None) -> None:
        super().__init__(classes="prompt-screen")
        self._title = title
        self._value = value
        self._placeholder = placeholder
        self._check = check
        self._answered = False  # keys typed ahead (Enter Enter) must not dismiss twice

    def compose(self) -> ComposeResult:
        with Vertical(classes="prompt"):
            yield Label(self._title, classes="prompt-title")
            yield Input(self._value, placeholder=self._placeholder, id="prompt-input")
            yield Label("", id="prompt-error", classes="prompt-error")

    def on_mount(self) -> None:
        field = self.query_one(Input)
        field.cursor_blink = False
        field.focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if self._answered:
            return
        answer = event.value.strip()
        error = self._check(answer) if self._check and answer else None
        if error:
            self.query_one("#prompt-error", Label).update(error)
            return
        self._answered = True
        self.dismiss(answer)

    def action_dismiss_none(self) -> None:
        if not self._answered:
            self._answered = True
            self.dismiss(None)
