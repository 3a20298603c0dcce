"""Keys answered in the order they were typed, by the widget that has the focus.

Textual hands every key to the focused widget's queue as it arrives, and answers the key's
binding only once the key has bubbled back up to the app. Keys that arrive in one burst (a
paste, fast typing, SSH latency) are all handed to the widget focused when they arrived:
after a key that moves the focus (/ : f i, a pane number, Enter, Escape) the keys behind it
would be typed into a closed field, or taken as commands of a list instead of text.

Here the focused widget answers each key as it comes out of its queue, with the app's own
lookup (focused widget first, then its pane, the screen, the app; the config's keymap and
``check_action`` applied), and a key that reaches it after an earlier key moved the focus
away goes back to the app, which hands it to the new focus. So every action that moves the
focus moves it at once (``Screen.set_focus``, ``App.push_screen``), never through
``Widget.focus`` or a message, which would act after the keys behind it.
"""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input


class KeysInOrder:
    """Mixin of a focusable widget whose ``on_key`` answers each key's binding now.

    Listed before the Textual base, so that it meets the key before the base's own
    handler (Input's typing). A plain class, not a ``Widget``: Textual takes a widget's
    CSS type names and default CSS through its first ``DOMNode`` base only."""

    def types_key(self, event: events.Key) -> bool:
        """Whether the widget types ``event`` itself (a field's printable keys)."""
        return False

    async def on_key(self, event: events.Key) -> None:
        assert isinstance(self, Widget)  # mixed into widgets only
        if _handed_back(self, event) or self.types_key(event):
            return
        if await _bound(self, event):
            event.prevent_default()
            event.stop()


class FieldInput(KeysInOrder, Input):
    """A text field: printable keys are typed into it, the others answered in order."""

    def types_key(self, event: events.Key) -> bool:
        return event.is_printable


def _handed_back(widget: Widget, event: events.Key) -> bool:
    """A key handed to ``widget`` before an earlier key of its burst moved the focus away
    goes back to the app, which hands it to where the focus is now."""
    if widget.app.screen is widget.screen and widget.screen.focused is widget:
        return False
    event.prevent_default()
    event.stop()
    key = events.Key(event.key, event.character)
    screen = widget.app.screen
    if screen.focused is None and screen is not widget.screen:
        # A screen pushed by an earlier key (the command palette): its field takes the
        # focus once it is mounted, after its first refresh.
        screen.call_after_refresh(widget.app.post_message, key)
    else:
        widget.app.post_message(key)
    return True


async def _bound(widget: Widget, event: events.Key) -> bool:
    # The app's binding lookup (private in Textual 8): the same one the key would meet
    # when it bubbled up to the app, only made before the next key is taken.
    return await widget.app._check_bindings(event.key)
