"""The explorer's widgets: one module per pane (plus the virtual list they share)."""
