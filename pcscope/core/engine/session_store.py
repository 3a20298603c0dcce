"""The per-profile session store (SQLite): every run, call, finding, set and idea.

SQLite in WAL mode with one transaction per write: a crash mid-run leaves every finished
call on disk and the run marked ``running``, which a rerun can resume (recorded calls whose
plan matches are reused, the rest run) or leave behind and start fresh. The TUI keeps its
per-profile state (selection, cursor, idea verdicts) here too.

Default location: ``<index root>/sessions/<hash of the profile path>.sqlite`` (see
``default_path``); any path can be given.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcscope.core.engine.calls import CallRecord, ToolUse
from pcscope.core.errors import InputError

SCHEMA_VERSION = 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS runs (
    id INTEGER PRIMARY KEY, key TEXT NOT NULL, profile TEXT NOT NULL, model TEXT NOT NULL,
    settings TEXT NOT NULL, status TEXT NOT NULL, stop_reason TEXT,
    started REAL NOT NULL, finished REAL, report TEXT);
CREATE TABLE IF NOT EXISTS calls (
    id TEXT NOT NULL, run INTEGER NOT NULL, seq INTEGER NOT NULL, wave INTEGER NOT NULL,
    parent TEXT, key TEXT NOT NULL, model TEXT NOT NULL, title TEXT NOT NULL,
    status TEXT NOT NULL, given TEXT NOT NULL, brief TEXT NOT NULL, seed TEXT NOT NULL,
    fetched TEXT NOT NULL, tools TEXT NOT NULL, raw TEXT NOT NULL, error TEXT,
    accepted TEXT NOT NULL, rejections TEXT NOT NULL, input_tokens INTEGER NOT NULL,
    output_tokens INTEGER NOT NULL, cached_tokens INTEGER NOT NULL, seconds REAL NOT NULL,
    started REAL, finished REAL, cache_write_tokens INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run, id));
CREATE INDEX IF NOT EXISTS calls_seq ON calls (run, seq);
CREATE TABLE IF NOT EXISTS findings (
    id TEXT NOT NULL, run INTEGER NOT NULL, call TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run, id));
CREATE TABLE IF NOT EXISTS sets (
    run INTEGER NOT NULL, name TEXT NOT NULL, call TEXT NOT NULL, ids TEXT NOT NULL,
    PRIMARY KEY (run, name));
CREATE TABLE IF NOT EXISTS notes (
    run INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (run, id));
CREATE TABLE IF NOT EXISTS ideas (
    run INTEGER NOT NULL, rank INTEGER NOT NULL, id TEXT NOT NULL, body TEXT NOT NULL,
    PRIMARY KEY (run, id));
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS verdicts (
    idea TEXT PRIMARY KEY, verdict TEXT NOT NULL, note TEXT NOT NULL, updated REAL NOT NULL);
"""


class SessionError(InputError):
    """The session file cannot be used: damaged (``damaged``: --fresh moves it aside),
    unwritable or on a full disk."""

    def __init__(self, path: Path, what: str, damaged: bool = False) -> None:
        super().__init__(str(path), None, what)
        self.damaged = damaged

    @classmethod
    def of(cls, path: Path, exc: sqlite3.Error) -> SessionError:
        text = str(exc).lower()
        if "not a database" in text or "malformed" in text:
            return cls(path, "session store is corrupt; rerun with --fresh to move it aside "
                       "and start a new one", damaged=True)
        if "full" in text:
            return cls(path, "session store cannot be written: disk full")
        if "i/o" in text:   # what SQLite says when a write fails (EFBIG, ENOSPC, EIO)
            return cls(path, "session store cannot be written: disk I/O error (disk full?)")
        if "readonly" in text or "unable to open" in text:
            return cls(path, f"session store is unwritable ({exc})")
        return cls(path, f"session store error ({exc})")


def default_path(index_root: Path, profile_path: str | Path) -> Path:
    """One store per profile file, beside the indexes (it outlives index rebuilds)."""
    resolved = str(Path(profile_path).resolve())
    digest = hashlib.blake2b(resolved.encode(), digest_size=8).hexdigest()
    return Path(index_root) / "sessions" / f"{digest}.sqlite"


@dataclass(frozen=True)
class RunInfo:
    id: int
    key: str
    profile: str
    model: str
    settings: dict[str, Any]
    status: str  # running | done | stopped | cancelled
    stop_reason: str | None
    started: float
    finished: float | None
    calls: int


