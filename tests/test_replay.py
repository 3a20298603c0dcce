"""--record and --model replay:FILE: a recorded run replays deterministically, offline."""

from __future__ import annotations

import asyncio
import gzip
import json

import pytest
from anthropic_helpers import (
    FAKE_KEY,
    Events,
    Tools,
    backend,
    config,
    finding,
    n_messages,
    request,
    submit,
)
from mock_messages_server import Fault, MockMessagesServer, Reply, text, tool

from pcscope.core.backends.doubles.replay import Recorder, ReplayMissing, create, replay_backend
from pcscope.core.backends.registry import BackendOptions
from pcscope.core.errors import InputError, UsageError


def analyst(body: dict) -> Reply:
    brief = json.dumps(body["messages"][0])
    if n_messages(body) == 1:
        return Reply([text("looking"), tool("asm_around", {"pc": "0x2004"})])
    title = "Slow call in slice two" if "slice two" in brief else "Slow call in slice one"
    return submit(finding(title=title, evidence=["pc:0x2004", "pc:0x2000"]))


REQUESTS = [request("r1.w1.c1", brief="slice one"), request("r1.w1.c2", brief="slice two"),
            request("r1.w1.c3", brief="slice three: truncated")]


def outcome(response) -> tuple:
    return (response.output.model_dump() if response.output else None, response.raw,
            response.usage, response.error)


async def record_run(tmp_path, name="run.jsonl.gz"):
    path = tmp_path / name
    recorder = Recorder(path, max_tokens=config().max_tokens)
    with MockMessagesServer(analyst) as server:
        server.on("slice one", Fault.rate_limited(retry_after="0"))  # one retried turn
        server.on("slice three", Fault.truncate(2), times=None)  # one failed call
        async with backend(server, wrap=recorder.wrap, max_attempts=2) as model:
            responses = await asyncio.gather(*(model.run(r, Tools(), Events())
                                               for r in REQUESTS))
    return path, responses


async def test_replay_reproduces_a_recorded_run_byte_for_byte(tmp_path):
    path, recorded = await record_run(tmp_path, "run.jsonl")
    assert recorded[2].error == "truncated stream (no stop reason) after 2 attempt(s)"
    again = tmp_path / "again.jsonl"
    tools = Tools()
    async with replay_backend(path, config=config(), record=again) as model:
        replayed = [await model.run(r, tools, Events()) for r in reversed(REQUESTS)]
    assert [outcome(r) for r in reversed(replayed)] == [outcome(r) for r in recorded]
    assert tools.calls == [("asm_around", {"pc": "0x2004"})] * 2  # tools ran locally again
    assert again.read_bytes() == path.read_bytes()


async def test_record_holds_requests_and_turns_but_never_the_key(tmp_path):
    path, _ = await record_run(tmp_path)
    data = gzip.decompress(path.read_bytes())
    assert FAKE_KEY.encode() not in data
    lines = [json.loads(line) for line in data.decode().splitlines()]
    assert lines[0] == {"max_tokens": 512, "pcscope_record": 1, "redacted": False}
    exchanges = [x for x in lines if "request" in x]
    assert [x["key"] for x in exchanges] == sorted(x["key"] for x in exchanges)
    retried = [x for x in exchanges if x.get("response", {}).get("attempts") == 2]
    assert len(retried) == 1
    assert sum("failure" in x for x in exchanges) == 1


async def test_a_request_the_record_lacks_is_a_clear_error(tmp_path):
    path, _ = await record_run(tmp_path)
    async with replay_backend(path, config=config()) as model:
        with pytest.raises(ReplayMissing, match=r"no recorded response for call r9.w1.c1 "
                                                r"turn 1 .*differ from the recorded run"):
            await model.run(request("r9.w1.c1", brief="a slice never recorded"), Tools(),
                            Events())


async def test_replay_refuses_a_redaction_mismatch_and_bad_files(tmp_path):
    path, _ = await record_run(tmp_path)
    with pytest.raises(UsageError, match="recorded without --redact"):
        create(str(path), BackendOptions(extra={"redactor": object()}))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"hello": 1}\n')
    with pytest.raises(InputError, match="not a pcscope record"):
        replay_backend(bad)


async def test_the_record_is_complete_without_close(tmp_path):
    """Exchanges are appended as they happen: a run that never closes its backend (or
    crashes) still leaves a record that replays."""
    path = tmp_path / "crash.jsonl"
    recorder = Recorder(path, max_tokens=config().max_tokens)
    with MockMessagesServer(analyst) as server:
        model = backend(server, wrap=recorder.wrap)
        recorded = await model.run(REQUESTS[0], Tools(), Events())
        await model.retrying.aclose()  # the connection only: the recorder is not closed
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["pcscope_record"] == 1
    assert sum('"request"' in line for line in lines) == 2  # both turns of the call
    async with replay_backend(path, config=config()) as replayed:
        again = await replayed.run(REQUESTS[0], Tools(), Events())
    assert outcome(again) == outcome(recorded)
