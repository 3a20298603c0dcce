"""A model backend: one bounded call as a tool-use conversation over a ``ModelClient``.

The call's evidence goes in as delimited data, the engine's tools plus ``submit_findings``
(input validated by ``CallOutput``) as tools; turns stream to live views; retries and AIMD
pacing sit below, budgets are reserved before each turn, traces and usage are recorded.
The same machinery serves Claude, replay and OpenAI-compatible servers; only the client
differs. ``ask`` runs any other structured call (the judge, the model reviewer).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.anthropic_config import AnthropicConfig
from pcscope.core.backends.llm.conversation import Conversation, Outcome, Task
from pcscope.core.backends.llm.messages_client import ModelClient
from pcscope.core.backends.llm.pacing import AdaptiveLimit
from pcscope.core.backends.llm.retry import RetryingClient, RetryPolicy
from pcscope.core.backends.llm.trace import Tracer
from pcscope.core.backends.llm.turn_budget import TurnBudget, engine_budget, estimate_input_tokens
from pcscope.core.backends.llm.turns import TurnContext, canonical
from pcscope.core.contract.backend import CallRequest, CallResponse, Emit, ToolRunner, Usage
from pcscope.core.contract.findings import CallOutput

SUBMIT_FINDINGS = request_bodies.answer_tool(
    "submit_findings",
    "Submit this call's findings (the final answer; call exactly once). Each finding cites "
    "evidence IDs given to this call or returned by its tools, and the PCs it is about.",
    CallOutput,
)
INSTRUCTION = ("Analyse the evidence above (use the tools for more), then call "
               "submit_findings.")


def call_content(request: CallRequest) -> list[dict]:
    """The first user message of a bounded call: its evidence (IDs stand where their data
    is; no separate list) and the instruction."""
    return [{"type": "text", "text": request_bodies.data("evidence", request.brief)},
            {"type": "text", "text": INSTRUCTION}]


class WaveWarmup:
    """The first call of each wave sends alone; the rest start once its response has
    begun, by which time the shared prefix (tools, system) is in the prompt cache. A
    prefix shorter than the model's minimum cacheable length is never cached, so then
    nobody waits."""

    def __init__(self) -> None:
        self._started: dict[int, asyncio.Event] = {}

    async def enter(self, wave: int) -> asyncio.Event | None:
        """The event to set when this call's first response starts (first caller only)."""
        event = self._started.get(wave)
        if event is None:
            event = self._started[wave] = asyncio.Event()
            return event
        await event.wait()
        return None


@dataclass(frozen=True)
class Secret:
    """A value that must never be shown: scrubbed from any text we store."""

    value: str

    def __repr__(self) -> str:
        return "Secret(***)"

    def scrub(self, text: str | None) -> str | None:
        if not text or not self.value:
            return text
        return text.replace(self.value, "[redacted key]")


