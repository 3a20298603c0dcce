"""Retries with backoff around one Messages API attempt, as the SDK does not do them safely.

The SDK obeys ``retry-after`` with no cap and retries nothing once a stream has started.
Here every transient failure is retried the same way — 429, 529 overloaded, 5xx, an
``error`` event mid-stream (status 200 in the SDK), a dropped connection (the HTTP
library's own ``RemoteProtocolError``/``ReadTimeout``), a timeout, a stream that ended
early — with exponential backoff (deterministic jitter), every wait counted against the
run's seconds, and 429/529 reported to the AIMD limit. A server's word wins: never retry
before its ``retry-after`` (one longer than the configured cap fails the turn instead of
retrying early), and ``x-should-retry`` overrides the status's default. Usage of failed
attempts is added to the turn (billed tokens are never lost).
"""

from __future__ import annotations

import asyncio
import email.utils
import hashlib
import time
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core.backends.llm.messages_client import (
    AttemptFailed,
    ModelClient,
    StatusError,
    TruncatedStream,
)
from pcscope.core.backends.llm.pacing import AdaptiveLimit
from pcscope.core.backends.llm.turn_budget import TurnBudget
from pcscope.core.backends.llm.turns import Body, Turn, TurnContext, TurnFailed
from pcscope.core.contract.backend import Usage

RETRY_STATUS = {408, 409, 429, 500, 502, 503, 504, 529}
RETRY_STREAM_ERRORS = {"overloaded_error", "rate_limit_error", "api_error", "timeout_error"}


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 5
    base: float = 1.0
    cap: float = 30.0
    retry_after_cap: float = 60.0


@dataclass(frozen=True)
class Failure:
    """What an attempt's failure means: a short reason, retry or not, overload or not."""

    reason: str
    retryable: bool
    overload: bool = False
    retry_after: float | None = None
    detail: str = ""  # the server's message, for the call's error

    def said(self) -> str:
        return f"{self.reason}: {self.detail}" if self.detail else self.reason


def classify(exc: BaseException) -> Failure:
    import anthropic
    import httpx
    import httpx2

    if isinstance(exc, TruncatedStream):
        return Failure("truncated stream (no stop reason)", True)
    if isinstance(exc, anthropic.APIStatusError):
        return _status(exc.status_code, exc.body, exc.response.headers)
    if isinstance(exc, StatusError):
        return _status(exc.status_code, exc.body, exc.headers)
    if isinstance(exc, anthropic.APITimeoutError | TimeoutError | httpx2.TimeoutException
                  | httpx.TimeoutException):
        return Failure("timeout", True)
    if isinstance(exc, anthropic.APIConnectionError | httpx2.TransportError
                  | httpx.TransportError):
        cause = exc.__cause__ or exc
        if isinstance(cause, httpx2.ConnectError | httpx.ConnectError | ConnectionError):
            return Failure("cannot connect to the endpoint", True,
                           detail=f"{type(cause).__name__}: {cause}"[:300])
        return Failure(f"connection lost: {type(exc).__name__}", True)
    return Failure(f"{type(exc).__name__}: {exc}", False)


def _status(status: int, body: object, headers) -> Failure:
    kind = _error_type(body)
    if status == 200:  # an `error` event inside a 200 stream
        return Failure(f"stream error event: {kind}", kind in RETRY_STREAM_ERRORS,
                       overload=kind in ("overloaded_error", "rate_limit_error"))
    retryable = status in RETRY_STATUS or status >= 500
    said = _header(headers, "x-should-retry")
    if said in ("true", "false"):
        retryable = said == "true"
    return Failure(f"HTTP {status} {kind or ''}".strip(), retryable,
                   overload=status in (429, 529), retry_after=retry_after(headers),
                   detail=_error_message(body))


def _header(headers, name: str) -> str | None:
    try:
        value = headers.get(name)
    except (AttributeError, TypeError):
        return None
    return value.strip().lower() if isinstance(value, str) else None


def _error_message(body: object, limit: int = 300) -> str:
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        message = str(body["error"].get("message") or "")
        return "" if message == _error_type(body) else message[:limit]
    return ""


