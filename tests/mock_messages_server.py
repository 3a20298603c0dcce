"""A small Messages API server on 127.0.0.1 for tests: the real SDK talks to it by base URL.

It speaks ``POST /v1/messages`` (JSON, or SSE when ``stream`` is true, with the real event
sequence: message_start, content_block_start / content_block_delta (text_delta,
input_json_delta) / content_block_stop, message_delta with usage and stop_reason,
message_stop, and ``error`` events) and ``POST /v1/messages/count_tokens``.

Replies are scripted per request: rules match on the request content and are consumed in
order; otherwise a responder function builds the reply from the request. Faults: HTTP
errors with ``retry-after``, 529 overloaded, 500, stalls (client timeouts), streams that
end early, dropped connections and ``error`` events mid-stream.

Like the real API it refuses (400) an assistant message with empty content, and an
assistant message that does not echo the thinking blocks the server sent with it verbatim
and in order (``thinking`` text and signature, ``redacted_thinking`` data).

Prompt caching is simulated: a prefix ending at a ``cache_control`` breakpoint is written
when a response starts and read by later requests with the same prefix, so usage carries
realistic ``cache_creation_input_tokens`` / ``cache_read_input_tokens``.
"""

from __future__ import annotations

import hashlib
import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Body = dict[str, Any]


# -- what the model says ---------------------------------------------------------------
def text(value: str) -> dict:
    return {"type": "text", "text": value}


def tool(name: str, arguments: dict, call_id: str | None = None) -> dict:
    """A tool_use block; its input is streamed as JSON text in a few pieces."""
    return {"type": "tool_use", "name": name, "id": call_id,
            "raw": json.dumps(arguments, separators=(",", ":"))}


def thinking(value: str, signature: str | None = None) -> dict:
    """A thinking block; its signature (default: derived from the text) streams last."""
    sig = signature or "sig-" + hashlib.sha256(value.encode()).hexdigest()[:16]
    return {"type": "thinking", "thinking": value, "signature": sig}


def redacted_thinking(data: str) -> dict:
    return {"type": "redacted_thinking", "data": data}


def raw_tool(name: str, raw_json: str, call_id: str | None = None) -> dict:
    """A tool_use block whose streamed input is exactly ``raw_json`` (may be invalid JSON)."""
    return {"type": "tool_use", "name": name, "id": call_id, "raw": raw_json}


@dataclass
class Reply:
    content: list[dict]
    stop_reason: str | None = None  # default: tool_use when a tool is called, else end_turn
    output_tokens: int | None = None  # default: characters / 4

    def resolved_stop(self) -> str:
        if self.stop_reason:
            return self.stop_reason
        return "tool_use" if any(b["type"] == "tool_use" for b in self.content) else "end_turn"


@dataclass
class Fault:
    """One injected failure. ``kind``: status, stall (before the response), pause (mid-stream),
    truncate, disconnect, stream_error."""

    kind: str
    status: int = 500
    error_type: str = "api_error"
    retry_after: str | None = None
    seconds: float = 0.0
    after_events: int = 3
    message: str | None = None
    should_retry: str | None = None  # x-should-retry header (default: true from 429 up)

    @classmethod
    def rate_limited(cls, retry_after: str | None = "1") -> Fault:
        return cls("status", 429, "rate_limit_error", retry_after)

    @classmethod
    def overloaded(cls, retry_after: str | None = None) -> Fault:
        return cls("status", 529, "overloaded_error", retry_after)

    @classmethod
    def server_error(cls) -> Fault:
        return cls("status", 500, "api_error")

    @classmethod
    def bad_request(cls, message: str = "invalid request") -> Fault:
        return cls("status", 400, "invalid_request_error", message=message)

    @classmethod
    def stall(cls, seconds: float) -> Fault:
        return cls("stall", seconds=seconds)

    @classmethod
    def pause(cls, seconds: float, after_events: int = 3) -> Fault:
        """Stop sending in the middle of a stream (the client's read times out)."""
        return cls("pause", seconds=seconds, after_events=after_events)

    @classmethod
    def truncate(cls, after_events: int = 3) -> Fault:
        return cls("truncate", after_events=after_events)

    @classmethod
    def disconnect(cls, after_events: int = 3) -> Fault:
        return cls("disconnect", after_events=after_events)

    @classmethod
    def stream_error(cls, after_events: int = 3, error_type: str = "overloaded_error") -> Fault:
        return cls("stream_error", 200, error_type, after_events=after_events)


