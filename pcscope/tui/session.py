"""The explorer's per-profile state, kept in the engine's session store (SQLite).

What comes back on reopen: the pane, the open window and PC, the hot list's sort and
filters, the search query, every idea verdict and note, and the latest recorded run's
ideas and calls; a run another process records meanwhile (``pcscope analyze``, an agent
through ``pcscope mcp``) is found by ``newer_run``. The store's connection lives on one
private thread: the UI thread hands it writes and never waits on disk (SQLite in WAL
mode commits each write whole, so a crash keeps the last good state).
"""

from __future__ import annotations

from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pcscope.core.engine.session_store import SessionStore, default_path
from pcscope.core.triage import Verdict

VIEW_KEY = "tui.view"
CLOSE_WAIT = 2.0  # seconds the exit waits for pending writes
RunKey = tuple[int, float | None]  # (run, finish time): a run finished again is new again


def run_key(info: Any) -> RunKey:
    return info.id, info.finished


@dataclass(frozen=True)
class ViewState:
    pane: str = "hot"
    pc: int | None = None  # the assembly's PC (its window is the one open)
    sort: str = "weight"
    filter: str = ""
    category: str | None = None
    query: str = ""
    regex: bool = False

    @classmethod
    def from_json(cls, data: Any) -> ViewState:
        if not isinstance(data, dict):
            return cls()
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        try:
            return cls(**known)
        except TypeError:
            return cls()


@dataclass
class Restored:
    view: ViewState = field(default_factory=ViewState)
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    run: Any = None  # engine RunInfo of the latest recorded run
    ideas: list[dict] = field(default_factory=list)
    calls: list = field(default_factory=list)  # engine CallRecords of that run


class UiSession:
    def __init__(self, path: Path, fresh: bool = False) -> None:
        self.path = path
        self.fresh = fresh    # move a damaged store aside (the user asked with --fresh)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pcscope-session")
        self._store: SessionStore | None = None
        self._last_view: ViewState | None = None

    @classmethod
    def for_profile(cls, index_root: Path, profile: Path, fresh: bool = False) -> UiSession:
        return cls(default_path(index_root, profile), fresh)

    def _db(self) -> SessionStore:
        if self._store is None:  # created on the session thread, used only there
            self._store = SessionStore(self.path, fresh=self.fresh)
        return self._store

    def _submit(self, fn, *args) -> Future:
        return self._pool.submit(fn, *args)

    # -- reading -------------------------------------------------------------------------
    def load_later(self) -> Future[Restored]:
        """What the session restores, read on the session's thread meanwhile."""
        return self._submit(self._load)

    def _load(self) -> Restored:
        db = self._db()
        restored = Restored(view=ViewState.from_json(db.get_state(VIEW_KEY)))
        restored.verdicts = {idea: Verdict(v, note) for idea, (v, note) in db.verdicts().items()}
        return self._latest(restored, None) or restored

    def newer_run(self, seen: RunKey | None) -> Restored | None:
        """The latest recorded run when it is not ``seen`` (another process, e.g. an agent
        through `pcscope mcp`, may have recorded it since), else None. From a worker thread:
        it waits."""
        return self._submit(self._latest, Restored(), seen).result()

    def _latest(self, into: Restored, seen: RunKey | None) -> Restored | None:
        db = self._db()
        runs = [r for r in db.runs() if r.status != "running"]
        if not runs or run_key(runs[-1]) == seen:
            return None
        into.run = runs[-1]
        into.ideas = db.ideas(into.run.id)
        into.calls = db.calls(into.run.id)
        return into

    def call_of(self, call_id: str) -> Future:
        """One recorded call (its raw output included), without blocking."""
        return self._submit(lambda: self._db().call(call_id))

    # -- writing (from the UI thread: never waits; the caller surfaces a failed write) -----
    def save_view(self, view: ViewState) -> Future | None:
        """The write of ``view``; None when it is the view last saved."""
        if view == self._last_view:
            return None
        self._last_view = view
        return self._submit(lambda: self._db().set_state(VIEW_KEY, asdict(view)))

    def save_verdict(self, idea: str, verdict: Verdict) -> Future:
        return self._submit(lambda: self._db().set_verdict(idea, verdict.verdict, verdict.note))

    def close(self) -> None:
        def finish() -> None:
            if self._store is not None:
                self._store.close()
                self._store = None

        done = self._submit(finish)
        try:
            done.result(timeout=CLOSE_WAIT)
        finally:
            self._pool.shutdown(wait=False)
