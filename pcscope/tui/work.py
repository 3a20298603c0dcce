"""Background work: every disk, index, search or model task runs in a worker thread.

``in_thread`` starts one; if it raises, a ``WorkFailed`` message goes to the app, whose
single handler decides what the user sees (Textual's own worker messages do not bubble,
so without this each widget would need its own error handling). A task run on a thread of
its own (the session store's writes, ``surface``) reports its failure the same way.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

from textual.dom import DOMNode
from textual.message import Message
from textual.worker import Worker


class WorkFailed(Message):
    def __init__(self, name: str, group: str, error: BaseException) -> None:
        super().__init__()
        self.name = name
        self.group = group
        self.error = error


def in_thread(node: DOMNode, fn: Callable[[], Any], *, name: str, group: str,
              exclusive: bool = False) -> Worker:
    """Run ``fn`` in a worker thread owned by ``node``; its result arrives as the worker's
    ``StateChanged`` (SUCCESS) on ``node``, a failure as ``WorkFailed`` on the app."""
    app = node.app

    def guarded() -> Any:
        try:
            return fn()
        except Exception as exc:
            app.post_message(WorkFailed(name, group, exc))  # thread-safe
            raise

    return node.run_worker(guarded, thread=True, exit_on_error=False, name=name, group=group,
                           exclusive=exclusive)


def surface(node: DOMNode, done: Future, *, name: str, group: str) -> None:
    """A task submitted to a thread of its own (the session store's): when it fails, a
    ``WorkFailed`` message goes to the app, as from ``in_thread``; nothing waits for it."""
    app = node.app

    def finished(future: Future) -> None:  # on the task's thread
        error = None if future.cancelled() else future.exception()
        if error is not None:
            app.post_message(WorkFailed(name, group, error))  # thread-safe

    done.add_done_callback(finished)