Matcher = Callable[[Body], bool]
Responder = Callable[[Body], Reply]


@dataclass
class Rule:
    match: Matcher
    action: Reply | Fault
    times: int | None = 1  # None = forever


@dataclass
class Seen:
    """One request as the server received it."""

    path: str
    headers: dict[str, str]
    raw: bytes
    body: Body
    usage: dict = field(default_factory=dict)


def contains(fragment: str) -> Matcher:
    """Match requests whose JSON body contains ``fragment`` anywhere."""
    return lambda body: fragment in json.dumps(body)


def last_user_contains(fragment: str) -> Matcher:
    def match(body: Body) -> bool:
        messages = body.get("messages") or []
        return bool(messages) and fragment in json.dumps(messages[-1])
    return match


def always(_body: Body) -> bool:
    return True


def estimate(obj: Any) -> int:
    return max(1, len(json.dumps(obj, sort_keys=True)) // 4)


# -- the server ------------------------------------------------------------------------
class MockMessagesServer:
    """Run with ``with MockMessagesServer(responder) as server:``; ``server.base_url``."""

    def __init__(self, responder: Responder | None = None, *, min_cache_tokens: int = 1024,
                 count_tokens: bool = True, port: int = 0) -> None:
        self.port = port
        self.responder = responder or (lambda _body: Reply([text("ok")]))
        self.min_cache_tokens = min_cache_tokens
        self.count_tokens = count_tokens
        self.rules: list[Rule] = []
        self.seen: list[Seen] = []
        self.counted: list[Body] = []
        self._cache: dict[str, int] = {}
        self._sent: dict[str, list[dict]] = {}  # tool_use id -> the blocks sent before it
        self._lock = threading.Lock()
        self._ids = 0
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.open_streams = 0

    # -- scripting ---------------------------------------------------------------------
    def on(self, match: Matcher | str, action: Reply | Fault, times: int | None = 1) -> None:
        matcher = contains(match) if isinstance(match, str) else match
        with self._lock:
            self.rules.append(Rule(matcher, action, times))

    def then(self, action: Reply | Fault, times: int | None = 1) -> None:
        """The next request(s), whatever they hold."""
        self.on(always, action, times)

    def messages_seen(self) -> list[Seen]:
        return [s for s in self.seen if s.path.endswith("/v1/messages")]

    # -- lifecycle ---------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        assert self._httpd is not None
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}"

    def __enter__(self) -> MockMessagesServer:
        server = self

        class Handler(_Handler):
            owner = server

        self._httpd = ThreadingHTTPServer(("127.0.0.1", self.port), Handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False  # keep-alive handler threads must not delay exit
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    # -- decisions (called from handler threads) ---------------------------------------
    def _take(self, body: Body) -> Reply | Fault:
        with self._lock:
            for rule in self.rules:
                if rule.match(body):
                    if rule.times is not None:
                        rule.times -= 1
                        if rule.times <= 0:
                            self.rules.remove(rule)
                    return rule.action
        return self.responder(body)

    def _invalid(self, body: Body) -> str | None:
        """Why the real API would refuse these messages, or None."""
        for n, message in enumerate(body.get("messages") or []):
            content = message["content"]
            if not content:
                return f"messages.{n}: all messages must have non-empty content"
            if message["role"] != "assistant" or isinstance(content, str):
                continue
            for block in content:
                expected = self._sent.get(block.get("id", "")) if block["type"] == "tool_use" \
                    else None
                if expected is not None:
                    before = [b for b in content[:content.index(block)]
                              if b["type"] in ("thinking", "redacted_thinking")]
                    if before != expected:
                        return f"messages.{n}: thinking blocks must be passed back unmodified"
        return None

    def _remember(self, blocks: list[dict]) -> None:
        with self._lock:
            for i, block in enumerate(blocks):
                if block["type"] == "tool_use":
                    self._sent[block["id"]] = [b for b in blocks[:i] if b["type"] in (
                        "thinking", "redacted_thinking")]

    def _next_id(self, prefix: str) -> str:
        with self._lock:
            self._ids += 1
            return f"{prefix}_{self._ids:06d}"

    def _usage(self, body: Body) -> dict:
        """Input usage with simulated prompt caching: a prefix is written at each
        ``cache_control`` breakpoint and read back at any block boundary (as the API looks
        back from its breakpoints)."""
        digest = hashlib.sha256(str(body.get("model", "")).encode())
        running, total = 0, 0
        boundaries: list[tuple[str, int, bool]] = []  # (prefix hash, tokens, breakpoint)
        for tokens, (block, marked) in _prefix_blocks(body):
            digest.update(json.dumps(block, sort_keys=True).encode())
            running += tokens
            boundaries.append((digest.copy().hexdigest(), running, marked))
        total = running
        with self._lock:
            read = max((t for h, t, _ in boundaries if h in self._cache), default=0)
            written = 0
            for h, t, marked in boundaries:
                if marked and t >= self.min_cache_tokens and t > read and h not in self._cache:
                    self._cache[h] = t
                    written = max(written, t - read)
        return {"input_tokens": total - read - written, "cache_read_input_tokens": read,
                "cache_creation_input_tokens": written}


def _prefix_blocks(body: Body) -> list[tuple[int, tuple[dict, bool]]]:
    """(tokens, (block without cache_control, has breakpoint)) in prompt-prefix order."""
    out = []

    def add(block: Any) -> None:
        if isinstance(block, str):
            block = {"type": "text", "text": block}
        clean = {k: v for k, v in block.items() if k != "cache_control"}
        out.append((estimate(clean), (clean, "cache_control" in block)))

    for t in body.get("tools") or []:
        add(t)
    system = body.get("system")
    if isinstance(system, str):
        add(system)
    for block in system or []:
        if not isinstance(system, str):
            add(block)
    for message in body.get("messages") or []:
        content = message["content"]
        for block in [content] if isinstance(content, str) else content:
            add(block if isinstance(block, dict) else {"type": "text", "text": block})
    return out


class _Handler(BaseHTTPRequestHandler):
    owner: MockMessagesServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *_args: object) -> None:  # keep test output quiet
        pass

    def do_POST(self) -> None:  # noqa: N802 (http.server naming)
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw or b"{}")
        path = self.path.split("?")[0]
        seen = Seen(path, {k.lower(): v for k, v in self.headers.items()}, raw, body)
        with self.owner._lock:
            self.owner.seen.append(seen)
        if path.endswith("/v1/messages/count_tokens"):
            self._count(body)
        elif path.endswith("/v1/messages"):
            self._messages(body, seen)
        else:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                          "message": path}})

    # -- endpoints ---------------------------------------------------------------------
    def _count(self, body: Body) -> None:
        if not self.owner.count_tokens:
            self._json(404, {"type": "error", "error": {"type": "not_found_error",
                                                          "message": "no count_tokens"}})
            return
        with self.owner._lock:
            self.owner.counted.append(body)
        self._json(200, {"input_tokens": sum(t for t, _ in _prefix_blocks(body))})

    def _messages(self, body: Body, seen: Seen) -> None:
        invalid = self.owner._invalid(body)
        if invalid:
            self._error(Fault("status", 400, "invalid_request_error", message=invalid))
            return
        action = self.owner._take(body)
        if isinstance(action, Fault) and action.kind == "status":
            self._error(action)
            return
        if isinstance(action, Fault) and action.kind == "stall":
            time.sleep(action.seconds)
            action = self.owner.responder(body)
        fault = action if isinstance(action, Fault) else None
        reply = self.owner.responder(body) if fault else action
        usage = self.owner._usage(body)
        seen.usage = usage
        message_id = self.owner._next_id("msg")
        blocks = [dict(b, id=b.get("id") or self.owner._next_id("toolu"))
                  if b["type"] == "tool_use" else b for b in reply.content]
        out_tokens = reply.output_tokens or estimate(blocks)
        self.owner._remember(blocks)
        if body.get("stream"):
            self._stream(body, reply, blocks, usage, out_tokens, message_id, fault)
        else:
            content = [{"type": "tool_use", "id": b["id"], "name": b["name"],
                        "input": json.loads(b["raw"])} if b["type"] == "tool_use" else b
                       for b in blocks]
            self._json(200, {"id": message_id, "type": "message", "role": "assistant",
                             "model": body.get("model"), "content": content,
                             "stop_reason": reply.resolved_stop(), "stop_sequence": None,
                             "usage": dict(usage, output_tokens=out_tokens)})

    def _stream(self, body: Body, reply: Reply, blocks: list[dict], usage: dict,
                out_tokens: int, message_id: str, fault: Fault | None) -> None:
        events = list(_events(body, reply, blocks, usage, out_tokens, message_id))
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", f"req_{message_id}")
        self.end_headers()
        self.owner.open_streams += 1
        try:
            for n, (name, data) in enumerate(events):
                if fault and n == fault.after_events:
                    self._fault_mid_stream(fault)
                    return
                self._chunk(f"event: {name}\ndata: {json.dumps(data)}\n\n".encode())
            self._chunk(b"")
        except (BrokenPipeError, ConnectionResetError):
            pass
        finally:
            self.owner.open_streams -= 1

    def _fault_mid_stream(self, fault: Fault) -> None:
        if fault.kind == "truncate":  # a clean end of body: no message_delta, no stop
            self._chunk(b"")
        elif fault.kind == "disconnect":  # the body never completes
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
        elif fault.kind == "stream_error":
            data = {"type": "error", "error": {"type": fault.error_type,
                                               "message": "Overloaded"}}
            self._chunk(f"event: error\ndata: {json.dumps(data)}\n\n".encode())
            self._chunk(b"")
        elif fault.kind == "pause":
            time.sleep(fault.seconds)

    # -- plumbing ----------------------------------------------------------------------
    def _chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _json(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, fault: Fault) -> None:
        headers = {"retry-after": fault.retry_after} if fault.retry_after is not None else {}
        headers["x-should-retry"] = fault.should_retry or (
            "true" if fault.status >= 429 else "false")
        message = fault.message or fault.error_type
        self._json(fault.status, {"type": "error", "error": {"type": fault.error_type,
                                                             "message": message}}, headers)


