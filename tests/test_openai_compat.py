"""The OpenAI-compatible backend (on-prem servers) against llmock's chat-completions API."""

from __future__ import annotations

import pytest
from anthropic_helpers import Events, Tools, finding, request
from llmock.scenarios import Fail, Match, Reply, ToolCall

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.openai_compat import chat_request, create
from pcscope.core.backends.registry import BackendOptions
from pcscope.core.errors import UsageError

CHAT = Match(path="*/chat/completions")


def answer() -> dict:
    return {"findings": [finding()], "summary": "one"}


def test_a_messages_body_becomes_a_chat_request():
    system = request_bodies.system_blocks("You analyse.", "submit_findings")
    tools = [{"name": "asm_around", "description": "d", "input_schema": {"type": "object"}}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "evidence"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "reading"},
            {"type": "tool_use", "id": "t1", "name": "asm_around", "input": {"pc": "0x10"}}]},
        {"role": "user", "content": [request_bodies.tool_result("t1", "0x10 blr x3")]},
    ]
    messages[1]["content"].insert(0, {"type": "thinking", "thinking": "hm", "signature": "s"})
    body = request_bodies.request_body("m", 100, system, tools, messages,
                                  fields={"thinking": {"type": "adaptive"}})
    chat = chat_request(body)
    assert chat["messages"][0]["role"] == "system" and "You analyse." in \
        chat["messages"][0]["content"]
    assert chat["messages"][2] == {"role": "assistant", "content": "reading", "tool_calls": [
        {"id": "t1", "type": "function",
         "function": {"name": "asm_around", "arguments": '{"pc": "0x10"}'}}]}
    assert chat["messages"][3] == {"role": "tool", "tool_call_id": "t1",
                                   "content": "0x10 blr x3"}
    assert chat["tools"][0]["function"]["parameters"] == {"type": "object"}
    assert "tool_choice" not in chat and "thinking" not in str(chat)
    assert "cache_control" not in str(chat)


async def test_tool_loop_retry_and_validated_findings(llmock):
    llmock.add(Fail(429, retry_after=0.1, match=CHAT))
    llmock.add(Reply(tool_calls=(ToolCall("asm_around", {"pc": "0x2004"}),), match=CHAT))
    llmock.add(Reply(tool_calls=(ToolCall("submit_findings", answer()),), match=CHAT))
    tools = Tools()
    async with create("mock-model", BackendOptions()) as model:
        model.retrying.sleep = _no_sleep
        response = await model.run(request(), tools, Events())
    assert response.error is None
    assert [f.title for f in response.output.findings] == ["Mispredicted indirect call"]
    assert tools.calls == [("asm_around", {"pc": "0x2004"})]
    assert model.retrying.retries == 1
    last = [r for r in llmock.requests if r.status == 200][-1].body
    assert [m["role"] for m in last["messages"]] == ["system", "user", "assistant", "tool"]


async def test_offline_refuses_it():
    with pytest.raises(UsageError, match="--offline refuses"):
        create("mock-model", BackendOptions(offline_only=True))


async def _no_sleep(_seconds: float) -> None:
    return None
