"""Runs the engine's orchestrator for the explorer and feeds its events to the panes.

The run lives in a worker thread with its own asyncio loop (and its own session-store
connection), so a busy backend can never stall the UI. Its events land in a deque from
that thread; a UI timer drains the deque every ``BATCH_SECONDS`` and applies the whole
batch at once — one tree sync, one findings update, one status line — however many
events a burst held. The TUI decides nothing about the analysis: it picks the scope
(the whole hot selection, the highlighted window, or the window of the current PC) and
shows what the engine reports.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from textual.message import Message
from textual.timer import Timer
from textual.worker import Worker, WorkerState

from pcscope.core.ids import hex_pc
from pcscope.core.profile import HotSelection
from pcscope.tui import render
from pcscope.tui.run_model import RunView, from_records
from pcscope.tui.work import in_thread

if TYPE_CHECKING:
    from pcscope.core.engine import events as ev
    from pcscope.tui.screens.main import MainScreen

BATCH_SECONDS = 0.05


@dataclass(frozen=True)
class Scope:
    title: str
    selection: HotSelection | None  # None: the preset's own hot selection


class RunChanged(Message):
    """What the panes show of the analysis now: posted to the screen once per batch of
    engine events (the controller never draws into the panes itself)."""

    def __init__(self, run: RunView, *, restart: str | None = None,
                 changed: frozenset[str] = frozenset(),
                 ideas: tuple[Mapping[str, Any], ...] | None = None,
                 status: str | None = None, calls_badge: str | None = None) -> None:
        super().__init__()
        self.run = run
        self.restart = restart  # a new run: the calls tree starts again with this title
        self.changed = changed  # calls whose detail may need a redraw
        self.ideas = ideas  # report-form ideas, best first (None: unchanged)
        self.status = status
        self.calls_badge = calls_badge


class AnalysisController:
    def __init__(self, screen: MainScreen) -> None:
        self.screen = screen
        self.run = RunView()
        self.run_id: int | None = None
        self._ideas = 0  # ideas the panes were last given
        self._events: deque[ev.Event] = deque()
        self._orchestrator = None
        self._worker: Worker | None = None
        self._timer: Timer | None = None
        self._started = 0.0
        self._cancel = False  # asked before the worker had made the orchestrator

    @property
    def running(self) -> bool:
        return self._worker is not None and self._worker.state in (
            WorkerState.PENDING, WorkerState.RUNNING)

    # -- starting ------------------------------------------------------------------------
    def start_hot(self) -> None:
        self._start(Scope("all hot windows", None))

    def start_windows(self, windows: list[int], title: str | None = None) -> None:
        profile = self.screen.workload.profile
        weight = sum(profile.windows[w].weight for w in windows)
        title = title or ", ".join(profile.windows[w].id for w in windows)
        self._start(Scope(title, HotSelection(list(windows), weight, len(windows), weight)))

    def start_pc(self, pc: int) -> None:
        """A PC is analyzed with its window (the smallest slice the engine plans)."""
        profile = self.screen.workload.profile
        window = int(profile.window[profile.row_of(pc)])
        self.start_windows([window], f"{hex_pc(pc)} in {profile.windows[window].id}")

    def _start(self, scope: Scope) -> None:
        if self.running:
            self.screen.notify("an analysis is running — x cancels it", severity="warning")
            return
        self.run = RunView(model=self.screen.request.model)
        self._events.clear()
        self._orchestrator = None
        self._cancel = False
        self._started = time.monotonic()
        self._ideas = 0
        self._post(restart=f"analysis of {scope.title} · {self.run.model}",
                   status=f" starting analysis of {scope.title}…")
        self._worker = in_thread(self.screen, lambda: self._run(scope), name="analysis",
                                 group="analysis")
        self._timer = self.screen.set_interval(BATCH_SECONDS, self._drain)

    def _run(self, scope: Scope):
        """The worker thread: build the engine objects here (SQLite connections are
        per-thread) and run the orchestrator on this thread's own event loop."""
        from pcscope.core.engine.events import EventBus
        from pcscope.core.engine.orchestrator import Orchestrator
        from pcscope.core.engine.session_store import SessionStore

        request = self.screen.request
        bus = EventBus()
        bus.listen(self._events.append)  # deque.append is thread-safe
        with SessionStore(self.screen.session.path) as store:
            orchestrator = Orchestrator(self.screen.workload, make_backend(request.model),
                                        self.screen.settings, store, bus=bus,
                                        selection=scope.selection)
            self._orchestrator = orchestrator
            if self._cancel:
                orchestrator.cancel()
            return asyncio.run(orchestrator.run())

    def cancel(self) -> None:
        if not self.running:
            return
        self._cancel = True
        if self._orchestrator is not None:
            self._orchestrator.cancel()
        self._post(status=" cancelling… (finished calls are kept)")

    def close(self) -> None:
        """The screen is going: stop the run and the batch timer (no more redraws)."""
        if self._orchestrator is not None:
            self._orchestrator.cancel()
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    # -- the batches ---------------------------------------------------------------------
    def _drain(self) -> None:
        batch = [self._events.popleft() for _ in range(len(self._events))]
        if batch:
            self.apply(batch)
        if not self.running and not self._events:
            self._finish()

    def apply(self, batch: list[ev.Event]) -> None:
        """Fold a batch of events into the run view and redraw each pane once."""
        from pcscope.core.engine.events import IdeasUpdated  # loaded with the run's engine

        changed: set[str] = set()
        ideas = None
        for event in batch:
            self.run.apply(event)
            if getattr(event, "call", None):
                changed.add(event.call)
            if isinstance(event, IdeasUpdated):
                ideas = tuple(event.ideas)
        self.run_id = self.run.run
        self._post(changed=frozenset(changed), ideas=ideas, **self._status(ideas))

    def _finish(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        worker = self._worker
        if worker is None:
            return
        if worker.state == WorkerState.ERROR:  # the app's handler has told the user why
            self._post(status=f" analysis failed: {worker.error}")
            return
        ideas = None
        if worker.state == WorkerState.SUCCESS and worker.result is not None:
            result = worker.result
            self.run_id = result.run
            ideas = tuple(idea.to_json() for idea in result.ideas)
        self._post(ideas=ideas, **self._status(ideas))

    def _post(self, **what: Any) -> None:
        if what.get("ideas") is not None:
            self._ideas = len(what["ideas"])
        self.screen.post_message(RunChanged(self.run, **what))

    def _status(self, ideas: tuple | None = None) -> dict[str, str]:
        """One compact line — calls by state, findings, ideas, merges, tokens, time and
        what the call budget has left — and the calls tab's badge."""
        run = self.run
        counts = run.counts()
        tokens_in, tokens_out = run.tokens()
        seconds = time.monotonic() - self._started
        wave = max(run.waves, default=0)
        accepted, rejected = run.findings()
        count = len(ideas) if ideas is not None else self._ideas
        text = (f" analysis r{run.run or '?'} · {run_state(run, wave, counts)} · "
                f"{calls_summary(counts, len(run.calls))} · findings +{accepted} −{rejected} · "
                f"{render.plural(count, 'idea')} · {render.plural(run.merges(), 'merge')} · "
                f"{render.count(tokens_in)}/{render.count(tokens_out)} tokens · "
                f"{seconds:.1f} s")
        limit = self.screen.settings.max_calls
        if limit is not None and not run.done:
            started = sum(n for s, n in counts.items() if s != "queued")
            text += f" · {max(0, limit - started)} calls left"
        if run.budget:
            text += f" · {run.budget}"
        if self.running:
            text += " · x cancels"
        ran = sum(n for s, n in counts.items()
                  if s not in ("queued", "running", "cancelled", "skipped"))
        return {"status": text, "calls_badge": f"{ran}/{len(run.calls)}" if run.calls else ""}

    # -- a recorded run ------------------------------------------------------------------
    def show_recorded(self, info, ideas: list[dict], records: list) -> None:
        """The latest run of this profile, as the session store kept it."""
        self.run = from_records(info.id, info.model, records)
        self.run_id = info.id
        self._post(restart=f"run r{info.id} · {info.model} · {info.status}",
                   changed=frozenset(self.run.calls), ideas=tuple(ideas),
                   status=f" recorded run r{info.id} ({info.model}, "
                          f"{info.stop_reason or info.status}): "
                          f"{render.plural(len(ideas), 'idea')}, "
                          f"{render.plural(len(records), 'call')} — a / A analyze again")


def run_state(run: RunView, wave: int, counts: dict[str, int]) -> str:
    """How the run stands or how it ended: complete, cancelled, or the budget that stopped it."""
    if not run.done:
        return f"wave {wave} · {counts.get('running', 0)} running"
    reason = run.stop_reason or ""
    if reason in ("complete", "cancelled", "recorded"):
        return reason
    if reason == "coverage":  # every planned call ran; the call bound left candidates out
        return "complete (coverage stop)"
    return f"stopped by {reason}"


def calls_summary(counts: dict[str, int], total: int) -> str:
    """``12 done · 3 skipped · 1 failed of 16 calls``: calls a stop left unrun are skipped,
    not finished."""
    done = sum(n for s, n in counts.items() if s in ("ok", "rejected"))
    parts = [f"{done:,} done"]
    skipped = counts.get("skipped", 0) + counts.get("cancelled", 0)
    if skipped:
        parts.append(f"{skipped:,} skipped")
    if counts.get("failed"):
        parts.append(f"{counts['failed']:,} failed")
    return " · ".join(parts) + f" of {render.plural(total, 'call')}"


def preload_engine() -> None:
    """Import the engine now, off the UI thread and before any analysis: a module's first
    import (pydantic, polars) holds the GIL for a while, and during a run that would be
    felt as a stall of the UI."""
    import pcscope.core.backends.registry  # noqa: F401
    import pcscope.core.engine.orchestrator  # noqa: F401
    import pcscope.core.engine.report  # noqa: F401
    import pcscope.index.query  # noqa: F401


def make_backend(model: str):
    """The engine's backend for a model name (offline, scripted:…, anthropic:<id>,
    replay:<file>)."""
    from pcscope.core.backends.registry import backend_for

    return backend_for(model)
