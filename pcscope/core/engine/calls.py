"""A bounded call as planned (``CallPlan``) and as it happened (``CallRecord``)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from typing import Any

# Final statuses; a call is "queued" then "running" before one of these (or "skipped" when
# it never started: a budget ran out or the run was cancelled first).
OK = "ok"  # output parsed; its findings were each accepted or rejected
REJECTED = "rejected"  # output malformed as a whole
FAILED = "failed"  # the backend raised or reported an error
CANCELLED = "cancelled"  # stopped by cancellation or the time budget


def call_id(wave: int, n: int) -> str:
    """Call IDs are unique within a run and the same in every run of the same plan."""
    return f"w{wave}.c{n}"


@dataclass(frozen=True)
class CallPlan:
    """One call to make: its slice (or question) rendered, and the IDs it is given."""

    id: str
    wave: int
    parent: str | None
    title: str
    brief: str
    given: tuple[str, ...]
    seed: dict[str, Any]
    weight: float = 0.0

    @property
    def key(self) -> str:
        """Content hash: a resumed run reuses a recorded call only when this matches."""
        text = json.dumps([self.wave, self.parent, self.brief, list(self.given), self.seed],
                          sort_keys=True)
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()


@dataclass
class ToolUse:
    tool: str
    input: dict[str, Any]
    ids: list[str]
    error: str | None
    text: str
    seconds: float


@dataclass
class CallRecord:
    id: str
    run: int
    wave: int
    parent: str | None
    key: str
    model: str
    title: str
    status: str
    given: list[str]
    brief: str
    seed: dict[str, Any]
    fetched: list[str] = field(default_factory=list)
    tools: list[ToolUse] = field(default_factory=list)
    raw: str = ""
    error: str | None = None
    accepted: list[str] = field(default_factory=list)  # finding IDs
    rejections: list[dict[str, Any]] = field(default_factory=list)  # {reason, title}
    input_tokens: int = 0  # uncached input
    output_tokens: int = 0
    cached_tokens: int = 0  # input read from the prompt cache
    seconds: float = 0.0
    started: float | None = None
    finished: float | None = None
    cache_write_tokens: int = 0  # input written to the prompt cache

    @property
    def tokens(self) -> int:
        """Every token of the call: uncached input, cache writes, cache reads, output."""
        return (self.input_tokens + self.cache_write_tokens + self.cached_tokens
                + self.output_tokens)

    @classmethod
    def planned(cls, plan: CallPlan, run: int, model: str) -> CallRecord:
        return cls(id=plan.id, run=run, wave=plan.wave, parent=plan.parent, key=plan.key,
                   model=model, title=plan.title, status="queued", given=list(plan.given),
                   brief=plan.brief, seed=plan.seed)

    def tools_json(self) -> list[dict[str, Any]]:
        return [asdict(t) for t in self.tools]

    def summary(self) -> dict[str, Any]:
        """The report's ``calls`` entry (formats.md §4)."""
        return {
            "id": self.id,
            "wave": self.wave,
            "parent": self.parent,
            "model": self.model,
            "status": self.status,
            "input_tokens": self.input_tokens,
            "output_tokens": self.output_tokens,
            "cached_tokens": self.cached_tokens,
            "cache_write_tokens": self.cache_write_tokens,
            "seconds": round(self.seconds, 3),
        }