def _events(body: Body, reply: Reply, blocks: list[dict], usage: dict, out_tokens: int,
            message_id: str):
    yield "message_start", {"type": "message_start", "message": {
        "id": message_id, "type": "message", "role": "assistant", "content": [],
        "model": body.get("model"), "stop_reason": None, "stop_sequence": None,
        "usage": dict(usage, output_tokens=1)}}
    for index, block in enumerate(blocks):
        if block["type"] == "thinking":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "thinking", "thinking": "",
                                                            "signature": ""}}
            for piece in _pieces(block["thinking"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "thinking_delta",
                                                        "thinking": piece}}
            yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                          "delta": {"type": "signature_delta",
                                                    "signature": block["signature"]}}
        elif block["type"] == "redacted_thinking":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": dict(block)}
        elif block["type"] == "text":
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "text", "text": ""}}
            yield "ping", {"type": "ping"}
            for piece in _pieces(block["text"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "text_delta", "text": piece}}
        else:
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": {"type": "tool_use",
                                                            "id": block["id"],
                                                            "name": block["name"],
                                                            "input": {}}}
            for piece in _pieces(block["raw"]):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": {"type": "input_json_delta",
                                                        "partial_json": piece}}
        yield "content_block_stop", {"type": "content_block_stop", "index": index}
    yield "message_delta", {"type": "message_delta",
                            "delta": {"stop_reason": reply.resolved_stop(),
                                      "stop_sequence": None},
                            "usage": {"output_tokens": out_tokens}}
    yield "message_stop", {"type": "message_stop"}


def _pieces(value: str, size: int = 40) -> list[str]:
    return [value[i:i + size] for i in range(0, len(value), size)] or [""]
