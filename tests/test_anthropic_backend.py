"""The Claude backend against a local Messages API server, through the real SDK."""

from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace

import pytest
from anthropic_helpers import (
    FAKE_KEY,
    Events,
    Tools,
    backend,
    finding,
    n_messages,
    request,
    submit,
    tool_results,
)
from mock_messages_server import MockMessagesServer, Reply, raw_tool, text, tool

from pcscope.core.backends.llm.anthropic import anthropic_backend
from pcscope.core.backends.llm.turn_budget import run_budget
from pcscope.core.errors import UsageError


def analyst(body: dict) -> Reply:
    """First turn: read the assembly; second: submit one finding citing what was read."""
    if n_messages(body) == 1:
        return Reply([text("Reading the call site."), tool("asm_around", {"pc": "0x2004"})])
    return submit(finding(evidence=["pc:0x2004", "pc:0x2000"]))


async def test_tool_use_loop_returns_validated_findings_and_usage():
    tools, events = Tools(), Events()
    with MockMessagesServer(analyst, min_cache_tokens=1) as server:
        async with backend(server) as model:
            response = await model.run(request(), tools, events)
        sent = server.messages_seen()
    assert response.error is None
    assert tools.calls == [("asm_around", {"pc": "0x2004"})]
    assert [f.title for f in response.output.findings] == ["Mispredicted indirect call"]
    assert response.output.findings[0].evidence == ["pc:0x2004", "pc:0x2000"]
    # usage is the sum of what the server reported for both turns
    assert response.usage.input_tokens == sum(s.usage["input_tokens"] for s in sent)
    assert response.usage.cache_read_tokens == sum(s.usage["cache_read_input_tokens"]
                                                   for s in sent) > 0
    assert response.usage.cache_write_tokens == sum(s.usage["cache_creation_input_tokens"]
                                                    for s in sent) > 0
    # the tool result went back as delimited data, on the tool_use id the server issued
    result = tool_results(sent[1].body)[0]
    assert result["content"][0]["text"].startswith('<pcscope-data kind="tool:asm_around">')
    assert {"text", "tool_use"} <= events.kinds()
    assert "".join(p for k, p in events.seen if k == "text") == "Reading the call site."