class ModelBackend:
    """The conversation machinery over any ``ModelClient`` (live, recorded or replayed)."""

    def __init__(self, name: str, model: str, client: ModelClient, config: AnthropicConfig,
                 *, concurrency: int = 8, tracer: Tracer | None = None,
                 secret: Secret | None = None,
                 wrap: Callable[[ModelClient], ModelClient] | None = None) -> None:
        self.name = name
        self.model = model
        self.endpoint = str(getattr(client, "base_url", name))  # for error messages
        self.config = config
        self.budget: TurnBudget | None = None
        self.limit = AdaptiveLimit(concurrency)
        self.secret = secret or Secret("")
        self.tracer = tracer or Tracer(None, name, scrub=self.secret.scrub)
        self.retrying = RetryingClient(client, self.policy(), self.limit, lambda: self.budget,
                                       scrub=self.secret.scrub)
        # The recorder wraps the retry layer: it stores each turn's final outcome.
        self.client: ModelClient = wrap(self.retrying) if wrap else self.retrying
        self.warmup = WaveWarmup()
        self.usage = Usage()
        self.calls = 0

    def policy(self) -> RetryPolicy:
        c = self.config
        return RetryPolicy(c.max_attempts, c.backoff_base_seconds, c.backoff_cap_seconds,
                           c.retry_after_cap_seconds)

    def bind(self, *, budget: TurnBudget | None = None, run_budget=None,
             concurrency: int | None = None) -> None:
        """A turn budget (``budget``) or the orchestrator's ``Budget`` (``run_budget``),
        reserved before every turn, and the concurrency ceiling for AIMD pacing."""
        if run_budget is not None:
            budget = engine_budget(run_budget)
        if budget is not None:
            self.budget = budget
        if concurrency is not None:
            self.limit = self.retrying.limit = AdaptiveLimit(concurrency)

    async def aclose(self) -> None:
        """Close connections and write the record, if any (once, at the end of a run)."""
        await self.client.aclose()

    async def __aenter__(self) -> ModelBackend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    def cost(self, usage: Usage) -> float | None:
        return self.config.cost(self.model, usage)

    def weigh(self, usage: Usage) -> int:
        """Tokens against a token budget, cache writes and reads weighed by price."""
        return self.config.weigh(self.model, usage)

    def stable_prefix(self, task: Task) -> tuple[list[dict], list[dict]]:
        """(tools, system blocks) as every call of the run sends them."""
        return (request_bodies.tool_definitions(task.tools, task.answer_tool),
                request_bodies.system_blocks(task.system, task.answer_tool.name, task.shared,
                                        bool(task.tools)))

    async def measure(self, system: str, brief: str) -> int:
        """Input tokens of a one-turn call without tools (the full prompt), every part
        counted: by the endpoint's count_tokens, else at 3 characters per token."""
        request = CallRequest("measure", 1, system, brief, (), ())
        task = self._task(request)
        tools, blocks = self.stable_prefix(task)
        body = request_bodies.request_body(self.model, self.config.max_tokens, blocks, tools,
                                      [{"role": "user", "content": task.content}],
                                      task.cache_first, fields=self.config.request_fields())
        counted = await self.client.count(body)
        return counted if counted is not None else -(-len(canonical(body)) // 3)

    def cacheable(self, task: Task) -> bool:
        """Whether the stable prefix reaches the model's minimum cacheable length."""
        tools, system = self.stable_prefix(task)
        size = estimate_input_tokens({"tools": tools, "system": system})
        return size >= self.config.cache_minimum(self.model)

    async def run(self, request: CallRequest, use_tool: ToolRunner, emit: Emit) -> CallResponse:
        task = self._task(request)
        ctx = TurnContext(request.call_id, request.wave,
                          int(request.seed.get("depth", request.wave)),
                          evidence_ids=request.evidence_ids, emit=emit)
        outcome = await self.ask(task, use_tool, ctx)
        return CallResponse(outcome.output, outcome.raw, outcome.usage, outcome.error)

    @staticmethod
    def _task(request: CallRequest) -> Task:
        # Without tools (the full-prompt baseline) a call is one turn: nothing to re-read.
        return Task(request.system, call_content(request), request.tools, CallOutput,
                    SUBMIT_FINDINGS, request.max_turns,
                    cache_first=-1 if request.tools else None)

    async def ask(self, task: Task, use_tool: ToolRunner, ctx: TurnContext) -> Outcome:
        """Any structured call (bounded analysis, judge, model review) through one loop."""
        first = await self.warmup.enter(ctx.wave) if self.cacheable(task) else None
        if first is not None:
            ctx.on_started = first.set
        span = self.tracer.call(ctx, self.model)
        conversation = Conversation(self.client, self.model, self.config.max_tokens,
                                    lambda: self.budget, self.tracer,
                                    self.config.request_fields(), self.config.cache_ttl,
                                    self.weigh)
        outcome: Outcome | None = None
        try:
            outcome = await conversation.run(task, use_tool, ctx)
        finally:
            if first is not None:
                first.set()
            self.calls += 1
            if outcome is not None:
                self.usage.add(outcome.usage)
                self.tracer.end(span, outcome.error, **{
                    "pcscope.turns": outcome.turns, "pcscope.tool_calls": outcome.tool_calls,
                    "pcscope.reasks": outcome.reasks, "pcscope.attempts": outcome.attempts})
        outcome.error = self.secret.scrub(outcome.error)
        return outcome
