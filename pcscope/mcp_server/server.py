"""`pcscope mcp`: the engine's tools, resources and ready prompts over the Model Context
Protocol (the official ``mcp`` SDK's low-level server), on stdio or streamable HTTP.

The tool list is the engine's own (``tool_specs``: the same names, descriptions and JSON
schemas a bounded call sees) plus ``submit_findings``; every call goes through the
engine's ``ToolBox`` of the client's ``AgentRun``. Each client has its own run and its own
allowed evidence: on stdio the process serves one client, over HTTP the MCP session ID
tells clients apart. Everything runs on the one event-loop thread, which is also the only
user of the session store's connection.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from pcscope import __version__
from pcscope.core.contract.backend import ToolResult
from pcscope.core.engine.calls import CallRecord
from pcscope.core.engine.report import markdown_report
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.engine.tools import tool_specs
from pcscope.core.errors import UsageError
from pcscope.core.workload import Workload
from pcscope.mcp_server import prompts
from pcscope.mcp_server.agent_run import SUBMIT, SUBMIT_DESCRIPTION, AgentRun, submit_schema
from pcscope.mcp_server.guidance import INSTRUCTIONS

SCHEME = "pcscope://"
REPORT_URI = f"{SCHEME}report"
RUNS_URI = f"{SCHEME}runs"
GUIDE_PREFIX = f"{SCHEME}guide/"
CALLS_TEMPLATE = f"{SCHEME}run/{{run}}/calls"
_CALLS_URI = re.compile(r"^pcscope://run/([0-9]+)/calls$")
STDIO_CLIENT = "stdio"  # the one client of a stdio server
RUNS_LISTED = 20  # latest runs offered as resources
Ctx = ServerRequestContext
Page = types.PaginatedRequestParams | None


@dataclass
class Agents:
    """Every client's AgentRun, by the client's session key."""

    workload: Workload
    session: SessionStore
    runs: dict[str, AgentRun] = field(default_factory=dict)

    def of(self, ctx: Ctx) -> AgentRun:
        request = ctx.request  # the HTTP request; None on stdio
        key = (request.headers.get("mcp-session-id") or "") if request is not None else ""
        key = key or STDIO_CLIENT
        if key not in self.runs:
            params = ctx.session.client_params
            name = params.client_info.name if params is not None else "agent"
            self.runs[key] = AgentRun(self.workload, self.session, _label(name))
        return self.runs[key]

    def close(self) -> None:
        for run in self.runs.values():
            run.close()


def _label(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]+", "-", name).strip("-")[:40] or "agent"


def build_server(agents: Agents) -> Server:
    """The low-level server with pcscope's handlers bound to ``agents``."""
    workload = agents.workload
    tools = [types.Tool(name=s.name, description=s.description, input_schema=s.input_schema)
             for s in tool_specs()]
    tools.append(types.Tool(name=SUBMIT, description=SUBMIT_DESCRIPTION,
                            input_schema=submit_schema()))

    async def list_tools(ctx: Ctx, params: Page) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: Ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        agent = agents.of(ctx)
        args = params.arguments or {}
        if params.name == SUBMIT:
            result = agent.submit(args)
        else:
            result = await agent.use(params.name, args)
        return _tool_result(result)

    async def list_resources(ctx: Ctx, params: Page) -> types.ListResourcesResult:
        listed = [
            types.Resource(uri=REPORT_URI, name="report", mime_type="text/markdown",
                           description="the current report: this session's run once it has "
                           "a submission, else the profile's latest finished run"),
            types.Resource(uri=RUNS_URI, name="runs", mime_type="text/plain",
                           description="the runs recorded for this profile"),
        ]
        listed += [types.Resource(uri=f"{SCHEME}run/{r.id}/calls", name=f"run {r.id} calls",
                                  mime_type="application/json",
                                  description=f"{r.model}, {r.status}, {r.calls} calls")
                   for r in agents.session.runs()[-RUNS_LISTED:]]
        listed += [types.Resource(uri=GUIDE_PREFIX + s.id.removeprefix("guide:"),
                                  name=s.id, title=s.heading, mime_type="text/markdown")
                   for s in workload.guides]
        return types.ListResourcesResult(resources=listed)

    async def list_templates(ctx: Ctx, params: Page) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=[
            types.ResourceTemplate(uri_template=CALLS_TEMPLATE, name="run calls",
                                   mime_type="application/json",
                                   description="a run's calls: tools used, verdicts")])

    async def read_resource(ctx: Ctx, params: types.ReadResourceRequestParams
                            ) -> types.ReadResourceResult:
        uri = str(params.uri)
        agent = agents.of(ctx)
        if uri.startswith(GUIDE_PREFIX):  # the guide tool: its section becomes citable
            result = await agent.use("guide", {"id": "guide:" + uri.removeprefix(GUIDE_PREFIX)})
            if result.error is not None:
                raise MCPError(types.INVALID_PARAMS, result.error)
            text, mime = result.text, "text/markdown"
        else:
            try:
                text, mime = _read(agents, agent, uri)
            except MCPError as exc:
                agent.log("resources/read", {"uri": uri}, "", exc.error.message)
                raise
            agent.log("resources/read", {"uri": uri}, text)
        return types.ReadResourceResult(contents=[
            types.TextResourceContents(uri=uri, mime_type=mime, text=text)])

    async def list_prompts(ctx: Ctx, params: Page) -> types.ListPromptsResult:
        return types.ListPromptsResult(prompts=[
            types.Prompt(name=p.name, description=p.description, arguments=[
                types.PromptArgument(name=a, description=d, required=True)
                for a, d in p.arguments])
            for p in prompts.prompts()])

    async def get_prompt(ctx: Ctx, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        agent = agents.of(ctx)
        request = {"name": params.name, "arguments": dict(params.arguments or {})}
        try:
            text = prompts.render(params.name, request["arguments"], workload.profile.path)
        except UsageError as exc:
            agent.log("prompts/get", request, "", str(exc))
            raise MCPError(types.INVALID_PARAMS, str(exc)) from None
        agent.log("prompts/get", request, text)
        return types.GetPromptResult(messages=[types.PromptMessage(
            role="user", content=types.TextContent(type="text", text=text))])

    return Server("pcscope", version=__version__, instructions=INSTRUCTIONS,
                  on_list_tools=list_tools, on_call_tool=call_tool,
                  on_list_resources=list_resources, on_list_resource_templates=list_templates,
                  on_read_resource=read_resource, on_list_prompts=list_prompts,
                  on_get_prompt=get_prompt)


def _tool_result(result: ToolResult) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=result.text)],
                                is_error=result.error is not None)


