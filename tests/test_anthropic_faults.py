"""Retries, timeouts, broken streams and cancellation, as the SDK traps make them happen."""

from __future__ import annotations

import asyncio
import time

import pytest
from anthropic_helpers import Events, Tools, backend, finding, request, submit
from mock_messages_server import Fault, MockMessagesServer

from pcscope.core.backends.llm.turn_budget import run_budget


def answer(_body):
    return submit(finding())


class Sleeps:
    """Records retry waits instead of sleeping them."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def total_server_usage(server: MockMessagesServer, field: str) -> int:
    return sum(s.usage.get(field, 0) for s in server.messages_seen())


async def test_429_with_retry_after_then_529_then_success():
    sleeps = Sleeps()
    with MockMessagesServer(answer) as server:
        server.then(Fault.rate_limited(retry_after="2"))
        server.then(Fault.overloaded())
        async with backend(server, concurrency=8) as model:
            model.retrying.sleep = sleeps
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 3
    assert response.error is None and len(response.output.findings) == 1
    assert model.retrying.retries == 2
    assert model.retrying.retry_reasons == {"HTTP 429 rate_limit_error": 1,
                                            "HTTP 529 overloaded_error": 1}
    assert sleeps.waits[0] >= 2.0  # retry-after honoured
    assert sleeps.waits[1] < 0.06  # plain backoff (cap 0.05)
    # AIMD: halved twice (8 -> 4 -> 2), then +1/2 for the success
    assert model.limit.decreases == 2 and model.limit.value == pytest.approx(2.5)


async def test_retry_after_beyond_the_cap_fails_instead_of_retrying_early():
    sleeps = Sleeps()
    with MockMessagesServer(answer) as server:
        server.then(Fault.rate_limited(retry_after="3600"))
        async with backend(server, retry_after_cap_seconds=7.0) as model:
            model.retrying.sleep = sleeps
            response = await model.run(request(), Tools(), Events())
        sent = len(server.messages_seen())
    assert sleeps.waits == [] and sent == 1
    assert "asks to wait 3600 s" in response.error


async def test_x_should_retry_overrides_the_status():
    sleeps = Sleeps()
    with MockMessagesServer(answer) as server:
        server.then(Fault("status", 400, "invalid_request_error", should_retry="true"))
        server.then(Fault("status", 503, "api_error", should_retry="false"))
        async with backend(server) as model:
            model.retrying.sleep = sleeps
            response = await model.run(request(), Tools(), Events())
        sent = len(server.messages_seen())
    # the 400 is retried because the server says so; the 503 is not, for the same reason
    assert sent == 2 and len(sleeps.waits) == 1
    assert response.error.startswith("HTTP 503")


async def test_retry_wait_beyond_max_seconds_fails_without_sleeping():
    sleeps = Sleeps()
    with MockMessagesServer(answer) as server:
        server.then(Fault.rate_limited(retry_after="20"))
        async with backend(server) as model:
            model.retrying.sleep = sleeps
            model.bind(budget=run_budget(max_seconds=5.0))
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 1
    assert sleeps.waits == []
    assert "would pass --max-seconds" in response.error


async def test_error_event_mid_stream_is_retried_and_its_usage_kept():
    with MockMessagesServer(answer) as server:
        server.then(Fault.stream_error(after_events=2))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        sent = server.messages_seen()
        assert len(sent) == 2
        # the broken attempt's message_start usage was billed and is counted
        assert sent[0].usage["cache_creation_input_tokens"] + sent[0].usage["input_tokens"] > 0
        assert response.usage.input_tokens == total_server_usage(server, "input_tokens")
        assert response.usage.cache_write_tokens == total_server_usage(
            server, "cache_creation_input_tokens")
    assert response.error is None
    assert model.retrying.retry_reasons == {"stream error event: overloaded_error": 1}


async def test_dropped_connection_is_retried():
    with MockMessagesServer(answer) as server:
        server.then(Fault.disconnect(after_events=3))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 2
    assert response.error is None
    assert list(model.retrying.retry_reasons) == ["connection lost: RemoteProtocolError"]


async def test_a_stream_that_stops_mid_way_times_out_and_is_retried():
    with MockMessagesServer(answer) as server:
        server.then(Fault.pause(1.5, after_events=3))
        async with backend(server, timeout_seconds=0.3) as model:
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 2
    assert response.error is None
    assert model.retrying.retry_reasons == {"timeout": 1}


async def test_truncated_stream_every_time_fails_the_call_with_all_usage():
    with MockMessagesServer(answer) as server:
        server.then(Fault.truncate(after_events=3), times=None)
        async with backend(server, max_attempts=3) as model:
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 3
        billed = total_server_usage(server, "input_tokens") + total_server_usage(
            server, "cache_creation_input_tokens") + total_server_usage(
            server, "cache_read_input_tokens")
    assert response.output is None
    assert response.error == "truncated stream (no stop reason) after 3 attempt(s)"
    u = response.usage
    assert u.input_tokens + u.cache_write_tokens + u.cache_read_tokens == billed > 0


async def test_timeout_fails_the_call_after_its_attempts():
    with MockMessagesServer(answer) as server:
        server.then(Fault.stall(1.5), times=2)
        async with backend(server, timeout_seconds=0.3, max_attempts=2) as model:
            started = time.monotonic()
            response = await model.run(request(), Tools(), Events())
            elapsed = time.monotonic() - started
    assert response.error == "timeout after 2 attempt(s)"
    assert elapsed < 1.5


async def test_client_errors_are_not_retried():
    with MockMessagesServer(answer) as server:
        server.then(Fault.bad_request("tools.0: bad schema"))
        async with backend(server) as model:
            response = await model.run(request(), Tools(), Events())
        assert len(server.messages_seen()) == 1
    assert response.error == ("HTTP 400 invalid_request_error: tools.0: bad schema "
                              "after 1 attempt(s)")


async def test_cancellation_stops_the_request_and_releases_the_budget():
    budget = run_budget(max_tokens=1_000_000)
    with MockMessagesServer(answer) as server:
        server.then(Fault.stall(3.0))
        async with backend(server) as model:
            model.bind(budget=budget)
            task = asyncio.create_task(model.run(request(), Tools(), Events()))
            while not server.messages_seen():
                await asyncio.sleep(0.01)
            started = time.monotonic()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert time.monotonic() - started < 0.5
    assert budget.held == 0
