"""--redact: real function, module and file names never leave; findings come back real."""

from __future__ import annotations

import json

from anthropic_helpers import Events, backend, finding, n_messages, request, submit
from mock_messages_server import MockMessagesServer, Reply, tool

from pcscope.core.backends.llm.redact import RedactingBackend, Redactor
from pcscope.core.contract.backend import ToolResult

NAMES = {"runtime_dispatch": "redacted_fn_1", "memcpy": "redacted_fn_2",
         "memcpy@plt": "redacted_fn_3", "std::vector<int>::push_back(int)": "redacted_fn_4",
         "libjit.so": "redacted_mod_0", "client_trace.csv": "redacted_file_0",
         "client_trace": "redacted_file_1"}
REAL = [n for n in NAMES]


def test_outbound_replaces_whole_names_longest_first_and_inbound_restores():
    r = Redactor(dict(NAMES))
    text = ("fn:runtime_dispatch calls memcpy@plt then memcpy in libjit.so; "
            "std::vector<int>::push_back(int) too; memcpy_fast and my_memcpy stay; "
            "input client_trace.csv")
    out = r.outbound(text)
    assert out == ("fn:redacted_fn_1 calls redacted_fn_3 then redacted_fn_2 in redacted_mod_0; "
                   "redacted_fn_4 too; memcpy_fast and my_memcpy stay; input redacted_file_0")
    assert r.inbound(out) == text
    assert r.inbound("redacted_fn_99 is unknown") == "redacted_fn_99 is unknown"


def test_a_name_before_a_separator_is_redacted():
    r = Redactor({"memcpy": "redacted_fn_2"})
    assert r.outbound("bl memcpy@plt <memcpy.isra.0>") == \
        "bl redacted_fn_2@plt <redacted_fn_2.isra.0>"


async def test_no_real_name_in_any_request_body_and_findings_come_back_real():
    brief = ("window win:0x2000 fn:runtime_dispatch module libjit.so (client_trace.csv)\n"
             "pc:0x2004  blr x3  ; target memcpy@plt or std::vector<int>::push_back(int)")
    asked = []

    async def use_tool(name: str, args: dict) -> ToolResult:
        asked.append(args)
        return ToolResult(f"fn:{args['function']} calls memcpy", ids=("fn:runtime_dispatch",))

    def model(body: dict) -> Reply:
        if n_messages(body) == 1:
            return Reply([tool("asm_around", {"pc": "0x2004", "function": "redacted_fn_1"})])
        return submit(finding(title="redacted_fn_1 dispatch mispredicts",
                              claim="redacted_fn_1 in redacted_mod_0 calls redacted_fn_3",
                              evidence=["pc:0x2004", "fn:redacted_fn_1"]))

    with MockMessagesServer(model) as server:
        async with backend(server) as inner:
            redacting = RedactingBackend(inner, Redactor(dict(NAMES)))
            response = await redacting.run(request(brief=brief), use_tool, Events())
        bodies = [s.body for s in server.seen]
    # tool definitions are the run's fixed schema (its category list names ``memcpy``)
    assert all(b["tools"] == bodies[0]["tools"] for b in bodies)
    sent = json.dumps([{k: v for k, v in b.items() if k != "tools"} for b in bodies])
    for name in REAL:
        assert json.dumps(name)[1:-1] not in sent, name
    assert asked == [{"pc": "0x2004", "function": "runtime_dispatch"}]
    f = response.output.findings[0]
    assert f.title == "runtime_dispatch dispatch mispredicts"
    assert f.claim == "runtime_dispatch in libjit.so calls memcpy@plt"
    assert f.evidence == ["pc:0x2004", "fn:runtime_dispatch"]



async def test_redacted_engine_run_sends_no_workload_name(tmp_path):
    from anthropic_helpers import workload
    from scripted_analyst import analyst

    from pcscope.core.engine.orchestrator import Orchestrator
    from pcscope.core.engine.presets import resolve
    from pcscope.core.engine.session_store import SessionStore

    work = workload(tmp_path / "w")
    redactor = Redactor.for_workload(work)
    assert Redactor.for_workload(workload(tmp_path / "w")).aliases == redactor.aliases  # stable
    assert {"runtime_dispatch", "hot_loop", "cold_math", "libjit.so", "app",
            "client_trace.csv", "client_trace", "alp.jsonl", "alp"} <= set(redactor.aliases)
    assert "<unknown_02>" not in redactor.aliases
    settings = resolve(None, {"windows_per_slice": 1, "depth": 2})
    with MockMessagesServer(analyst) as server:
        with SessionStore(tmp_path / "s.sqlite") as session:
            async with backend(server) as inner:
                result = await Orchestrator(work, RedactingBackend(inner, redactor), settings,
                                            session).run()
        sent = json.dumps([s.body["messages"] for s in server.messages_seen()])
    assert result.ideas and {c.status for c in result.calls} == {"ok"}
    for name in ("runtime_dispatch", "hot_loop", "cold_math", "libjit.so", "client_trace"):
        assert name not in sent, name
    assert "redacted_fn_" in sent and "redacted_mod_" in sent
