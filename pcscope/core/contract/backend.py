"""The one small protocol a model backend implements: run one bounded call.

The engine owns the call: it builds the system text and the brief (the slice's evidence
rendered under IDs), executes every tool request (bounded, logged, and adding the returned
IDs to the call's allowed evidence), and validates the output. A backend only decides
which tools to ask for and what to propose — the offline analyst by rules, Claude by
reading.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from pcscope.core.contract.findings import CallOutput


@dataclass(frozen=True)
class ToolSpec:
    """A tool as a model sees it: name, what it does, JSON schema of its input."""

    name: str
    description: str
    input_schema: dict[str, Any]


@dataclass(frozen=True)
class ToolResult:
    """What a tool returned: text for the model, structured data, and the IDs it exposed."""

    text: str
    data: Any = None
    ids: tuple[str, ...] = ()
    error: str | None = None


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.cache_read_tokens += other.cache_read_tokens
        self.cache_write_tokens += other.cache_write_tokens


@dataclass
class CallRequest:
    """Everything one bounded call is given."""

    call_id: str
    wave: int
    system: str
    brief: str  # the slice's evidence, rendered as delimited data under IDs
    evidence_ids: tuple[str, ...]  # IDs given up front
    tools: tuple[ToolSpec, ...]
    seed: dict[str, Any] = field(default_factory=dict)  # structured slice for rule backends
    max_turns: int = 8


ToolRunner = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
Emit = Callable[[str, Any], None]  # ("text" | "tool_use" | "status", payload) for live views


@dataclass
class CallResponse:
    output: CallOutput | None
    raw: str  # the backend's final answer as it arrived (JSON text), for the record
    usage: Usage = field(default_factory=Usage)
    error: str | None = None  # set when the call failed (output is then None)


class Backend(Protocol):
    """A model: ``name`` for reports (``offline``, ``anthropic:<id>``, ``replay:<file>``)."""

    name: str

    async def run(self, request: CallRequest, use_tool: ToolRunner, emit: Emit) -> CallResponse:
        """Run one bounded call; ask for evidence only through ``use_tool``."""
        ...