def _read(agents: Agents, agent: AgentRun, uri: str) -> tuple[str, str]:
    """(text, MIME type) of a resource other than a guide section; MCPError for one that
    does not exist."""
    store = agents.session
    if uri == REPORT_URI:
        runs = [r for r in store.runs() if r.status == "done"]
        mine = [r for r in runs if r.id == agent.run_id]
        chosen = (mine or runs[-1:] or [None])[0]
        if chosen is None:
            raise MCPError(types.INVALID_PARAMS, "no finished run yet: submit findings first")
        return markdown_report(store.report(chosen.id), agents.workload), "text/markdown"
    if uri == RUNS_URI:
        lines = [f"run {r.id}  {r.status:<9} {r.stop_reason or '':<22} {r.calls:>4} calls  "
                 f"{r.model}" for r in store.runs()]
        return "\n".join(lines) or "no runs recorded", "text/plain"
    match = _CALLS_URI.match(uri)
    if match:
        run = int(match.group(1))
        if store.run(run) is None:
            raise MCPError(types.INVALID_PARAMS, f"no run {run}")
        return json.dumps([_call_json(c) for c in store.calls(run)], indent=1), \
            "application/json"
    raise MCPError(types.INVALID_PARAMS, f"no resource {uri}")


def _call_json(call: CallRecord) -> dict[str, Any]:
    return {**call.summary(), "title": call.title, "accepted": call.accepted,
            "rejections": call.rejections,
            "tools": [{"tool": t.tool, "input": t.input, "ids": len(t.ids), "error": t.error}
                      for t in call.tools]}


# -- transports --------------------------------------------------------------------------
@asynccontextmanager
async def _agents(workload: Workload, session_path: Path) -> AsyncIterator[Agents]:
    """The session store is opened on the event loop's thread, its only user; on the way
    out every client's open call is closed."""
    with SessionStore(session_path) as session:
        agents = Agents(workload, session)
        try:
            yield agents
        finally:
            agents.close()


def serve_stdio(workload: Workload, session_path: Path) -> None:
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with _agents(workload, session_path) as agents, \
                stdio_server() as (read, write):
            server = build_server(agents)
            await server.run(read, write, server.create_initialization_options())

    anyio.run(main)


def serve_http(workload: Workload, session_path: Path, host: str, port: int) -> None:
    """Streamable HTTP at ``http://HOST:PORT/mcp`` (DNS-rebinding checks on localhost)."""
    import uvicorn

    async def main() -> None:
        async with _agents(workload, session_path) as agents:
            app = build_server(agents).streamable_http_app(host=host)
            config = uvicorn.Config(app, host=host, port=port, log_level="warning")
            server = uvicorn.Server(config)
            await server.serve()

    anyio.run(main)
