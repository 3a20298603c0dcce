"""One Messages API attempt through the ``anthropic`` SDK, streamed.

``ModelClient`` is the small interface every layer implements (this live client, the
retry layer, the recorder, replay): send one request body, get one complete ``Turn``.

The live client reads the stream itself rather than trusting the SDK's snapshot: tool
input is accumulated as raw text (parsed strictly later), and a stream that ends without
``message_delta`` (``stop_reason`` None — the SDK raises nothing) is an error here.
Usage seen before a failure is kept on the exception, so retries count what was billed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

from pcscope.core.backends.llm.turn_budget import estimate_input_tokens
from pcscope.core.backends.llm.turns import Body, ToolCall, Turn, TurnContext
from pcscope.core.contract.backend import Usage


class ModelClient(Protocol):
    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        """One complete response for ``body`` (raises on failure)."""

    async def count(self, body: Body) -> int | None:
        """Input tokens of ``body`` if the endpoint can count them, else None."""

    async def aclose(self) -> None:
        """Release connections."""


class AttemptFailed(Exception):
    """One attempt broke; ``cause`` is what broke it, ``usage`` what it had consumed."""

    def __init__(self, cause: BaseException, usage: Usage) -> None:
        super().__init__(str(cause))
        self.cause = cause
        self.usage = usage


class TruncatedStream(Exception):
    """The stream ended cleanly but before ``message_delta``: no stop reason."""


class StatusError(Exception):
    """An HTTP error status from a server spoken to without the SDK."""

    def __init__(self, status: int, body: object, headers) -> None:
        super().__init__(f"HTTP {status}")
        self.status_code = status
        self.body = body
        self.headers = headers


class SdkClient:
    """``AsyncAnthropic`` with SDK retries off (the retry layer above owns them)."""

    def __init__(self, api_key: str, *, base_url: str | None = None,
                 timeout: float = 120.0, count_tokens: bool = True,
                 turn_timeout: Callable[[int], float] | None = None) -> None:
        """``timeout``: connect and each read; ``turn_timeout(tokens)``: the whole turn's
        deadline for a request of that many tokens in and out (default: ``timeout``)."""
        import anthropic

        self._sdk = anthropic.AsyncAnthropic(
            api_key=api_key, base_url=base_url, max_retries=0, timeout=timeout,
            open_telemetry=False,
        )
        self.timeout = timeout
        self.base_url = str(self._sdk.base_url)
        self.turn_timeout = turn_timeout or (lambda _tokens: timeout)
        self._can_count = count_tokens

    def __repr__(self) -> str:  # never show the client (it holds the key)
        return "SdkClient()"

    async def aclose(self) -> None:
        await self._sdk.close()

    async def count(self, body: Body) -> int | None:
        if not self._can_count:
            return None
        import anthropic

        fields = {k: body[k] for k in ("model", "messages", "system", "tools", "tool_choice")
                  if k in body}
        try:
            result = await self._sdk.messages.count_tokens(**fields, timeout=self.timeout)
        except anthropic.NotFoundError:
            self._can_count = False  # the endpoint has no count_tokens: chars/4 from now on
            return None
        except anthropic.APIError:
            return None
        return int(result.input_tokens)

    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        started = time.monotonic()
        reader = _StreamReader(ctx)
        fields = {k: v for k, v in body.items() if k != "stream"}
        deadline = self.turn_timeout(estimate_input_tokens(body) + int(body["max_tokens"]))
        try:
            async with asyncio.timeout(deadline):
                async with self._sdk.messages.stream(**fields, timeout=self.timeout) as stream:
                    async for event in stream:
                        reader.feed(event)
        except Exception as exc:  # classified by the retry layer
            raise AttemptFailed(exc, reader.usage) from exc
        if reader.stop_reason is None:
            raise AttemptFailed(TruncatedStream("stream ended before its stop reason"),
                                reader.usage)
        return reader.turn(time.monotonic() - started)


class _StreamReader:
    """Accumulates raw stream events into a Turn and emits them for live views. Every
    content block is kept in its stream position: thinking (with its signature), redacted
    thinking, text and tool calls go back to the API exactly as they came."""

    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self.usage = Usage()
        self.blocks: dict[int, dict[str, Any]] = {}
        self.stop_reason: str | None = None
        self.model = ""
        self.response_id = ""

    def feed(self, event: Any) -> None:
        kind = event.type
        if kind == "message_start":
            message = event.message
            self.model, self.response_id = message.model or "", message.id or ""
            self._usage(message.usage)
            self.ctx.on_started()
        elif kind == "content_block_start":
            self._start(event.index, event.content_block)
        elif kind == "content_block_delta":
            self._delta(event.index, event.delta)
        elif kind == "message_delta":
            self.stop_reason = event.delta.stop_reason
            self._usage(event.usage)

    def _start(self, index: int, block: Any) -> None:
        if block.type == "tool_use":
            self.blocks[index] = {"type": "tool_use", "id": block.id, "name": block.name,
                                  "raw": []}
        elif block.type == "thinking":
            self.blocks[index] = {"type": "thinking", "thinking": [block.thinking or ""],
                                  "signature": [block.signature or ""]}
        elif block.type == "redacted_thinking":
            self.blocks[index] = {"type": "redacted_thinking", "data": block.data}
        elif block.type == "text":
            self.blocks[index] = {"type": "text", "text": [block.text or ""]}

    def _delta(self, index: int, delta: Any) -> None:
        block = self.blocks.get(index)
        if block is None:
            return
        if delta.type == "text_delta":
            block["text"].append(delta.text)
            self.ctx.emit("text", delta.text)
        elif delta.type == "thinking_delta":
            block["thinking"].append(delta.thinking)
            self.ctx.emit("thinking", delta.thinking)
        elif delta.type == "signature_delta":
            block["signature"].append(delta.signature)
        elif delta.type == "input_json_delta":
            block["raw"].append(delta.partial_json)
            self.ctx.emit("tool_use", {"name": block["name"], "partial": delta.partial_json})

    def _usage(self, usage: Any) -> None:
        """message_delta usage is cumulative: a present field replaces the earlier value."""
        if usage is None:
            return
        for ours, theirs in (("input_tokens", "input_tokens"),
                             ("output_tokens", "output_tokens"),
                             ("cache_read_tokens", "cache_read_input_tokens"),
                             ("cache_write_tokens", "cache_creation_input_tokens")):
            value = getattr(usage, theirs, None)
            if value is not None:
                setattr(self.usage, ours, int(value))

    def turn(self, seconds: float) -> Turn:
        blocks, calls, text = [], [], []
        for _, block in sorted(self.blocks.items()):
            if block["type"] == "tool_use":
                calls.append(ToolCall(block["id"], block["name"], "".join(block["raw"])))
                blocks.append({"type": "tool_use", "id": block["id"]})
            elif block["type"] == "redacted_thinking":
                blocks.append(dict(block))
            else:  # text, thinking: the streamed pieces joined
                joined = {k: "".join(v) if isinstance(v, list) else v for k, v in block.items()}
                blocks.append(joined)
                if block["type"] == "text":
                    text.append(joined["text"])
        return Turn("".join(text), calls, self.stop_reason, self.usage, self.model,
                    self.response_id, 1, seconds, blocks)
