"""`pcscope mcp` as an agent meets it: a subprocess driven by the mcp SDK's own client, over
stdio (and once over streamable HTTP), on the small bundled `planted` sample."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from pcscope.core.engine.presets import load_preset
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.engine.tools import tool_specs
from pcscope.index.store import open_workload
from pcscope.samples import bundled

SAMPLE = bundled("planted")


@dataclass(frozen=True)
class Index:
    folder: Path  # indexed once per module
    session: Path  # per test


# Two exclusive loads of the planted LL/SC loops (a search for mnemonic:ldaxr finds both).
LDAXR = ("0x400f240cb0", "0x400f23ed1c")


@pytest.fixture(scope="module")
def index_dir(tmp_path_factory) -> Path:
    """Indexed once, so every server below starts without indexing."""
    folder = tmp_path_factory.mktemp("mcp-index")
    open_workload(str(SAMPLE.profile), alp=str(SAMPLE.alp),
                  guides=[str(g) for g in SAMPLE.guides], index_dir=str(folder))
    return folder


@pytest.fixture
def index(index_dir, tmp_path) -> Index:
    """The shared index with a session store of this test's own."""
    return Index(index_dir, tmp_path / "session.sqlite")


def server_args(index: Index, *extra: str) -> list[str]:
    return ["-m", "pcscope", "mcp", str(SAMPLE.profile), "--alp", str(SAMPLE.alp),
            "--index-dir", str(index.folder), "--session", str(index.session), *extra]


@asynccontextmanager
async def connect(index: Index):
    params = StdioServerParameters(command=sys.executable, args=server_args(index),
                                   env=dict(os.environ))
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


async def call(session: ClientSession, tool: str, args: dict) -> tuple[bool, str]:
    result = await session.call_tool(tool, args)
    return bool(result.is_error), result.content[0].text


def finding(pc: str, evidence: list[str], **changes) -> dict:
    body = {"title": "LL/SC retry loop on a shared lock", "category": "atomic-llsc",
            "target": "software",
            "claim": "The exclusive load/store pair spins and retries under contention.",
            "recommendation": "Build with LSE atomics (-march=armv8.1-a or -moutline-atomics).",
            "pcs": [pc], "evidence": evidence, "confidence": 0.6, "basis": "measured"}
    return {**body, **changes}


def store_of(index: Index) -> SessionStore:
    return SessionStore(index.session)


async def test_lists_tools_resources_and_prompts(index) -> None:
    async with connect(index) as session:
        tools = {t.name: t for t in (await session.list_tools()).tools}
        assert set(tools) == {s.name for s in tool_specs()} | {"submit_findings"}
        assert {"hot_windows", "mechanisms", "asm_around", "window", "search", "regex",
                "group", "alp", "guide", "finding", "remember"} <= set(tools)
        assert tools["search"].input_schema["properties"]["query"]["maxLength"] == 200
        assert "findings" in tools["submit_findings"].input_schema["properties"]
        resources = {str(r.uri) for r in (await session.list_resources()).resources}
        assert {"pcscope://report", "pcscope://runs"} <= resources
        assert "pcscope://guide/swopt/compiler-flags" in resources
        templates = (await session.list_resource_templates()).resource_templates
        assert [t.uri_template for t in templates] == ["pcscope://run/{run}/calls"]
        prompts = {p.name for p in (await session.list_prompts()).prompts}
        assert {"triage-quick", "triage-standard", "triage-deep", "explain-pc"} <= prompts
        quick = await session.get_prompt("triage-quick")
        text = quick.messages[0].content.text
        quick_coverage = load_preset("quick").coverage
        assert f"preset quick: the hot windows covering {quick_coverage:.0%}" in text \
            or f"hot windows covering {quick_coverage:.0%}" in text
        assert "submit_findings" in text
        explain = await session.get_prompt("explain-pc", {"pc": "0X400F240CB0"})
        assert "asm_around` at 0x400f240cb0" in explain.messages[0].content.text
        with pytest.raises(MCPError, match="bad pc"):
            await session.get_prompt("explain-pc", {"pc": "nowhere"})
        guide = await session.read_resource("pcscope://guide/swopt/compiler-flags")
        assert guide.contents[0].text.startswith('guide:swopt/compiler-flags "')
        with pytest.raises(MCPError, match="no resource"):
            await session.read_resource("pcscope://elsewhere")
    with store_of(index) as store:  # every request that asked for something is logged
        (run,) = store.runs()
        (record,) = store.calls(run.id)
        assert [(t.tool, t.error is not None) for t in record.tools] == [
            ("prompts/get", False), ("prompts/get", False), ("prompts/get", True),
            ("guide", False), ("resources/read", True)]
        assert record.tools[3].ids == ["guide:swopt/compiler-flags"]


