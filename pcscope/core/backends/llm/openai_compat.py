"""``--model openai:<model>``: any OpenAI-compatible chat-completions server (vLLM,
llama.cpp server, a gateway) — for teams whose data may not leave the building.

The same tool-use loop, retries, budgets, record/replay and traces as the Claude backend:
this module only translates one Messages-API-shaped request into a streamed
``/chat/completions`` request and the streamed answer back into a ``Turn``. Settings:
``OPENAI_BASE_URL`` (default ``http://127.0.0.1:8000/v1``) and, when the server wants
one, ``OPENAI_API_KEY`` (read from the environment only, sent only as a header).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import httpx

from pcscope.core.backends.llm.anthropic_config import load_config
from pcscope.core.backends.llm.messages_client import AttemptFailed, StatusError, TruncatedStream
from pcscope.core.backends.llm.model_backend import ModelBackend, Secret
from pcscope.core.backends.llm.trace import Tracer
from pcscope.core.backends.llm.turns import Body, ToolCall, Turn, TurnContext
from pcscope.core.contract.backend import Usage
from pcscope.core.errors import UsageError

BASE_URL_ENV = "OPENAI_BASE_URL"
KEY_ENV = "OPENAI_API_KEY"
DEFAULT_BASE_URL = "http://127.0.0.1:8000/v1"
STOP = {"tool_calls": "tool_use", "stop": "end_turn", "length": "max_tokens",
        "content_filter": "refusal", "function_call": "tool_use"}


def chat_request(body: Body) -> dict[str, Any]:
    """A Messages API body as a chat-completions request (cache markers dropped)."""
    system = "\n\n".join(block["text"] for block in body["system"])
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for message in body["messages"]:
        messages += _chat_messages(message)
    request: dict[str, Any] = {
        "model": body["model"], "max_tokens": body["max_tokens"], "messages": messages,
        "stream": True, "stream_options": {"include_usage": True},
        "tools": [{"type": "function", "function": {
            "name": t["name"], "description": t["description"],
            "parameters": t["input_schema"]}} for t in body["tools"]],
    }
    return request


def _chat_messages(message: dict) -> list[dict[str, Any]]:
    content = message["content"]
    if isinstance(content, str):
        return [{"role": message["role"], "content": content}]
    texts = [b["text"] for b in content if b["type"] == "text"]  # thinking stays behind
    if message["role"] == "assistant":
        calls = [{"id": b["id"], "type": "function",
                  "function": {"name": b["name"], "arguments": json.dumps(b["input"])}}
                 for b in content if b["type"] == "tool_use"]
        out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
        if calls:
            out["tool_calls"] = calls
        return [out]
    # Tool results become tool messages, which must directly follow the assistant turn.
    out_list: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": b["tool_use_id"],
         "content": "".join(c["text"] for c in b["content"])}
        for b in content if b["type"] == "tool_result"]
    if texts:
        out_list.append({"role": "user", "content": "\n\n".join(texts)})
    return out_list


class ChatClient:
    """One streamed chat-completions attempt (the retry layer above owns retries)."""

    def __init__(self, base_url: str, api_key: str | None, timeout: float) -> None:
        headers = {"authorization": f"Bearer {api_key}"} if api_key else {}
        self.base_url = base_url
        self._http = httpx.AsyncClient(base_url=base_url.rstrip("/") + "/", headers=headers,
                                       timeout=timeout)
        self.timeout = timeout

    def __repr__(self) -> str:
        return "ChatClient()"

    async def count(self, body: Body) -> int | None:
        return None  # no standard endpoint: the budget estimates characters / 4

    async def aclose(self) -> None:
        await self._http.aclose()

    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        started = time.monotonic()
        reader = _ChunkReader(ctx)
        try:
            async with self._http.stream("POST", "chat/completions",
                                         json=chat_request(body)) as response:
                if response.status_code >= 400:
                    await response.aread()
                    raise StatusError(response.status_code, _json(response.text),
                                      response.headers)
                async for line in response.aiter_lines():
                    if reader.feed(line):
                        break
        except Exception as exc:  # classified by the retry layer
            raise AttemptFailed(exc, reader.usage) from exc
        if not reader.done or reader.stop_reason is None:
            raise AttemptFailed(TruncatedStream("stream ended before [DONE]"), reader.usage)
        return reader.turn(time.monotonic() - started)


def _json(text: str) -> object:
    try:
        return json.loads(text)
    except ValueError:
        return text


class _ChunkReader:
    def __init__(self, ctx: TurnContext) -> None:
        self.ctx = ctx
        self.usage = Usage()
        self.text: list[str] = []
        self.tools: dict[int, dict[str, Any]] = {}
        self.stop_reason: str | None = None
        self.model = ""
        self.response_id = ""
        self.done = False
        self.started = False

    def feed(self, line: str) -> bool:
        """One SSE line; True at ``[DONE]``."""
        if not line.startswith("data:"):
            return False
        data = line[5:].strip()
        if data == "[DONE]":
            self.done = True
            return True
        chunk = json.loads(data)
        if not self.started:
            self.started = True
            self.ctx.on_started()
        self.model = chunk.get("model") or self.model
        self.response_id = chunk.get("id") or self.response_id
        if chunk.get("usage"):
            self._usage(chunk["usage"])
        for choice in chunk.get("choices") or []:
            self._delta(choice.get("delta") or {})
            if choice.get("finish_reason"):
                self.stop_reason = STOP.get(choice["finish_reason"], choice["finish_reason"])
        return False

    def _delta(self, delta: dict) -> None:
        if delta.get("content"):
            self.text.append(delta["content"])
            self.ctx.emit("text", delta["content"])
        for call in delta.get("tool_calls") or []:
            tool = self.tools.setdefault(call.get("index", 0), {"id": "", "name": "", "raw": []})
            function = call.get("function") or {}
            tool["id"] = call.get("id") or tool["id"]
            tool["name"] = function.get("name") or tool["name"]
            if function.get("arguments"):
                tool["raw"].append(function["arguments"])
                self.ctx.emit("tool_use", {"name": tool["name"],
                                           "partial": function["arguments"]})

    def _usage(self, usage: dict) -> None:
        cached = int((usage.get("prompt_tokens_details") or {}).get("cached_tokens") or 0)
        self.usage = Usage(int(usage.get("prompt_tokens") or 0) - cached,
                           int(usage.get("completion_tokens") or 0), cached, 0)

    def turn(self, seconds: float) -> Turn:
        calls = [ToolCall(t["id"] or f"call_{i}", t["name"], "".join(t["raw"]))
                 for i, t in sorted(self.tools.items())]
        return Turn("".join(self.text), calls, self.stop_reason, self.usage, self.model,
                    self.response_id, 1, seconds)


def create(argument: str, options) -> ModelBackend | object:
    """Registry hook for ``openai:<model>`` (the model name the server knows)."""
    if not argument:
        raise UsageError("openai needs a model name: --model openai:<model>")
    name = f"openai:{argument}"
    if options.offline_only:
        raise UsageError(f"--offline refuses the network backend {name}")
    config = load_config()
    key = os.environ.get(KEY_ENV) or None
    secret = Secret(key or "")
    client = ChatClient(os.environ.get(BASE_URL_ENV) or DEFAULT_BASE_URL, key,
                        config.timeout_seconds)
    extra = options.extra
    wrap = None
    if options.record:
        from pcscope.core.backends.doubles.replay import Recorder

        wrap = Recorder(Path(options.record), max_tokens=config.max_tokens,
                        redacted=extra.get("redactor") is not None).wrap
    trace_dir = extra.get("trace_dir")
    backend = ModelBackend(name, argument, client, config,
                           concurrency=int(extra.get("concurrency", 8)), secret=secret,
                           tracer=Tracer(Path(trace_dir) if trace_dir else None, name,
                                         scrub=secret.scrub, provider="openai"), wrap=wrap)
    redactor = extra.get("redactor")
    if redactor is None:
        return backend
    from pcscope.core.backends.llm.redact import RedactingBackend

    return RedactingBackend(backend, redactor)
