"""Traces as JSON Lines, one span per line, with OpenTelemetry GenAI attribute names.

``<dir>/spans.jsonl`` holds the spans (a model turn is a ``chat`` span, a tool run an
``execute_tool`` span, a whole call an ``invoke_agent`` span) with the GenAI semantic
convention attributes (``gen_ai.request.model``, ``gen_ai.usage.input_tokens``,
``gen_ai.usage.cache_read.input_tokens`` …) plus ours under ``pcscope.*`` (call, wave,
depth, turn, attempts, evidence IDs). Prompts and responses are stored once by content
hash in ``<dir>/blobs/<sha256>.json`` and referenced from the spans; a prompt is a manifest
whose system text, tool definitions and messages are blobs of their own, so what every
turn resends is stored once. Span IDs are derived
from the call ID and turn, so the same run gives the same IDs. Request bodies never hold
the API key (it travels only in a header), and error texts are scrubbed of it.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pcscope.core.backends.llm.turns import Body, Turn, TurnContext, body_key, canonical
from pcscope.core.contract.backend import Usage

PROVIDER = "anthropic"
INLINE_IDS = 64


def _id(text: str, size: int) -> str:
    return hashlib.blake2b(text.encode(), digest_size=size).hexdigest()


@dataclass
class Span:
    name: str
    trace: str
    span: str
    parent: str | None
    start_ns: int
    attributes: dict[str, Any]


class Tracer:
    """Writes spans and blobs under ``folder``; ``None`` folder = no tracing."""

    def __init__(self, folder: Path | None, run_id: str, scrub=lambda text: text,
                 provider: str = PROVIDER) -> None:
        self.folder = folder
        self.provider = provider
        self.trace_id = _id(run_id, 16)
        self.scrub = scrub
        if folder is not None:
            (folder / "blobs").mkdir(parents=True, exist_ok=True)

    @property
    def enabled(self) -> bool:
        return self.folder is not None

    def blob(self, value: Any) -> str:
        """Store ``value`` once under its content hash; return the hash."""
        text = canonical(value)
        digest = hashlib.sha256(text.encode()).hexdigest()
        if self.folder is not None:
            path = self.folder / "blobs" / f"{digest}.json"
            if not path.exists():
                fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".blob-")
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(text)
                os.replace(tmp, path)
        return digest

    def start(self, name: str, ctx: TurnContext, kind: str, *extra: object,
              attributes: dict[str, Any] | None = None) -> Span:
        parent = None if kind == "call" else _id(f"{ctx.call_id}/call", 8)
        span_id = _id("/".join([ctx.call_id, kind, *map(str, extra)]), 8)
        base = {"pcscope.call.id": ctx.call_id, "pcscope.wave": ctx.wave,
                "pcscope.depth": ctx.depth, "gen_ai.conversation.id": ctx.call_id}
        return Span(name, self.trace_id, span_id, parent, time.time_ns(),
                    {**base, **(attributes or {})})

    def end(self, span: Span, error: str | None = None, **attributes: Any) -> None:
        if self.folder is None:
            return
        attrs = {**span.attributes, **attributes}
        if error:
            attrs["error.type"] = self.scrub(error)
        line = {"name": span.name, "trace_id": span.trace, "span_id": span.span,
                "parent_span_id": span.parent, "kind": "CLIENT",
                "start_time_unix_nano": span.start_ns, "end_time_unix_nano": time.time_ns(),
                "status": {"code": "ERROR", "message": self.scrub(error)} if error
                else {"code": "OK"},
                "attributes": attrs}
        with open(self.folder / "spans.jsonl", "a", encoding="utf-8") as f:
            f.write(json.dumps(line, sort_keys=True) + "\n")

    def prompt(self, body: Body) -> str:
        """A request as a manifest of part blobs: the system text, the tool definitions and
        each message are stored once, however many turns and calls resend them (cache
        markers left out; ``--record`` keeps the exact bodies)."""
        def part(value: Any) -> dict[str, str]:
            return {"blob": self.blob(_unmarked(value))}

        manifest = {k: v for k, v in body.items() if k not in ("system", "tools", "messages")}
        manifest["system"] = part(body["system"])
        manifest["tools"] = part(body["tools"])
        manifest["messages"] = [part(m) for m in body["messages"]]
        return self.blob(manifest)

    # -- the spans we write ------------------------------------------------------------
    def chat(self, ctx: TurnContext, body: Body) -> Span:
        return self.start(f"chat {body['model']}", ctx, "chat", ctx.turn, attributes={
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": self.provider,
            "gen_ai.system": self.provider, "gen_ai.request.model": body["model"],
            "gen_ai.request.max_tokens": body["max_tokens"], "pcscope.turn": ctx.turn,
            **self.evidence(ctx.evidence_ids),
            "pcscope.prompt.sha256": self.prompt(body) if self.enabled else body_key(body)})

    def chat_done(self, span: Span, turn: Turn | None, usage: Usage, attempts: int,
                  error: str | None = None) -> None:
        attrs: dict[str, Any] = {**usage_attributes(usage), "pcscope.attempts": attempts}
        if turn is not None:
            attrs.update({"gen_ai.response.model": turn.model,
                          "gen_ai.response.id": turn.response_id,
                          "gen_ai.response.finish_reasons": [turn.stop_reason or ""],
                          "pcscope.response.sha256": self.blob(turn.to_json())})
        self.end(span, error, **attrs)

    def tool(self, ctx: TurnContext, name: str, call_id: str, args: Any) -> Span:
        return self.start(f"execute_tool {name}", ctx, "tool", ctx.turn, call_id, attributes={
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id, "pcscope.turn": ctx.turn,
            "pcscope.tool.arguments.sha256": self.blob(args)})

    def tool_done(self, span: Span, text: str, ids: tuple[str, ...], error: str | None) -> None:
        self.end(span, error, **{"pcscope.tool.result.sha256": self.blob(text),
                                 "pcscope.tool.result.ids": list(ids)})

    def call(self, ctx: TurnContext, model: str) -> Span:
        return self.start("invoke_agent pcscope.call", ctx, "call", attributes={
            "gen_ai.operation.name": "invoke_agent", "gen_ai.provider.name": self.provider,
            "gen_ai.request.model": model, **self.evidence(ctx.evidence_ids)})

    def evidence(self, ids: tuple[str, ...]) -> dict[str, Any]:
        """The call's evidence IDs: inline when few, else by content hash (a full prompt
        is given thousands)."""
        if len(ids) <= INLINE_IDS:
            return {"pcscope.evidence_ids": list(ids)}
        return {"pcscope.evidence_ids.count": len(ids),
                "pcscope.evidence_ids.sha256": self.blob(list(ids))}


def _unmarked(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _unmarked(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_unmarked(v) for v in value]
    return value


def usage_attributes(usage: Usage) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens}