async def test_every_tool_answers_within_its_bounds(index) -> None:
    async with connect(index) as session:
        error, hot = await call(session, "hot_windows", {"top": 3})
        assert not error and hot.startswith("3 hot windows covering")
        window = re.search(r"win:0x[0-9a-f]+", hot).group(0)
        error, text = await call(session, "window", {"id": window})
        assert not error and text.startswith(f"window {window}")
        error, text = await call(session, "mechanisms", {})
        assert not error and re.match(r"\d+ mechanisms, showing \d+", text)
        error, text = await call(session, "search", {"query": "mnemonic:ldaxr", "limit": 5})
        assert not error and all(f"pc:{pc}" in text for pc in LDAXR)
        error, text = await call(session, "asm_around", {"pc": LDAXR[0], "before": 2,
                                                         "after": 2})
        assert not error and re.search(rf"^>\s*pc:{LDAXR[0]}\s+ldaxr", text, re.M)
        error, text = await call(session, "regex", {"pattern": "^ldaxr", "limit": 5})
        assert not error and "2 matches" in text
        error, text = await call(session, "group", {"by": "mnemonic", "limit": 3})
        assert not error and text.startswith("group by mnemonic: ")
        error, text = await call(session, "alp", {"pc": list(LDAXR)})
        assert not error and [line.split()[0] for line in text.splitlines()] == [
            f"alp:{pc}" for pc in LDAXR]
        error, text = await call(session, "guide", {"query": "LSE atomics", "k": 2})
        assert not error and text.startswith("guide:")
        error, text = await call(session, "remember", {"name": "locks",
                                                        "ids": [f"pc:{pc}" for pc in LDAXR]})
        assert (error, text) == (False, "stored 2 IDs as set:locks")
        error, text = await call(session, "finding", {"id": "set:locks"})
        assert not error and text == f"set:locks: pc:{LDAXR[0]} pc:{LDAXR[1]}"
        error, text = await call(session, "remember", {"name": "fake",
                                                        "ids": ["alp:0x400f23ed00"]})
        assert error and "only IDs this call may cite" in text
    with store_of(index) as store:
        (run,) = store.runs()
        (record,) = store.calls(run.id)
        assert [t.tool for t in record.tools][:4] == ["hot_windows", "window", "mechanisms",
                                                     "search"]
        assert len(record.tools) == 12 and f"pc:{LDAXR[0]}" in record.fetched
        assert (run.status, record.status) == ("cancelled", "cancelled")  # never submitted
        assert store.sets(run.id)["locks"][1] == [f"pc:{pc}" for pc in LDAXR]