async def test_requests_stream_with_fixed_tools_and_four_cache_breakpoints():
    with MockMessagesServer(analyst) as server:
        async with backend(server) as model:
            await model.run(request(), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert all(b["stream"] is True for b in bodies)
    assert [t["name"] for t in bodies[0]["tools"]] == ["asm_around", "submit_findings"]
    assert bodies[0]["tools"] == bodies[1]["tools"] and bodies[0]["system"] == bodies[1]["system"]
    schema = bodies[0]["tools"][1]["input_schema"]
    assert "$defs" not in str(schema) and "enum" not in str(schema["properties"]["findings"]
                                                               ["items"]["properties"]["evidence"])
    for body in bodies:
        marks = str(body).count("'cache_control'")
        assert marks == (3 if n_messages(body) == 1 else 4)
        assert "cache_control" in body["tools"][-1] and "cache_control" in body["system"][-1]


async def test_malformed_submission_is_reasked_once_with_the_error():
    bad = submit(finding(confidence=7))  # out of range
    with MockMessagesServer(lambda b: bad if n_messages(b) == 1 else submit(finding())) as s:
        async with backend(s) as model:
            response = await model.run(request(), Tools(), Events())
        sent = s.messages_seen()
    assert response.error is None and len(response.output.findings) == 1
    assert len(sent) == 2
    (reask,) = tool_results(sent[1].body)
    assert reask["is_error"] is True
    assert "findings.0.confidence" in reask["content"][0]["text"]


async def test_malformed_twice_fails_the_call_after_one_reask():
    with MockMessagesServer(lambda b: submit(finding(pcs=[]))) as server:
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        sent = server.messages_seen()
    assert response.output is None and len(sent) == 2
    assert response.error.startswith("malformed submit_findings after a re-ask")
    assert "findings.0.pcs" in response.error
    assert '"pcs":[]' in response.raw.replace(" ", "")


async def test_lenient_json_is_not_trusted():
    """The SDK would turn {"pc": 0x401000} into {"pc": 0}; we refuse to run the tool."""
    tools = Tools()

    def model(body):
        if n_messages(body) == 1:
            return Reply([raw_tool("asm_around", '{"pc": 0x401000}')])
        return submit()

    with MockMessagesServer(model) as server:
        async with backend(server) as model:
            response = await model.run(request(), tools, Events())
        sent = server.messages_seen()
    assert tools.calls == []
    (result,) = tool_results(sent[1].body)
    assert result["is_error"] and "not valid JSON" in result["content"][0]["text"]
    assert response.error is None and response.output.findings == []


async def test_prose_answer_gets_one_reask_then_fails():
    with MockMessagesServer(lambda b: Reply([text("I think it is the blr.")])) as server:
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        sent = server.messages_seen()
    assert len(sent) == 2 and response.output is None
    assert "submit_findings" in sent[1].body["messages"][-1]["content"][-1]["text"]


async def test_last_turn_asks_for_the_answer_without_changing_tool_choice():
    looping = Reply([tool("asm_around", {"pc": "0x2004"})])
    with MockMessagesServer(lambda b: looping) as server:
        async with backend(server) as model:
            response = await model.run(request(max_turns=3), Tools(), Events())
        bodies = [s.body for s in server.messages_seen()]
    assert len(bodies) == 3
    # tool_choice would invalidate the cached conversation and is refused with thinking on
    assert not any("tool_choice" in b for b in bodies)
    last = bodies[2]["messages"][-1]["content"]
    assert last[-1]["text"].startswith("This is your last turn: call submit_findings")
    assert not any("last turn" in json.dumps(b["messages"]) for b in bodies[:2])
    assert response.error == "turn limit (3) reached without submit_findings"


async def test_token_budget_refuses_before_sending():
    with MockMessagesServer(analyst) as server:
        async with backend(server) as model:
            model.bind(budget=run_budget(max_tokens=100))
            response = await model.run(request(), Tools(), Events())
        assert server.messages_seen() == []
    assert response.output is None and response.error.startswith("budget: --max-tokens")


async def test_budget_reservation_counts_tokens_once_per_call_and_settles_real_usage():
    with MockMessagesServer(analyst) as server:
        budget = run_budget(max_tokens=1_000_000)
        async with backend(server) as model:
            model.bind(budget=budget)
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 2  # two turns, one count
        assert len(server.counted) == 1
    u = response.usage
    assert budget.held == 0
    # cache writes and reads weigh by their price relative to input (3.75 and 0.30 of 3.0);
    # each of the two turns settles its weight rounded to a whole token (half a token each)
    assert abs(budget.used - (u.input_tokens + u.output_tokens + u.cache_write_tokens * 1.25
                              + u.cache_read_tokens * 0.1)) <= 2 * 0.5


async def test_no_count_tokens_endpoint_falls_back_to_characters():
    with MockMessagesServer(analyst, count_tokens=False) as server:
        async with backend(server) as model:
            model.bind(budget=run_budget(max_tokens=1_000_000))
            response = await model.run(request(), Tools(), Events())
        counts = [s for s in server.seen if s.path.endswith("count_tokens")]
    assert response.error is None and len(counts) == 1  # asked once, then never again


async def test_first_call_of_a_wave_warms_the_cache_for_the_rest():
    answered = []

    def model(body):
        # The first reply is slow: calls that did not wait for it would reach the server
        # meanwhile, one of them would write the cache, and the first would read it.
        answered.append(body)
        if len(answered) == 1:
            time.sleep(0.3)
        return submit(finding())

    with MockMessagesServer(model, min_cache_tokens=1) as server:
        requests = [request(f"r1.w1.c{n}", brief=f"slice {n}") for n in range(4)]
        # the test prefix is short: the backend must know it is cacheable, or nobody waits
        # and the order the server sees is left to chance
        async with backend(server, cache_min_tokens={"default": 1}) as b:
            await asyncio.gather(*(b.run(r, Tools(), Events()) for r in requests))
        sent = server.messages_seen()
    assert len(sent) == 4
    assert sent[0].usage["cache_read_input_tokens"] == 0
    assert all(s.usage["cache_read_input_tokens"] > 0 for s in sent[1:])


async def test_offline_and_missing_key_refuse():
    with pytest.raises(UsageError, match="--offline refuses"):
        anthropic_backend("claude-test", offline=True, environ={"ANTHROPIC_API_KEY": FAKE_KEY})
    with pytest.raises(UsageError, match="ANTHROPIC_API_KEY"):
        anthropic_backend("claude-test", environ={})


async def test_key_travels_only_as_a_header():
    with MockMessagesServer(analyst) as server:
        async with backend(server) as model:
            await model.run(request(), Tools(), Events())
        seen = server.seen
    # this SDK sends the key as a bearer token; either way only in a header
    assert all(FAKE_KEY in (s.headers.get("x-api-key", "") + s.headers.get("authorization", ""))
               for s in seen)
    assert not any(FAKE_KEY.encode() in s.raw for s in seen)
    assert FAKE_KEY not in repr(model.__dict__)


async def test_a_call_without_tools_writes_no_message_cache():
    """A single-shot call (the full-prompt baseline) would pay cache writes for nothing."""
    with MockMessagesServer(lambda b: submit(finding()), min_cache_tokens=1) as server:
        async with backend(server) as model:
            req = request()
            response = await model.run(replace(req, tools=()), Tools(), Events())
        (sent,) = server.messages_seen()
    assert response.error is None
    assert [t["name"] for t in sent.body["tools"]] == ["submit_findings"]
    assert "cache_control" not in json.dumps(sent.body["messages"])
