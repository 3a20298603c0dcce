"""Reasoning kept through the tool loop, against the local Messages API server: thinking
blocks go back verbatim and in order, no empty assistant turn is ever sent, and the stop
reasons that end or pause a turn are handled."""

from __future__ import annotations

from anthropic_helpers import Events, Tools, backend, finding, request, submit
from mock_messages_server import (
    MockMessagesServer,
    Reply,
    redacted_thinking,
    text,
    thinking,
    tool,
)


def assistant_turns(body: dict) -> list[list[dict]]:
    return [m["content"] for m in body["messages"] if m["role"] == "assistant"]


async def test_thinking_blocks_round_trip_verbatim_through_the_tool_loop():
    first = [thinking("The blr at 0x2004 is hot; read around it."), text("Reading."),
             tool("asm_around", {"pc": "0x2004"})]
    second = [redacted_thinking("EncryptedOpaqueBlob=="), thinking("Enough evidence."),
              tool("asm_around", {"pc": "0x2008"})]
    with MockMessagesServer() as server:
        server.then(Reply(first))
        server.then(Reply(second))
        server.then(Reply([thinking("Submit."), *submit(finding()).content]))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert response.error is None and len(response.output.findings) == 1
    assert len(bodies) == 3  # the server refuses (400) any thinking block not echoed exactly
    echoed = assistant_turns(bodies[2])
    assert [b["type"] for b in echoed[0]] == ["thinking", "text", "tool_use"]
    assert echoed[0][0] == {"type": "thinking", "thinking": first[0]["thinking"],
                            "signature": first[0]["signature"]}
    assert [b["type"] for b in echoed[1]] == ["redacted_thinking", "thinking", "tool_use"]
    assert echoed[1][0] == {"type": "redacted_thinking", "data": "EncryptedOpaqueBlob=="}
    assert all(b["thinking"] == {"type": "adaptive"} for b in bodies)


async def test_effort_and_thinking_off_are_sent_on_every_turn():
    with MockMessagesServer() as server:
        server.then(Reply([tool("asm_around", {"pc": "0x2004"})]))
        server.then(submit())
        async with backend(server, thinking="off", effort="low") as model:
            response = await model.run(request(), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert response.error is None
    assert all(b["thinking"] == {"type": "disabled"} and b["output_config"] == {"effort": "low"}
               for b in bodies)


async def test_an_empty_answer_is_never_sent_back_as_an_empty_assistant_turn():
    with MockMessagesServer() as server:
        server.then(Reply([], stop_reason="end_turn"))
        server.then(submit(finding()))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert response.error is None and len(bodies) == 2
    assert [m["role"] for m in bodies[1]["messages"]] == ["user"]
    assert all(m["content"] for b in bodies for m in b["messages"])
    assert "submit_findings" in bodies[1]["messages"][0]["content"][-1]["text"]


async def test_pause_turn_resends_the_conversation_to_continue():
    with MockMessagesServer() as server:
        server.then(Reply([thinking("Long think."), text("Still working")],
                          stop_reason="pause_turn"))
        server.then(submit(finding()))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert response.error is None and len(bodies) == 2
    assert bodies[1]["messages"][-1]["role"] == "assistant"
    assert bodies[1]["messages"][-1]["content"][1] == {"type": "text", "text": "Still working"}


async def test_refusal_and_context_exceeded_end_the_call_with_their_reason():
    for stop, reason in (("refusal", "the model refused"),
                         ("model_context_window_exceeded",
                          "the model's context window was exceeded")):
        with MockMessagesServer() as server:
            server.then(Reply([text("no")], stop_reason=stop))
            async with backend(server) as model:
                response = await model.run(request(), Tools(), Events())
            sent = len(server.messages_seen())
        assert sent == 1 and response.output is None and response.error == reason


def test_the_default_model_is_one_the_installed_sdk_lists_and_prices_are_dated():
    from typing import get_args

    from anthropic.types.model_param import ModelParam

    from pcscope.core.backends.llm.anthropic_config import load_config

    listed = next(get_args(a) for a in get_args(ModelParam) if get_args(a))
    config = load_config()
    assert config.default_model in listed
    sonnets = [m for m in listed if m.startswith("claude-sonnet-")]
    assert config.default_model == sonnets[0]  # the SDK lists the newest first
    assert config.prices_checked and config.price(config.default_model) is not None