async def test_a_fabricated_id_is_rejected_and_an_honest_finding_stored(index) -> None:
    async with connect(index) as session:
        error, text = await call(session, "search", {"query": "mnemonic:ldaxr"})
        assert not error
        # The search returned pc: IDs, never the alp: record: citing it is fabrication.
        error, text = await call(session, "submit_findings", {"findings": [
            finding(LDAXR[0], [f"pc:{LDAXR[0]}", f"alp:{LDAXR[0]}"])]})
        assert not error
        assert text.splitlines()[1] == ('rejected "LL/SC retry loop on a shared lock": '
                                        f"evidence id not given to this call: alp:{LDAXR[0]}")
        error, text = await call(session, "alp", {"pc": LDAXR[0]})
        assert not error
        error, text = await call(session, "submit_findings", {"findings": [
            finding(LDAXR[0], [f"pc:{LDAXR[0]}", f"alp:{LDAXR[0]}"])],
            "summary": "one LL/SC loop"})
        assert not error and "1 accepted, 0 rejected; the run has 1 ideas" in text
        assert 'accepted finding:w1.c2.f1 "LL/SC retry loop on a shared lock"' in text
        report = (await session.read_resource("pcscope://report")).contents[0].text
        assert "### 1. LL/SC retry loop on a shared lock" in report
        calls = await session.read_resource("pcscope://run/1/calls")
        # Reading resources is logged too: in a third call, open until a submission.
        assert [(c["status"], [t["tool"] for t in c["tools"]])
                for c in json.loads(calls.contents[0].text)] == [
            ("ok", ["search"]), ("ok", ["alp"]), ("running", ["resources/read"])]
    out = subprocess.run([sys.executable, "-m", "pcscope", "calls", str(SAMPLE.profile),
                          "--session", str(index.session), "--json"],
                         capture_output=True, text=True, check=True)
    listed = json.loads(out.stdout)
    assert [(c["id"], c["status"], c["accepted"], c["rejected"])
            for c in listed["calls"]] == [
        ("w1.c1", "ok", [], 1), ("w1.c2", "ok", ["finding:w1.c2.f1"], 0),
        ("w1.c3", "cancelled", [], 0)]  # the client left without submitting again
    with store_of(index) as store:
        (run,) = store.runs()
        assert (run.status, run.model) == ("done", "mcp:mcp")
        (idea,) = store.ideas(run.id)
        assert idea["pcs"] == [LDAXR[0]] and idea["basis"] == "measured"
        assert store.report(run.id)["ideas"][0]["merged_from"] == ["finding:w1.c2.f1"]


async def test_bad_requests_get_clear_errors_and_the_server_stays_up(index) -> None:
    async with connect(index) as session:
        error, text = await call(session, "search", {"query": "x" * 20_000})
        assert error and "search request of 20,013 characters is over the 4,000" in text
        error, text = await call(session, "search", {"query": "ldaxr", "limit": "many"})
        assert error and text.startswith("error: bad search request: ")
        error, text = await call(session, "search", {"query": "ldaxr", "where": "x"})
        assert error and "Extra inputs are not permitted" in text
        error, text = await call(session, "asm_around", {"pc": "0xdeadbeef"})
        assert error and "0xdeadbeef" in text
        error, text = await call(session, "rm -rf", {})
        assert error and "unknown tool 'rm -rf'" in text
        error, text = await call(session, "submit_findings", {"findings": "all of them"})
        assert error and "malformed output: findings: Input should be a valid array" in text
        error, text = await call(session, "submit_findings",
                                 {"findings": [finding(LDAXR[0], ["pc:0x1"])] * 17})
        assert error and "malformed output: findings" in text
        error, text = await call(session, "submit_findings",
                                 {"findings": [], "summary": "y" * 300_000})
        assert error and "over the 200,000 limit" in text
        error, text = await call(session, "search", {"query": "mnemonic:ldaxr"})
        assert not error and "2 matches" in text  # still serving


