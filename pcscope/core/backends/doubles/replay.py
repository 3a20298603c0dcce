"""``--record FILE`` and ``--model replay:FILE``: a run's model traffic, stored and replayed.

The record is JSON Lines (gzip when the name ends in ``.gz``): a header line, then one
line per request body — the exact body sent (the API key is a header, never in it) and
the turn that came back after retries (text, raw tool input, stop reason, usage of every
attempt), or the failure that ended it. Token counts from ``count_tokens`` are stored too.
Lines are keyed by the SHA-256 of the canonical body without its ``model`` field (the
replaying backend does not need to know the model). They are appended as exchanges
complete (a crash keeps everything so far) and sorted by key when the backend is closed,
so recording the same run twice gives the same bytes.

Replay runs the same tool-use loop with the same local tools, so every request body must
come out identical: a body the record does not hold is a clear error naming the call and
turn (the inputs, tools, settings or ``--redact`` differ from the recorded run).
"""

from __future__ import annotations

import gzip
import json
from collections import defaultdict, deque
from pathlib import Path

from pcscope.core.backends.llm.anthropic_config import AnthropicConfig, load_config
from pcscope.core.backends.llm.messages_client import ModelClient
from pcscope.core.backends.llm.model_backend import ModelBackend
from pcscope.core.backends.llm.turns import Body, Turn, TurnContext, TurnFailed, body_key, canonical
from pcscope.core.backends.llm.turns import usage_json as _usage_json
from pcscope.core.contract.backend import Usage
from pcscope.core.errors import InputError, PcscopeError, UsageError
from pcscope.core.textio import open_output, open_text_lines

FORMAT = 1


class ReplayMissing(PcscopeError):
    """The replayed run sent a request the record does not hold."""


def replay_key(body: Body) -> str:
    return body_key({k: v for k, v in body.items() if k != "model"})


class Recorder:
    """A run's exchanges, appended as they happen (a crash keeps everything so far);
    ``close()`` rewrites the file atomically in key order, so the same run gives the same
    bytes."""

    def __init__(self, path: Path, *, max_tokens: int, redacted: bool = False) -> None:
        self.path = path
        self.header = {"pcscope_record": FORMAT, "max_tokens": max_tokens,
                       "redacted": redacted}
        self.lines: list[dict] = []
        self.counts: dict[str, int] = {}
        path.parent.mkdir(parents=True, exist_ok=True)
        with self._open("w") as out:
            out.write(canonical(self.header) + "\n")

    def wrap(self, client: ModelClient) -> ModelClient:
        return RecordingClient(client, self)

    def _open(self, mode: str):
        if self.path.name.endswith(".gz"):
            return gzip.open(self.path, mode + "t", encoding="utf-8")
        return open(self.path, mode, encoding="utf-8")

    def add(self, line: dict) -> None:
        self.lines.append(line)
        with self._open("a") as out:
            out.write(canonical(line) + "\n")

    def count(self, key: str, tokens: int) -> None:
        if self.counts.get(key) != tokens:
            self.counts[key] = tokens
            with self._open("a") as out:
                out.write(canonical({"count": key, "input_tokens": tokens}) + "\n")

    def close(self) -> None:
        """Rewrite the record: the header, then counts and exchanges in key order."""
        counts = [{"count": key, "input_tokens": n} for key, n in sorted(self.counts.items())]
        lines = sorted(self.lines, key=lambda line: (line["key"], canonical(line)))
        with open_output(str(self.path)) as out:
            for line in [self.header, *counts, *lines]:
                out.write(canonical(line) + "\n")


class RecordingClient:
    def __init__(self, inner: ModelClient, recorder: Recorder) -> None:
        self.inner = inner
        self.recorder = recorder

    async def count(self, body: Body) -> int | None:
        n = await self.inner.count(body)
        if n is not None:
            self.recorder.count(replay_key(body), n)
        return n

    async def aclose(self) -> None:
        self.recorder.close()
        await self.inner.aclose()

    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        line: dict = {"key": replay_key(body), "request": body}
        try:
            turn = await self.inner.send(body, ctx)
        except TurnFailed as failed:
            line["failure"] = {"reason": failed.reason, "usage": _usage_json(failed.usage),
                               "attempts": failed.attempts, "budget": failed.budget}
            self.recorder.add(line)
            raise
        line["response"] = turn.to_json()
        self.recorder.add(line)
        return turn


