"""Budgets enforced before sending: a turn reserves its estimated tokens or is not sent.

A reservation is the request's input estimate (``count_tokens`` where the endpoint has it,
else characters / 4) plus its ``max_tokens``. After the response it is settled with the
real usage of every attempt (retries are cumulative). Seconds are a deadline that retry
waits are counted against. The orchestrator reserves per call with rough estimates; this
ledger sees every turn's real usage, so it is the one that refuses to send.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from pcscope.core.backends.llm.turns import Body, canonical

MAX_TOKENS = "max-tokens"


@dataclass
class Hold:
    tokens: int


@dataclass
class TurnBudget:
    """Token reservations of one run's model turns, against a limit and a deadline."""

    max_tokens: int | None = None
    deadline: Callable[[], float | None] = field(default=lambda: None)
    on_exhausted: Callable[[str], None] = field(default=lambda _name: None)
    used: int = 0
    held: int = 0
    refused: int = 0

    def reserve(self, tokens: int) -> Hold | None:
        """Hold ``tokens``, or None (and the run told) when that would pass the limit."""
        if self.max_tokens is not None and self.used + self.held + tokens > self.max_tokens:
            self.refused += 1
            self.on_exhausted(MAX_TOKENS)
            return None
        self.held += tokens
        return Hold(tokens)

    def settle(self, hold: Hold, used: int) -> None:
        self.held -= hold.tokens
        self.used += used

    def seconds_left(self) -> float | None:
        return self.deadline()


def run_budget(max_tokens: int | None = None, max_seconds: float | None = None,
               clock: Callable[[], float] = time.monotonic) -> TurnBudget:
    """A standalone budget (eval, tests): limits counted from now."""
    start = clock()

    def left() -> float | None:
        return None if max_seconds is None else max_seconds - (clock() - start)

    return TurnBudget(max_tokens, left)


def engine_budget(budget) -> TurnBudget:
    """The orchestrator's ``Budget`` as a turn ledger: its token limit and deadline; a
    refused turn marks the run's budget exhausted, so the run stops cleanly."""
    def exhausted(name: str) -> None:
        budget.exhausted = budget.exhausted or name

    return TurnBudget(budget.limits.max_tokens, budget.seconds_left, exhausted)


def estimate_input_tokens(body: Body) -> int:
    """Characters / 4 of what is sent (system, tools, messages)."""
    sent = {k: body.get(k) for k in ("system", "tools", "messages")}
    return len(canonical(sent)) // 4 + 1