def _error_type(body: object) -> str:
    if isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            return str(error.get("type") or "")
    return ""


def retry_after(headers) -> float | None:
    """``retry-after-ms``, ``retry-after`` seconds, or an HTTP date; None when absent."""
    try:
        if (ms := headers.get("retry-after-ms")) is not None:
            return max(0.0, float(ms) / 1000)
        value = headers.get("retry-after")
    except (TypeError, ValueError):
        return None
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    parsed = email.utils.parsedate_to_datetime(value) if value else None
    return None if parsed is None else max(0.0, parsed.timestamp() - time.time())


def backoff(policy: RetryPolicy, attempt: int, seed: str) -> float:
    """base * 2^(attempt-1), capped, times a jitter in [0.5, 1) fixed by the seed."""
    digest = hashlib.blake2b(f"{seed}/{attempt}".encode(), digest_size=4).digest()
    jitter = 0.5 + int.from_bytes(digest) / 2**33
    return min(policy.cap, policy.base * 2 ** (attempt - 1)) * jitter


class RetryingClient:
    def __init__(self, inner: ModelClient, policy: RetryPolicy, limit: AdaptiveLimit,
                 budget: Callable[[], TurnBudget | None],
                 sleep: Callable[[float], object] = asyncio.sleep,
                 scrub: Callable[[str], str] = lambda text: text) -> None:
        self.inner = inner
        self.scrub = scrub  # server messages may echo secrets: scrubbed before anyone stores
        self.policy = policy
        self.limit = limit
        self.budget = budget
        self.sleep = sleep
        self.retries = 0
        self.retry_reasons: dict[str, int] = {}

    async def count(self, body: Body) -> int | None:
        return await self.inner.count(body)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def send(self, body: Body, ctx: TurnContext) -> Turn:
        spent = Usage()
        for attempt in range(1, self.policy.attempts + 1):
            async with self.limit.slot() as slot:
                try:
                    turn = await self.inner.send(body, ctx)
                except AttemptFailed as failed:
                    spent.add(failed.usage)
                    failure = classify(failed.cause)
                    if failure.overload:
                        self.limit.overloaded(slot)
                else:
                    self.limit.succeeded()
                    spent.add(turn.usage)
                    # a replayed turn already carries its recorded attempts and usage
                    turn.usage, turn.attempts = spent, turn.attempts + attempt - 1
                    return turn
            if not failure.retryable or attempt == self.policy.attempts:
                raise TurnFailed(self.scrub(f"{failure.said()} after {attempt} attempt(s)"),
                                 spent, attempt)
            if failure.retry_after is not None and \
                    failure.retry_after > self.policy.retry_after_cap:
                raise TurnFailed(self.scrub(
                    f"{failure.said()}; the server asks to wait {failure.retry_after:.0f} s, "
                    f"over retry_after_cap_seconds ({self.policy.retry_after_cap:g})"),
                    spent, attempt)
            wait = self._wait(failure, attempt, f"{ctx.call_id}/{ctx.turn}")
            if wait is None:
                raise TurnFailed(self.scrub(f"{failure.said()}; the retry wait would pass "
                                            "--max-seconds"),
                                 spent, attempt, budget="seconds")
            self.retries += 1
            self.retry_reasons[failure.reason] = self.retry_reasons.get(failure.reason, 0) + 1
            ctx.emit("status", f"{failure.reason}; retry {attempt}/{self.policy.attempts - 1}"
                               f" in {wait:.1f}s")
            await self.sleep(wait)
        raise AssertionError("unreachable")  # the loop always returns or raises

    def _wait(self, failure: Failure, attempt: int, seed: str) -> float | None:
        """Seconds to wait before the next attempt (never less than the server's
        retry-after); None when that passes the deadline."""
        wait = backoff(self.policy, attempt, seed)
        if failure.retry_after is not None:
            wait = max(wait, failure.retry_after)
        budget = self.budget()
        left = budget.seconds_left() if budget is not None else None
        return None if left is not None and wait >= left else wait
