"""The tool-use loop of one structured model call, for any answer schema.

Each turn: build the body, reserve its tokens (or stop without sending), send through the
client stack, settle the reservation with real usage. Tool calls run through the
engine's ``use_tool``; the answer arrives as the input of the answer tool and is
validated by its pydantic model from strictly parsed JSON. A malformed answer (or a turn
without one) gets one re-ask carrying the validation error; a second failure fails the
call. The last allowed turn asks for the answer in words (``tool_choice`` never changes).

The assistant's content goes back verbatim (thinking blocks with their signatures, in
order); a turn with no content is never sent back (the API refuses an empty assistant
message): the next user content joins the previous user message instead. ``pause_turn``
resends the conversation as it stands so the model continues; a refusal or an exceeded
context window ends the call with that reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ValidationError

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.messages_client import ModelClient
from pcscope.core.backends.llm.trace import Tracer
from pcscope.core.backends.llm.turn_budget import TurnBudget, estimate_input_tokens
from pcscope.core.backends.llm.turns import ToolCall, Turn, TurnContext, TurnFailed, total_tokens
from pcscope.core.contract.backend import ToolResult, ToolRunner, ToolSpec, Usage

REASK_INVALID = ("{tool} input is invalid: {error}\nCall {tool} again with corrected input "
                 "(this is the only retry).")
REASK_MISSING = "Call {tool} now with your findings (an empty list if the evidence supports none)."


@dataclass(frozen=True)
class Task:
    """One structured call: instructions, the first user content, tools, answer schema."""

    system: str
    content: list[dict]
    tools: tuple[ToolSpec, ...]
    answer: type[BaseModel]
    answer_tool: ToolSpec
    max_turns: int = 8
    shared: tuple[str, ...] = ()  # stable data for every call of a run (cached with system)
    cache_first: int | None = -1  # first-message block ending its cached part (None: none)


@dataclass
class Outcome:
    output: BaseModel | None
    raw: str
    usage: Usage = field(default_factory=Usage)
    error: str | None = None
    budget: str | None = None  # "tokens" or "seconds" when a budget stopped the call
    turns: int = 0
    tool_calls: int = 0
    reasks: int = 0
    attempts: int = 0


STOPPED = {"refusal": "the model refused",
           "model_context_window_exceeded": "the model's context window was exceeded"}


class Conversation:
    def __init__(self, client: ModelClient, model: str, max_tokens: int,
                 budget: Callable[[], TurnBudget | None], tracer: Tracer,
                 fields: dict | None = None, cache_ttl: str = "5m",
                 weigh: Callable[[Usage], int] = total_tokens) -> None:
        self.client = client
        self.model = model
        self.max_tokens = max_tokens
        self.budget = budget
        self.tracer = tracer
        self.fields = fields or {}
        self.cache_ttl = cache_ttl
        self.weigh = weigh  # usage -> tokens against the budget
        self._counted: tuple[int, int] | None = None  # (estimate, count) of the first turn

    async def run(self, task: Task, use_tool: ToolRunner, ctx: TurnContext) -> Outcome:
        name = task.answer_tool.name
        system = request_bodies.system_blocks(task.system, name, task.shared, bool(task.tools))
        tools = request_bodies.tool_definitions(task.tools, task.answer_tool)
        messages: list[dict] = [{"role": "user", "content": list(task.content)}]
        out = Outcome(None, "")
        for number in range(1, task.max_turns + 1):
            ctx.turn = number
            if number == task.max_turns and number > 1 and messages[-1]["role"] == "user":
                _say(messages, [{"type": "text",
                                 "text": request_bodies.LAST_TURN.format(answer=name)}])
            body = request_bodies.request_body(self.model, self.max_tokens, system, tools, messages,
                                          task.cache_first, fields=self.fields,
                                          cache_ttl=self.cache_ttl)
            turn = await self._turn(body, ctx, out)
            if turn is None:
                return out
            out.turns = number
            content = turn.assistant_content()
            if content:
                messages.append({"role": "assistant", "content": content})
            if turn.stop_reason in STOPPED:
                out.error = STOPPED[turn.stop_reason]
                return out
            if turn.stop_reason == "pause_turn" and content:
                continue  # the server paused a long turn: resend as it stands to continue
            answers = [c for c in turn.tool_calls if c.name == name]
            out.raw = answers[-1].raw if answers else turn.text
            problem = self._accept(task, answers, turn, out)
            if out.output is not None:
                return out
            if out.reasks and problem:
                out.error = f"malformed {name} after a re-ask: {problem}"
                return out
            results = await self._run_tools(task, turn.tool_calls, use_tool, ctx, out, problem)
            if problem:
                out.reasks += 1
                if not turn.tool_calls:
                    results.append({"type": "text",
                                    "text": REASK_MISSING.format(tool=name)})
            _say(messages, results)
        out.error = f"turn limit ({task.max_turns}) reached without {name}"
        return out

    def _accept(self, task: Task, answers: list[ToolCall], turn: Turn,
                out: Outcome) -> str | None:
        """Set ``out.output`` from a valid answer; else say what is wrong (None = keep going)."""
        if answers:
            value, error = answers[-1].parse()
            if error is None:
                try:
                    out.output = task.answer.model_validate(value)
                    return None
                except ValidationError as exc:
                    error = validation_summary(exc)
            if turn.stop_reason == "max_tokens":
                error = f"the answer was cut off at max_tokens ({error}); submit less"
            return error
        if not turn.tool_calls:
            return f"no {task.answer_tool.name} call"
        return None

    async def _turn(self, body: dict, ctx: TurnContext, out: Outcome) -> Turn | None:
        """Reserve, send, settle. None when the call must stop (``out`` says why)."""
        estimate = await self._estimate(body)
        budget = self.budget()
        hold = budget.reserve(estimate + body["max_tokens"]) if budget is not None else None
        if budget is not None and hold is None:
            out.error = f"budget: --max-tokens would be exceeded (turn needs ~{estimate} + " \
                        f"{body['max_tokens']} tokens); not sent"
            out.budget = "tokens"
            return None
        span = self.tracer.chat(ctx, body)
        spent = Usage()
        try:
            turn = await self.client.send(body, ctx)
            spent = turn.usage
        except TurnFailed as failed:
            spent = failed.usage
            out.usage.add(failed.usage)
            out.attempts += failed.attempts
            out.error, out.budget = failed.reason, failed.budget
            self.tracer.chat_done(span, None, failed.usage, failed.attempts, failed.reason)
            return None
        finally:
            if hold is not None:
                budget.settle(hold, self.weigh(spent))
        out.usage.add(turn.usage)
        out.attempts += turn.attempts
        self.tracer.chat_done(span, turn, turn.usage, turn.attempts)
        return turn

    async def _estimate(self, body: dict) -> int:
        """Input tokens: counted by the endpoint once per call (its first turn); later turns
        add the characters / 4 estimate of what the conversation grew by."""
        rough = estimate_input_tokens(body)
        if self._counted is None:
            counted = await self.client.count(body)
            self._counted = (rough, counted if counted is not None else rough)
        first_rough, first_count = self._counted
        return first_count + max(0, rough - first_rough)

    async def _run_tools(self, task: Task, calls: list[ToolCall], use_tool: ToolRunner,
                         ctx: TurnContext, out: Outcome, problem: str | None) -> list[dict]:
        known = {t.name for t in task.tools}
        results = []
        for call in calls:
            if call.name == task.answer_tool.name:
                text = REASK_INVALID.format(tool=call.name, error=problem) if problem else \
                    f"{call.name} must be the only tool call in its turn; call it again."
                results.append(request_bodies.tool_result(call.id, text, error=True))
                continue
            out.tool_calls += 1
            results.append(await self._run_tool(call, known, use_tool, ctx))
        return results

    async def _run_tool(self, call: ToolCall, known: set[str], use_tool: ToolRunner,
                        ctx: TurnContext) -> dict:
        args, error = call.parse()
        span = self.tracer.tool(ctx, call.name, call.id, args if args is not None else call.raw)
        if error is None and call.name not in known:
            error = f"unknown tool {call.name!r}"
        if error is not None:
            self.tracer.tool_done(span, "", (), error)
            return request_bodies.tool_result(call.id, error, error=True)
        result: ToolResult = await use_tool(call.name, args)
        self.tracer.tool_done(span, result.text, result.ids, result.error)
        if result.error:
            return request_bodies.tool_result(call.id, request_bodies.data(f"tool:{call.name}",
                                                                 result.error), error=True)
        return request_bodies.tool_result(call.id, request_bodies.data(f"tool:{call.name}", result.text))


def _say(messages: list[dict], content: list[dict]) -> None:
    """Add user content: a new message after the assistant's, or joined to the last user
    message when the assistant had nothing to say (never an empty assistant turn)."""
    if messages[-1]["role"] == "user":
        messages[-1]["content"] = [*messages[-1]["content"], *content]
    else:
        messages.append({"role": "user", "content": content})


def validation_summary(exc: ValidationError, limit: int = 12) -> str:
    """Pydantic errors as ``path: message`` lines (the input values are not echoed)."""
    lines = [f"{'.'.join(map(str, e['loc'])) or '(root)'}: {e['msg']}"
             for e in exc.errors()[:limit]]
    more = len(exc.errors()) - limit
    return "; ".join(lines) + (f"; … {more} more" if more > 0 else "")