class ReplayClient:
    """Serves recorded turns for identical bodies, in recorded order per body."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.header: dict = {}
        self.exchanges: dict[str, deque[dict]] = defaultdict(deque)
        self.counts: dict[str, int] = {}
        self._load()

    def _load(self) -> None:
        for number, line in open_text_lines(str(self.path)):
            if not line.strip():
                continue
            try:
                item = json.loads(line)
            except ValueError as exc:
                raise InputError(str(self.path), number, f"not JSON: {exc}") from None
            if number == 1:
                if item.get("pcscope_record") != FORMAT:
                    raise InputError(str(self.path), 1, "not a pcscope record (header)")
                self.header = item
            elif "count" in item:
                self.counts[item["count"]] = int(item["input_tokens"])
            elif "key" in item and ("response" in item or "failure" in item):
                self.exchanges[item["key"]].append(item)
            else:
                raise InputError(str(self.path), number, "not a record line")
        if not self.header:
            raise InputError(str(self.path), None, "empty record")

    def model(self) -> str:
        """The recorded model when the record holds one (so replayed bodies match bytes)."""
        models = {item["request"].get("model") for queue in self.exchanges.values()
                  for item in queue}
        return models.pop() if len(models) == 1 else "replay"

    async def count(self, body: Body) -> int | None:
        return self.counts.get(replay_key(body))

    async def aclose(self) -> None:
        return None

    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        key = replay_key(body)
        queue = self.exchanges.get(key)
        if not queue:
            raise ReplayMissing(
                f"{self.path}: no recorded response for call {ctx.call_id} turn {ctx.turn} "
                f"(request {key[:12]}); the inputs, tools, settings or --redact differ from "
                f"the recorded run")
        item = queue.popleft()
        if "failure" in item:
            f = item["failure"]
            raise TurnFailed(f["reason"], Usage(**f["usage"]), f["attempts"], f.get("budget"))
        turn = Turn.from_json(item["response"])
        for call in turn.tool_calls:  # live views see the replayed stream too
            ctx.emit("tool_use", {"name": call.name, "partial": call.raw})
        if turn.text:
            ctx.emit("text", turn.text)
        return turn


def replay_backend(path: str | Path, *, config: AnthropicConfig | None = None,
                   concurrency: int = 8, record: str | Path | None = None) -> ModelBackend:
    """``replay:FILE``: the Claude loop over a record, offline and deterministic.
    ``record`` writes the replayed exchanges again (the same bytes as the original)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(str(path), None, "no such record file")
    client = ReplayClient(path)
    config = config or load_config()
    max_tokens = int(client.header["max_tokens"])
    settings = AnthropicConfig(**{**config.__dict__, "max_tokens": max_tokens})
    wrap = None
    if record is not None:
        wrap = Recorder(Path(record), max_tokens=max_tokens,
                        redacted=bool(client.header.get("redacted"))).wrap
    return ModelBackend(f"replay:{path}", client.model(), client, settings,
                        concurrency=concurrency, wrap=wrap)


def read_header(path: str | Path) -> dict:
    for number, line in open_text_lines(str(path)):
        header = json.loads(line) if line.strip() else {}
        if header.get("pcscope_record") != FORMAT:
            raise InputError(str(path), number, "not a pcscope record (header)")
        return header
    raise InputError(str(path), None, "empty record")


def create(argument: str, options) -> ModelBackend | object:
    """Registry hook for ``replay:FILE``; a record made with ``--redact`` needs it again."""
    if not argument:
        raise UsageError("replay needs a record file: --model replay:FILE")
    backend = replay_backend(argument, concurrency=int(options.extra.get("concurrency", 8)),
                             record=options.record)
    redactor = options.extra.get("redactor")
    redacted = bool(read_header(argument).get("redacted"))
    if redacted != (redactor is not None):
        raise UsageError(f"{argument} was recorded {'with' if redacted else 'without'} "
                         f"--redact; replay it the same way")
    if redactor is None:
        return backend
    from pcscope.core.backends.llm.redact import RedactingBackend

    return RedactingBackend(backend, redactor)
