"""How many model requests may be in flight: additive increase, multiplicative decrease.

On a 429 or 529 the limit halves (once per generation: the requests that were already in
flight when it halved cannot halve it again); every success adds 1/limit, so the limit
climbs back by one per full round of successes. The orchestrator's ``--concurrency`` is
the ceiling; calls above the current limit wait here before sending.
"""

from __future__ import annotations

import asyncio
from contextlib import asynccontextmanager
from dataclasses import dataclass


@dataclass
class Slot:
    generation: int


class AdaptiveLimit:
    def __init__(self, maximum: int, minimum: int = 1) -> None:
        if maximum < 1 or minimum < 1 or minimum > maximum:
            raise ValueError("need 1 <= minimum <= maximum")
        self.maximum = maximum
        self.minimum = minimum
        self.value = float(maximum)
        self.in_flight = 0
        self.generation = 0
        self.decreases = 0
        self._changed = asyncio.Condition()

    @property
    def current(self) -> int:
        return int(self.value)

    @asynccontextmanager
    async def slot(self):
        async with self._changed:
            await self._changed.wait_for(lambda: self.in_flight < self.current)
            self.in_flight += 1
        try:
            yield Slot(self.generation)
        finally:
            async with self._changed:
                self.in_flight -= 1
                self._changed.notify_all()

    def overloaded(self, slot: Slot) -> None:
        """Multiplicative decrease, at most once per generation of requests."""
        if slot.generation < self.generation:
            return
        self.value = max(float(self.minimum), self.value / 2)
        self.generation += 1
        self.decreases += 1

    def succeeded(self) -> None:
        """Additive increase: +1 after ``current`` successes."""
        self.value = min(float(self.maximum), self.value + 1.0 / self.value)
