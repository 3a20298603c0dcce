"""One agent's session on the MCP server: the engine's tools, validation and gatekeeper,
recorded as a run in the profile's session store.

An agent (Claude Code, Codex …) is the orchestrator here. It calls the tools a bounded
call uses, with the same bounds, and may cite only IDs those tools returned to it in this
session. Each submission is one recorded call: the tool uses since the previous one, the
submitted JSON, and the verdict on each finding. The run's ideas are the gatekeeper's merge
of everything accepted in the session and its report is rebuilt after each submission, so
the run shows in ``pcscope calls``, in reports and in the explorer like any other.
Nothing here knows about MCP; the server maps requests onto these methods.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pcscope.core.contract.backend import ToolResult
from pcscope.core.contract.findings import CallOutput
from pcscope.core.engine import calls as status
from pcscope.core.engine.calls import CallRecord, ToolUse, call_id
from pcscope.core.engine.gatekeeper import merge
from pcscope.core.engine.ideas import Accepted, Idea
from pcscope.core.engine.orchestrator import COMPLETE, RunResult
from pcscope.core.engine.presets import Settings
from pcscope.core.engine.report import build_report
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.engine.tools import SharedMemory, ToolBox
from pcscope.core.engine.validation import Rejection, Verdict, validate
from pcscope.core.evidence import EvidenceStore
from pcscope.core.workload import Workload

SUBMIT = "submit_findings"
SUBMIT_DESCRIPTION = (
    "Submit findings for validation and merging. Cite only evidence IDs that a tool returned "
    "to you in this session; every PC must be covered by a cited ID, the category must be "
    "supported by the code at its PCs, basis 'measured' needs an alp: record at one of its "
    "PCs. Accepted findings are stored as a run of the profile (pcscope calls, reports, "
    "the explorer); each rejection comes back with its reason.")
SETTINGS = Settings(preset="mcp", depth=1, concurrency=1)
MAX_TOOL_ARGS = 4_000  # characters of one tool request's JSON (the largest valid is < 2 KB)
MAX_SUBMISSION = 200_000  # characters of one submission's JSON (16 findings at most)
MAX_LOGGED_ANSWER = 2_000  # characters of a logged resource or prompt (it can be re-read)
NO_SUBMISSION = "no findings submitted"


class AgentRun:
    """One client's tools, allowed evidence and run. Lives on one event loop thread (the
    session store's connection is used from it only)."""

    def __init__(self, workload: Workload, session: SessionStore, client: str) -> None:
        self.workload = workload
        self.session = session
        self.model = f"mcp:{client}"
        self.store = EvidenceStore(workload)
        self.shared = SharedMemory(self.store)
        self.toolbox = ToolBox(self.store, self.shared, call_id(1, 1), (), on_use=self._used)
        self.run_id: int | None = None
        self.accepted: list[Accepted] = []
        self.records: list[CallRecord] = []
        self._record: CallRecord | None = None  # the call in progress (tools since a submit)
        self._fetched_from = 0
        self._started = time.monotonic()
        self.shared.on_set = lambda name, call, ids: self.session.save_set(
            self.run_id, name, call, ids)

    # -- requests ------------------------------------------------------------------------
    async def use(self, name: str, args: dict[str, Any]) -> ToolResult:
        """One of the engine's tools, logged in the call in progress."""
        text = json.dumps(args)
        if len(text) > MAX_TOOL_ARGS:
            message = (f"{name} request of {len(text):,} characters is over the "
                       f"{MAX_TOOL_ARGS:,} limit")
            self.log(name, {"truncated": text[:200]}, f"error: {message}", message)
            return ToolResult(f"error: {message}", None, (), message)
        self._call()
        return await self.toolbox.use(name, args)

    def log(self, request: str, args: dict[str, Any], answer: str,
            error: str | None = None) -> None:
        """A request no tool answered (a resource read, a prompt, a refused tool request),
        logged in the call in progress like a tool use that returned no IDs."""
        if len(answer) > MAX_LOGGED_ANSWER:
            answer = answer[:MAX_LOGGED_ANSWER] + "…"
        self._used(ToolUse(request, args, [], error, answer, 0.0))

    def submit(self, args: dict[str, Any]) -> ToolResult:
        """Validate a submission against what this session was shown, merge the accepted
        findings with the earlier ones, record the call and refresh the run's report."""
        record = self._call()
        raw = json.dumps(args)
        if len(raw) > MAX_SUBMISSION:
            verdict = Verdict(None, rejections=[Rejection(
                f"submission of {len(raw):,} characters is over the {MAX_SUBMISSION:,} limit")])
            raw = raw[:2000] + "…"
        else:
            verdict = validate(None, raw, self.toolbox.allowed, self.store)
        record.raw = raw
        record.status = status.REJECTED if verdict.malformed else status.OK
        record.rejections = [{"reason": r.reason, "title": r.title} for r in verdict.rejections]
        fresh = self.shared.accept(verdict, record.id, 1, self.model)
        for accepted in fresh:
            record.accepted.append(accepted.id)
            self.toolbox.allowed.add(accepted.id)  # a later submission may build on it
        self.accepted += fresh
        self._close_call(record)
        if fresh:
            self.session.save_findings(self.run_id, record.id,
                                       {a.id: a.to_json() for a in fresh})
        ideas = self._finish("done", COMPLETE)
        text = self._verdict_text(record, len(ideas))
        return ToolResult(text, {"call": record.id, "accepted": record.accepted,
                                 "rejected": record.rejections, "ideas": len(ideas)},
                          tuple(record.accepted),
                          verdict.rejections[0].reason if verdict.malformed else None)

    def close(self) -> None:
        """The client left: a call without a submission is kept as cancelled; a run with no
        submission at all is closed as cancelled."""
        if self._record is not None:
            record = self._record
            record.status, record.error = status.CANCELLED, NO_SUBMISSION
            self._close_call(record)
            if not any(r.status != status.CANCELLED for r in self.records):
                self._finish("cancelled", NO_SUBMISSION)

    # -- the record ----------------------------------------------------------------------
    def _call(self) -> CallRecord:
        if self.run_id is None:
            self.run_id = self.session.start_run(
                f"mcp-{uuid.uuid4().hex}", self.workload.profile.path, self.model,
                SETTINGS.to_json())
        if self._record is None:
            n = len(self.records) + 1
            cid = call_id(1, n)
            self.toolbox.call = cid
            self._record = CallRecord(
                id=cid, run=self.run_id, wave=1, parent=None, key="", model=self.model,
                title=f"{self.model} call {n}", status="running", given=[], brief="",
                seed={}, started=time.time())
            self._fetched_from = len(self.toolbox.fetched)
            self._save(self._record)
        return self._record

    def _used(self, use: ToolUse) -> None:
        record = self._call()
        record.tools.append(use)
        record.fetched = self.toolbox.fetched[self._fetched_from:]
        self._save(record)

    def _close_call(self, record: CallRecord) -> None:
        record.fetched = self.toolbox.fetched[self._fetched_from:]
        record.finished = time.time()
        record.seconds = record.finished - (record.started or record.finished)
        self._save(record)
        self.records.append(record)
        self._record = None

    def _save(self, record: CallRecord) -> None:
        """Only the call in progress is ever saved; its place is after the closed ones."""
        self.session.save_call(record, len(self.records))

    def _finish(self, run_status: str, reason: str) -> list[Idea]:
        ideas = merge(self.accepted, self.workload.profile)
        self.session.save_ideas(self.run_id, [i.to_json() for i in ideas])
        result = RunResult(
            run=self.run_id, model=self.model, settings=SETTINGS,
            selection=self.workload.hot(top=SETTINGS.top, coverage=SETTINGS.coverage),
            stop_reason=reason, ideas=ideas, records=list(self.records),
            accepted=list(self.accepted), hints=[], seconds=time.monotonic() - self._started)
        self.session.finish_run(self.run_id, run_status, reason,
                                build_report(result, self.workload))
        return ideas

    def _verdict_text(self, record: CallRecord, ideas: int) -> str:
        lines = [f"call {record.id} of run {self.run_id}: {len(record.accepted)} accepted, "
                 f"{len(record.rejections)} rejected; the run has {ideas} ideas"]
        for fid in record.accepted:
            lines.append(f"accepted {fid} \"{self.shared.findings[fid].title}\"")
        for rejection in record.rejections:
            title = rejection["title"] or "(whole submission)"
            lines.append(f"rejected \"{title}\": {rejection['reason']}")
        return "\n".join(lines)


def submit_schema() -> dict[str, Any]:
    """The submission's JSON schema: the bounded call's output schema."""
    return CallOutput.model_json_schema()
