"""The Claude backend against llmock (a third-party Messages API mock) where it fits:
rate limits with retry-after and broken streams, with a scripted submit_findings reply.
llmock has no count_tokens endpoint, so the budget falls back to characters / 4."""

from __future__ import annotations

from anthropic_helpers import FAKE_KEY, Events, Tools, config, finding, request
from llmock.scenarios import Fail, Match, Reply, ToolCall

from pcscope.core.backends.llm.anthropic import anthropic_backend
from pcscope.core.backends.llm.turn_budget import run_budget


def llmock_backend(llmock, **overrides):
    return anthropic_backend("claude-test", config=config(**overrides), environ={
        "ANTHROPIC_API_KEY": FAKE_KEY, "ANTHROPIC_BASE_URL": llmock.base_url("anthropic")})


def answer() -> dict:
    return {"findings": [finding()], "summary": "one"}


async def test_rate_limit_with_retry_after_then_answer(llmock):
    # on the messages endpoint only (count_tokens requests must not consume it)
    messages = Match(path="*/v1/messages")
    llmock.add(Fail(429, retry_after=0.2, match=messages))
    llmock.add(Reply(tool_calls=(ToolCall("submit_findings", answer()),), match=messages))
    waits = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    async with llmock_backend(llmock) as model:
        model.retrying.sleep = sleep
        model.bind(budget=run_budget(max_tokens=1_000_000))
        response = await model.run(request(), Tools(), Events())
    assert response.error is None
    assert [f.title for f in response.output.findings] == ["Mispredicted indirect call"]
    assert model.retrying.retries == 1 and waits and waits[0] >= 0.2
    assert model.budget.used > 0 and model.budget.held == 0


async def test_truncated_stream_every_time_fails_the_call(llmock):
    llmock.call_tool("submit_findings", answer(), times=None)
    llmock.truncate(after_chunks=2, times=None)
    async with llmock_backend(llmock, max_attempts=2) as model:
        response = await model.run(request(), Tools(), Events())
    assert response.output is None
    assert response.error == "truncated stream (no stop reason) after 2 attempt(s)"
