"""Run budgets: calls, tokens and wall-clock seconds.

A call reserves its estimated tokens before it starts and is never started when the
reservation would cross a limit; afterwards the reservation is settled with the real usage.
The first budget that ends the run is remembered so the report can say which one it was.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

MAX_CALLS = "max-calls"
MAX_TOKENS = "max-tokens"
MAX_SECONDS = "max-seconds"


@dataclass(frozen=True)
class Limits:
    max_calls: int | None = None
    max_tokens: int | None = None
    max_seconds: float | None = None


@dataclass(frozen=True)
class Reservation:
    tokens: int


class Budget:
    def __init__(self, limits: Limits, clock: Callable[[], float] = time.monotonic) -> None:
        self.limits = limits
        self._clock = clock
        self._start = clock()
        self.calls = 0
        self.tokens = 0
        self._reserved = 0
        self.exhausted: str | None = None

    def elapsed(self) -> float:
        return self._clock() - self._start

    def seconds_left(self) -> float | None:
        if self.limits.max_seconds is None:
            return None
        return max(0.0, self.limits.max_seconds - self.elapsed())

    def reserve(self, tokens: int) -> Reservation | None:
        """Reserve one call of about ``tokens``; None (and the run's budget marked
        exhausted) when a limit forbids it."""
        if self.exhausted:
            return None
        limits = self.limits
        if limits.max_calls is not None and self.calls >= limits.max_calls:
            self.exhausted = MAX_CALLS
        elif limits.max_tokens is not None and (
            self.tokens + self._reserved + tokens > limits.max_tokens
        ):
            self.exhausted = MAX_TOKENS
        elif self.seconds_left() == 0.0:
            self.exhausted = MAX_SECONDS
        if self.exhausted:
            return None
        self.calls += 1
        self._reserved += tokens
        return Reservation(tokens)

    def settle(self, reservation: Reservation, used_tokens: int) -> None:
        self._reserved -= reservation.tokens
        self.tokens += used_tokens
        if self.limits.max_tokens is not None and self.tokens >= self.limits.max_tokens:
            self.exhausted = self.exhausted or MAX_TOKENS

    def time_up(self) -> None:
        self.exhausted = self.exhausted or MAX_SECONDS

    def limit_of(self, name: str) -> float:
        return {
            MAX_CALLS: self.limits.max_calls,
            MAX_TOKENS: self.limits.max_tokens,
            MAX_SECONDS: self.limits.max_seconds,
        }[name] or 0

    def used_of(self, name: str) -> float:
        return {MAX_CALLS: self.calls, MAX_TOKENS: self.tokens,
                MAX_SECONDS: round(self.elapsed(), 3)}[name]