class SessionStore:
    """One connection per store object; open one per thread (SQLite connections are not
    shared across threads)."""

    def __init__(self, path: str | Path, *, fresh: bool = False) -> None:
        """Open (or create) the store. A damaged file is an error naming it; with ``fresh``
        it is moved aside (``<name>.damaged-<time>``) and a new store started instead."""
        self.path = Path(path)
        try:
            self._db = self._open()
        except SessionError as exc:
            if not (fresh and exc.damaged):
                raise
            self.path.replace(self.path.with_name(f"{self.path.name}.damaged-{int(time.time())}"))
            for suffix in ("-wal", "-shm"):
                Path(f"{self.path}{suffix}").unlink(missing_ok=True)
            self._db = self._open()

    def _open(self) -> sqlite3.Connection:
        if self.path.is_dir():
            raise SessionError(self.path, "is a directory, not a session file")
        with self._errors():
            self.path.parent.mkdir(parents=True, exist_ok=True)
            db = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
            try:
                db.execute("PRAGMA journal_mode=WAL")
                db.execute("PRAGMA synchronous=NORMAL")
                db.executescript(_SCHEMA)
                columns = {r[1] for r in db.execute("PRAGMA table_info(calls)")}
                # A store written before cache writes were counted apart gains the column.
                if "cache_write_tokens" not in columns:
                    db.execute("ALTER TABLE calls ADD COLUMN cache_write_tokens INTEGER NOT "
                               "NULL DEFAULT 0")
                db.execute("INSERT OR IGNORE INTO meta VALUES ('schema', ?)",
                           (str(SCHEMA_VERSION),))
                db.execute("SELECT COUNT(*) FROM runs").fetchone()
            except BaseException:
                db.close()
                raise
        return db

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """SQLite's and the OS's errors as a SessionError naming the file and the cause."""
        try:
            yield
        except sqlite3.Error as exc:
            raise SessionError.of(self.path, exc) from None
        except OSError as exc:
            raise SessionError(self.path, f"cannot write ({exc.strerror or exc})") from None

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> SessionStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @contextmanager
    def _tx(self) -> Iterator[sqlite3.Connection]:
        with self._errors():
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                if self._db.in_transaction:
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # -- runs ----------------------------------------------------------------------------
    def start_run(self, key: str, profile: str, model: str, settings: dict[str, Any]) -> int:
        with self._tx() as db:
            cur = db.execute(
                "INSERT INTO runs (key, profile, model, settings, status, started) "
                "VALUES (?, ?, ?, ?, 'running', ?)",
                (key, profile, model, json.dumps(settings, sort_keys=True), time.time()),
            )
            return int(cur.lastrowid)

    def reopen_run(self, run: int) -> None:
        with self._tx() as db:
            db.execute("UPDATE runs SET status = 'running', finished = NULL WHERE id = ?", (run,))

    def finish_run(self, run: int, status: str, stop_reason: str, report: dict | None) -> None:
        with self._tx() as db:
            db.execute(
                "UPDATE runs SET status = ?, stop_reason = ?, finished = ?, report = ? "
                "WHERE id = ?",
                (status, stop_reason, time.time(),
                 json.dumps(report) if report is not None else None, run),
            )

    def runs(self) -> list[RunInfo]:
        rows = self._db.execute(
            "SELECT r.id, r.key, r.profile, r.model, r.settings, r.status, r.stop_reason, "
            "r.started, r.finished, (SELECT COUNT(*) FROM calls c WHERE c.run = r.id) "
            "FROM runs r ORDER BY r.id"
        ).fetchall()
        return [RunInfo(r[0], r[1], r[2], r[3], json.loads(r[4]), r[5], r[6], r[7], r[8], r[9])
                for r in rows]

    def run(self, run: int) -> RunInfo | None:
        return next((r for r in self.runs() if r.id == run), None)

    def resumable(self, key: str) -> RunInfo | None:
        """The latest run with this key that did not finish (crashed, cancelled or stopped
        by a budget)."""
        candidates = [r for r in self.runs() if r.key == key and r.status != "done"]
        return candidates[-1] if candidates else None

    def report(self, run: int) -> dict | None:
        row = self._db.execute("SELECT report FROM runs WHERE id = ?", (run,)).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    # -- calls ---------------------------------------------------------------------------
    def save_call(self, record: CallRecord, seq: int) -> None:
        self.save_calls([(record, seq)])

    def save_calls(self, records: list[tuple[CallRecord, int]]) -> None:
        """Insert or update calls (with their order in the run) in one transaction."""
        with self._tx() as db:
            db.executemany(
                "INSERT OR REPLACE INTO calls VALUES "
                "(?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [_row(record, seq) for record, seq in records],
            )

    def calls(self, run: int | None = None) -> list[CallRecord]:
        if run is None:
            rows = self._db.execute("SELECT * FROM calls ORDER BY run, seq").fetchall()
        else:
            rows = self._db.execute(
                "SELECT * FROM calls WHERE run = ? ORDER BY seq", (run,)).fetchall()
        return [_call_of(row) for row in rows]

    def call(self, call_id: str, run: int | None = None) -> CallRecord | None:
        """A call of ``run``, or of the latest run that has this call ID."""
        if run is None:
            row = self._db.execute("SELECT * FROM calls WHERE id = ? ORDER BY run DESC LIMIT 1",
                                   (call_id,)).fetchone()
        else:
            row = self._db.execute("SELECT * FROM calls WHERE id = ? AND run = ?",
                                   (call_id, run)).fetchone()
        return _call_of(row) if row else None

    # -- findings, sets, notes, ideas ----------------------------------------------------
    def save_findings(self, run: int, call: str, findings: dict[str, dict]) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO findings VALUES (?, ?, ?, ?)",
                           [(fid, run, call, json.dumps(body)) for fid, body in findings.items()])

    def findings(self, run: int) -> dict[str, dict]:
        rows = self._db.execute(
            "SELECT id, body FROM findings WHERE run = ? ORDER BY rowid", (run,)).fetchall()
        return {r[0]: json.loads(r[1]) for r in rows}

    def save_set(self, run: int, name: str, call: str, ids: list[str]) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO sets VALUES (?, ?, ?, ?)",
                       (run, name, call, json.dumps(ids)))

    def sets(self, run: int) -> dict[str, tuple[str, list[str]]]:
        rows = self._db.execute(
            "SELECT name, call, ids FROM sets WHERE run = ? ORDER BY rowid", (run,)).fetchall()
        return {r[0]: (r[1], json.loads(r[2])) for r in rows}

    def save_notes(self, run: int, notes: list[dict]) -> None:
        with self._tx() as db:
            db.executemany("INSERT OR REPLACE INTO notes VALUES (?, ?, ?)",
                           [(run, n["id"], json.dumps(n)) for n in notes])

    def notes(self, run: int) -> list[dict]:
        rows = self._db.execute(
            "SELECT body FROM notes WHERE run = ? ORDER BY rowid", (run,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    def save_ideas(self, run: int, ideas: list[dict]) -> None:
        with self._tx() as db:
            db.execute("DELETE FROM ideas WHERE run = ?", (run,))
            db.executemany("INSERT INTO ideas VALUES (?, ?, ?, ?)",
                           [(run, rank, idea["id"], json.dumps(idea))
                            for rank, idea in enumerate(ideas, 1)])

    def ideas(self, run: int) -> list[dict]:
        rows = self._db.execute(
            "SELECT body FROM ideas WHERE run = ? ORDER BY rank", (run,)).fetchall()
        return [json.loads(r[0]) for r in rows]

    # -- the explorer's state ------------------------------------------------------------
    def set_state(self, key: str, value: Any) -> None:
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO state VALUES (?, ?)", (key, json.dumps(value)))

    def get_state(self, key: str, default: Any = None) -> Any:
        row = self._db.execute("SELECT value FROM state WHERE key = ?", (key,)).fetchone()
        return json.loads(row[0]) if row else default

    def set_verdict(self, idea: str, verdict: str, note: str = "") -> None:
        """An engineer's triage of an idea (e.g. accepted / rejected / open) and a note."""
        with self._tx() as db:
            db.execute("INSERT OR REPLACE INTO verdicts VALUES (?, ?, ?, ?)",
                       (idea, verdict, note, time.time()))

    def verdicts(self) -> dict[str, tuple[str, str]]:
        rows = self._db.execute("SELECT idea, verdict, note FROM verdicts").fetchall()
        return {r[0]: (r[1], r[2]) for r in rows}


def _row(record: CallRecord, seq: int) -> tuple:
    return (record.id, record.run, seq, record.wave, record.parent, record.key, record.model,
            record.title, record.status, json.dumps(record.given), record.brief,
            json.dumps(record.seed, sort_keys=True), json.dumps(record.fetched),
            json.dumps(record.tools_json()), record.raw, record.error,
            json.dumps(record.accepted), json.dumps(record.rejections), record.input_tokens,
            record.output_tokens, record.cached_tokens, record.seconds, record.started,
            record.finished, record.cache_write_tokens)


def _call_of(row: tuple) -> CallRecord:
    (cid, run, _seq, wave, parent, key, model, title, status, given, brief, seed, fetched,
     tools, raw, error, accepted, rejections, inp, out, cached, seconds, started,
     finished, written) = row
    return CallRecord(
        id=cid, run=run, wave=wave, parent=parent, key=key, model=model, title=title,
        status=status, given=json.loads(given), brief=brief, seed=json.loads(seed),
        fetched=json.loads(fetched), tools=[ToolUse(**t) for t in json.loads(tools)],
        raw=raw, error=error, accepted=json.loads(accepted),
        rejections=json.loads(rejections), input_tokens=inp, output_tokens=out,
        cached_tokens=cached, cache_write_tokens=written, seconds=seconds, started=started,
        finished=finished,
    )