async def test_concurrent_clients_on_one_profile_lose_no_writes(index) -> None:
    clients, rounds = 3, 2

    async def agent(n: int) -> None:
        async with connect(index) as session:
            for _ in range(rounds):
                error, _text = await call(session, "search", {"query": "mnemonic:ldaxr"})
                assert not error
                error, text = await call(session, "submit_findings", {"findings": [
                    finding(LDAXR[n % 2], [f"pc:{LDAXR[n % 2]}"], basis="profile-only")]})
                assert not error and "1 accepted" in text

    async with anyio.create_task_group() as group:
        for n in range(clients):
            group.start_soon(agent, n)
    with store_of(index) as store:
        runs = store.runs()
        assert len(runs) == clients and {r.status for r in runs} == {"done"}
        for run in runs:
            calls = store.calls(run.id)
            assert [c.id for c in calls] == ["w1.c1", "w1.c2"]
            assert all(len(c.tools) == 1 for c in calls)
            assert len(store.findings(run.id)) == rounds
            assert len(store.ideas(run.id)) == 1  # the same PC twice merges into one idea


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


async def test_streamable_http(index) -> None:
    port = _free_port()
    server = subprocess.Popen([sys.executable, *server_args(index, "--http", f"{port}")],
                              stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, server.stderr.read()
                assert time.monotonic() < deadline, "server did not listen"
                await anyio.sleep(0.2)
        url = f"http://127.0.0.1:{port}/mcp"
        honest = {"findings": [finding(LDAXR[1], [f"pc:{LDAXR[1]}"], basis="profile-only")]}
        async with streamable_http_client(url) as (read, write), \
                ClientSession(read, write) as session, \
                streamable_http_client(url) as (other_read, other_write), \
                ClientSession(other_read, other_write) as other:
            await session.initialize()
            await other.initialize()
            assert "submit_findings" in {t.name for t in (await session.list_tools()).tools}
            error, text = await call(session, "search", {"query": "mnemonic:ldaxr"})
            assert not error and f"pc:{LDAXR[1]}" in text
            # Each HTTP session has its own evidence: what one client saw, another may not cite.
            error, text = await call(other, "submit_findings", honest)
            assert not error and f"evidence id not given to this call: pc:{LDAXR[1]}" in text
            error, text = await call(session, "submit_findings", honest)
            assert not error and "1 accepted" in text
    finally:
        server.terminate()
        server.wait(timeout=30)
    with store_of(index) as store:
        runs = store.runs()
        assert [(r.status, len(store.findings(r.id))) for r in runs] == [("done", 1),
                                                                         ("done", 0)]


def test_skill_and_configuration_for_each_agent(tmp_path) -> None:
    import tomllib

    code = ("import sys; from pcscope.cli.main import main; code = main(sys.argv[1:]); "
            "print('mcp loaded' if 'mcp' in sys.modules else 'mcp not loaded'); "
            "raise SystemExit(code)")
    for agent in ("claude", "codex"):
        out = subprocess.run([sys.executable, "-c", code, "skill", "--agent", agent, "-o",
                              str(tmp_path / agent), str(SAMPLE.profile), "--alp",
                              str(SAMPLE.alp)], capture_output=True, text=True, check=True)
        assert out.stdout.strip().endswith("mcp not loaded")  # only `pcscope mcp` imports it
        add = {"claude": "claude mcp add --scope project pcscope -- ",
               "codex": "codex mcp add pcscope -- "}[agent]
        assert add in out.stdout
        skill = (tmp_path / agent / "SKILL.md").read_text()
        front, body = skill.split("\n---\n", 1)
        lines = front.splitlines()
        assert lines[:2] == ["---", "name: pcscope"]
        assert json.loads(lines[2].removeprefix("description: ")).startswith("Find grounded")
        for heading in ("## Workflow", "## Reading IDs and figures",
                        "## What gets rejected, and why"):
            assert heading in body
        assert "cites an ID that no tool returned to you" in " ".join(body.split())
        expected = ["mcp", str(SAMPLE.profile.resolve()), "--alp", str(SAMPLE.alp.resolve())]
        if agent == "claude":
            server = json.loads((tmp_path / agent / "mcp.json").read_text())["mcpServers"]
        else:
            server = tomllib.loads((tmp_path / agent / "config.toml").read_text())
            server = server["mcp_servers"]
            assert server["pcscope"]["startup_timeout_sec"] >= 60
        assert server["pcscope"]["args"] == expected
