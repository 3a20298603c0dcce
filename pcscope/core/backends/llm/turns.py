"""One model turn (a Messages API response) as every client layer sees it.

A turn keeps each tool call's input exactly as it streamed (``raw``): the SDK parses
partial JSON leniently (``{"pc": 0x401000}`` becomes ``{"pc": 0}``), so the loop parses
it strictly itself. Turns serialise to plain JSON for the record and replay.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pcscope.core.contract.backend import Emit, Usage

Body = dict[str, Any]


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    raw: str  # the input JSON text as it arrived

    def parse(self) -> tuple[dict[str, Any] | None, str | None]:
        """Strict parse: (object, None) or (None, what is wrong)."""
        try:
            value = json.loads(self.raw or "{}")
        except ValueError as exc:
            return None, f"tool input is not valid JSON ({exc}): {self.raw[:200]}"
        if not isinstance(value, dict):
            return None, "tool input must be a JSON object"
        return value, None


@dataclass
class Turn:
    """A complete response: its text, tool calls, stop reason and usage (all attempts).

    ``blocks`` is the assistant content in the order it streamed — thinking blocks with
    their signatures, redacted thinking, text, tool calls — so the next request can echo
    it verbatim (the API requires thinking blocks back unchanged in a tool loop)."""

    text: str
    tool_calls: list[ToolCall]
    stop_reason: str | None
    usage: Usage
    model: str = ""
    response_id: str = ""
    attempts: int = 1
    seconds: float = 0.0
    blocks: list[dict] = field(default_factory=list)

    def assistant_content(self) -> list[dict]:
        """The turn as the next request's assistant message (malformed tool input sent as
        {}); without streamed blocks (other clients, old records): text, then tool calls."""
        calls = {c.id: c for c in self.tool_calls}
        blocks = self.blocks or ([{"type": "text", "text": self.text}] if self.text else []) + [
            {"type": "tool_use", "id": c.id} for c in self.tool_calls]
        out = []
        for block in blocks:
            if block["type"] == "tool_use":
                call = calls[block["id"]]
                value, _ = call.parse()
                block = {"type": "tool_use", "id": call.id, "name": call.name,
                         "input": value if value is not None else {}}
            elif block["type"] == "text" and not block["text"]:
                continue  # the API refuses empty text blocks
            out.append(block)
        return out

    def to_json(self) -> dict:
        return {"text": self.text,
                "tool_calls": [{"id": c.id, "name": c.name, "raw": c.raw}
                               for c in self.tool_calls],
                "stop_reason": self.stop_reason, "usage": usage_json(self.usage),
                "model": self.model, "response_id": self.response_id,
                "attempts": self.attempts, "seconds": round(self.seconds, 3),
                "blocks": self.blocks}

    @classmethod
    def from_json(cls, data: dict) -> Turn:
        return cls(data["text"], [ToolCall(**c) for c in data["tool_calls"]],
                   data["stop_reason"], Usage(**data["usage"]), data.get("model", ""),
                   data.get("response_id", ""), data.get("attempts", 1),
                   data.get("seconds", 0.0), data.get("blocks", []))


class TurnFailed(Exception):
    """A turn that did not complete after every allowed attempt (or could not be sent)."""

    def __init__(self, reason: str, usage: Usage | None = None, attempts: int = 1,
                 budget: str | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.usage = usage or Usage()
        self.attempts = attempts
        self.budget = budget  # the budget that stopped it ("tokens", "seconds"), if any


@dataclass
class TurnContext:
    """Who is asking: for live views, traces and the per-wave cache warm-up."""

    call_id: str
    wave: int = 0
    depth: int = 0
    turn: int = 0
    evidence_ids: tuple[str, ...] = ()
    emit: Emit = field(default=lambda _kind, _payload: None)
    on_started: Callable[[], None] = field(default=lambda: None)


def usage_json(usage: Usage) -> dict[str, int]:
    return {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens,
            "cache_read_tokens": usage.cache_read_tokens,
            "cache_write_tokens": usage.cache_write_tokens}


def total_tokens(usage: Usage) -> int:
    return (usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
            + usage.cache_write_tokens)


def body_key(body: Body) -> str:
    """The content hash of a request body (canonical JSON), used by record and replay."""
    return hashlib.sha256(canonical(body).encode()).hexdigest()


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
