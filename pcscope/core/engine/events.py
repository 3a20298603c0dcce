"""The orchestrator's live event stream: typed events, published to any number of subscribers.

A subscriber reads the events as an async iterator on its own event loop, which may run in
another thread than the orchestrator (a Textual app, say)::

    subscription = bus.subscribe()          # call it inside the consumer's running loop
    async for event in subscription:        # ends after the bus is closed (run done)
        if isinstance(event, CallFinished): ...

``subscribe(replay=True)`` first yields every event published so far (a pane opened
mid-run). Code with no event loop of its own can ``bus.listen(callback)`` instead: the
callback runs in the publisher's thread, so hand it on (e.g. ``App.call_from_thread``).
Publishing never blocks and never drops: each subscriber has its own unbounded queue.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any


@dataclass(frozen=True, kw_only=True)
class Event:
    run: int
    seq: int = 0
    at: float = field(default_factory=time.time)

    @property
    def kind(self) -> str:
        return _KINDS[type(self)]


@dataclass(frozen=True, kw_only=True)
class WaveStarted(Event):
    wave: int
    calls: int


@dataclass(frozen=True, kw_only=True)
class CallQueued(Event):
    call: str
    wave: int
    parent: str | None
    title: str
    given: tuple[str, ...]


@dataclass(frozen=True, kw_only=True)
class CallStarted(Event):
    call: str


@dataclass(frozen=True, kw_only=True)
class ToolUsed(Event):
    call: str
    tool: str
    input: dict[str, Any]
    ids: tuple[str, ...]
    error: str | None


@dataclass(frozen=True, kw_only=True)
class CallText(Event):
    """Streamed text, status or tool input from a backend while the call runs."""

    call: str
    text: str
    channel: str = "text"  # "text" | "status" | "tool_use"


@dataclass(frozen=True, kw_only=True)
class CallFinished(Event):
    call: str
    status: str  # ok | rejected | failed | cancelled
    accepted: tuple[str, ...]  # finding IDs
    rejected: int
    input_tokens: int
    output_tokens: int
    seconds: float
    error: str | None = None


@dataclass(frozen=True, kw_only=True)
class FindingRejected(Event):
    call: str
    reason: str
    title: str | None


@dataclass(frozen=True, kw_only=True)
class IdeasMerged(Event):
    """The gatekeeper made one idea of several findings (published as it happens, after
    each wave), and why they are one: same mechanism, same code shape, or a shared PC."""

    idea: str
    merged_from: tuple[str, ...]
    wave: int = 0
    reason: str = ""


@dataclass(frozen=True, kw_only=True)
class QuestionAsked(Event):
    """An open question the gatekeeper sends one wave deeper, as the call that answers it."""

    wave: int  # the wave that asked
    question: str
    finding: str
    idea: str
    call: str  # the deeper call


@dataclass(frozen=True, kw_only=True)
class IdeasUpdated(Event):
    """The ranked ideas after a wave (report-form dicts, best first)."""

    ideas: tuple[dict[str, Any], ...]


@dataclass(frozen=True, kw_only=True)
class BudgetReached(Event):
    budget: str  # max-calls | max-tokens | max-seconds
    limit: float
    used: float


@dataclass(frozen=True, kw_only=True)
class RunDone(Event):
    stop_reason: str  # complete | max-calls | max-tokens | max-seconds | cancelled
    ideas: int
    calls: int


_KINDS: dict[type, str] = {
    WaveStarted: "wave_started",
    CallQueued: "call_queued",
    CallStarted: "call_started",
    ToolUsed: "tool_used",
    CallText: "call_text",
    CallFinished: "call_finished",
    FindingRejected: "finding_rejected",
    IdeasMerged: "ideas_merged",
    QuestionAsked: "question_asked",
    IdeasUpdated: "ideas_updated",
    BudgetReached: "budget_reached",
    RunDone: "run_done",
}

_CLOSED = object()


class Subscription:
    """One subscriber's queue, bound to the event loop it was created in."""

    def __init__(self, bus: EventBus, loop: asyncio.AbstractEventLoop) -> None:
        self._bus = bus
        self._loop = loop
        self._queue: asyncio.Queue = asyncio.Queue()

    def push(self, item: object) -> None:
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if here is self._loop:
            self._queue.put_nowait(item)
        elif not self._loop.is_closed():
            self._loop.call_soon_threadsafe(self._queue.put_nowait, item)

    def __aiter__(self) -> Subscription:
        return self

    async def __anext__(self) -> Event:
        item = await self._queue.get()
        if item is _CLOSED:
            raise StopAsyncIteration
        return item

    def close(self) -> None:
        """Stop receiving; a pending ``async for`` ends."""
        self._bus.unsubscribe(self)
        self.push(_CLOSED)


class EventBus:
    """Pub/sub for one run. ``publish`` stamps each event with a sequence number."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subscriptions: list[Subscription] = []
        self._listeners: list[Callable[[Event], None]] = []
        self._history: list[Event] = []
        self._seq = itertools.count(1)
        self._closed = False

    @property
    def history(self) -> list[Event]:
        with self._lock:
            return list(self._history)

    def publish(self, event: Event) -> Event:
        with self._lock:
            stamped = replace(event, seq=next(self._seq))
            self._history.append(stamped)
            subscriptions = list(self._subscriptions)
            listeners = list(self._listeners)
        for subscription in subscriptions:
            subscription.push(stamped)
        for listener in listeners:
            listener(stamped)
        return stamped

    def subscribe(self, *, replay: bool = False,
                  loop: asyncio.AbstractEventLoop | None = None) -> Subscription:
        """An async iterator of events for a consumer running on ``loop`` (default: the
        running loop of the caller)."""
        subscription = Subscription(self, loop or asyncio.get_running_loop())
        with self._lock:
            past = list(self._history) if replay else []
            closed = self._closed
            if not closed:
                self._subscriptions.append(subscription)
        for event in past:
            subscription.push(event)
        if closed:
            subscription.push(_CLOSED)
        return subscription

    def listen(self, callback: Callable[[Event], None]) -> None:
        """Call ``callback(event)`` synchronously in the publisher's thread for each event."""
        with self._lock:
            self._listeners.append(callback)

    def unsubscribe(self, subscription: Subscription) -> None:
        with self._lock:
            if subscription in self._subscriptions:
                self._subscriptions.remove(subscription)

    def close(self) -> None:
        """The run is over: every subscription's iteration ends after the events so far."""
        with self._lock:
            self._closed = True
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription.push(_CLOSED)

