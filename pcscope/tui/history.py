"""Browser-like navigation history of the assembly pane (back / forward between PCs)."""

from __future__ import annotations

from dataclasses import dataclass, field

LIMIT = 200


@dataclass
class History:
    back_stack: list[int] = field(default_factory=list)
    forward_stack: list[int] = field(default_factory=list)

    def visit(self, current: int | None) -> None:
        """Leaving ``current`` for a new place: it becomes 'back'; 'forward' is dropped."""
        if current is not None:
            self.back_stack.append(current)
            del self.back_stack[:-LIMIT]
        self.forward_stack.clear()

    def back(self, current: int) -> int | None:
        if not self.back_stack:
            return None
        self.forward_stack.append(current)
        return self.back_stack.pop()

    def forward(self, current: int) -> int | None:
        if not self.forward_stack:
            return None
        self.back_stack.append(current)
        return self.forward_stack.pop()
