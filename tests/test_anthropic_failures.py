"""Failures are visible: when no call succeeds, `analyze` says why and where on stderr and
exits non-zero (a dead endpoint, a rejected key, an unknown model, a prompt too long)."""

from __future__ import annotations

import socket

import pytest
from anthropic_helpers import FAKE_KEY, workload
from mock_messages_server import Fault, MockMessagesServer

from pcscope.cli.main import main


@pytest.fixture
def analyze(tmp_path, monkeypatch):
    """`pcscope analyze` of the small workload against ``base_url`` (fast retries)."""
    workload(tmp_path / "w")
    config = tmp_path / "config" / "pcscope"
    config.mkdir(parents=True)
    (config / "anthropic.toml").write_text("max_attempts = 2\nbackoff_base_seconds = 0.01\n"
                                           "backoff_cap_seconds = 0.02\n", encoding="utf-8")
    (config / "presets").mkdir()
    (config / "presets" / "one.toml").write_text(  # a call per window, all 4 windows
        "coverage = 1.0\ndepth = 1\nwindows_per_slice = 1\n", encoding="utf-8")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("ANTHROPIC_API_KEY", FAKE_KEY)

    def run(base_url: str, *more: str) -> int:
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        folder = tmp_path / "w"
        return main(["analyze", str(folder / "client_trace.csv"), "--index-dir",
                     str(folder / "idx"), "--session", str(tmp_path / "s.sqlite"), "--quiet",
                     "--preset", "one", "--model", "anthropic:claude-test", *more])

    return run


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_dead_endpoint_is_named_with_the_reason(analyze, capsys):
    url = f"http://127.0.0.1:{free_port()}"
    assert analyze(url) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("pcscope: error: no model call succeeded")
    assert "cannot connect to the endpoint" in err[0] and url in err[0]
    assert FAKE_KEY not in err[0]


@pytest.mark.parametrize("status, kind, message", [
    (401, "authentication_error", "invalid x-api-key"),
    (403, "permission_error", "your key may not use this model"),
    (404, "not_found_error", "model: claude-test"),
    (400, "invalid_request_error", "prompt is too long: 250000 tokens > 200000 maximum"),
])
def test_a_refused_request_is_named_with_the_servers_reason(analyze, capsys, status, kind,
                                                            message):
    with MockMessagesServer() as server:
        server.then(Fault("status", status, kind, message=message), times=None)
        code = analyze(server.base_url)
        sent = len(server.messages_seen())
    err = capsys.readouterr().err
    assert code == 2
    assert f"HTTP {status} {kind}: {message}" in err and server.base_url in err
    assert "(4 failed; 4 with:" in err and sent == 4  # one attempt per call: none retried


def test_one_call_succeeding_is_not_an_error(analyze, capsys):
    from scripted_analyst import analyst

    with MockMessagesServer(analyst) as server:
        server.then(Fault("status", 401, "authentication_error", message="bad key"))
        assert analyze(server.base_url, "--concurrency", "1") == 0
