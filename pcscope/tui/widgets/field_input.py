"""A text field that keeps the keys of a burst (a paste, fast typing, SSH latency) in the
order they were typed.

Textual hands every key to the focused widget's queue as it arrives, and runs the field's
own bindings only when the key has bubbled back up to the app: the keys typed after Enter
or Escape in the same burst would be typed into the field before the binding closed it.
Here the field's own bindings (the keymap's, remapped by the config) act as their key comes
out of the queue, and the keys that reach the field after the focus left it go on to where
the focus is now.
"""

from __future__ import annotations

from textual import events
from textual.widgets import Input


class FieldInput(Input):
    async def on_key(self, event: events.Key) -> None:
        if self.screen.focused is not self:  # (has_focus follows only with the Blur event)
            # Handed here before an earlier key of the burst moved the focus away.
            event.prevent_default()
            event.stop()
            self.app.post_message(events.Key(event.key, event.character))
            return
        action = self._own_action(event.key)
        if action is not None:
            event.prevent_default()
            event.stop()
            await self.run_action(action)

    def _own_action(self, key: str) -> str | None:
        """The action this field itself binds ``key`` to (after the config's keymap)."""
        for node, bindings in self.screen._binding_chain:
            if node is self:
                found = bindings.key_to_bindings.get(key, ())
                return found[0].action if found else None
        return None
