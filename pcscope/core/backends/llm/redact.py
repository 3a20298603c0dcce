"""``--redact``: function, module and file names leave the machine only as stable aliases.

Aliases come from the workload's own tables — ``redacted_fn_<index>``,
``redacted_mod_<index>``, ``redacted_file_<n>`` — so they are stable for the same inputs
and say nothing about the names. Everything workload-derived that a backend sends (the
call's evidence and IDs, tool results, shared documents) is rewritten on the way out;
everything that comes back (findings, tool arguments, streamed text) is mapped back
before the engine sees it. The system text and tool definitions are fixed for a run and
hold no workload data, so they go as they are (category names such as ``memcpy`` stay
readable). Hidden names (``<unknown_N>``) are not names and stay as they are.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pcscope.core.backends.llm.conversation import Outcome, Task
from pcscope.core.backends.llm.turns import TurnContext
from pcscope.core.contract.backend import CallRequest, CallResponse, Emit, ToolResult, ToolRunner
from pcscope.core.contract.findings import CallOutput
from pcscope.core.ids import is_hidden_name
from pcscope.core.workload import Workload

PREFIX = "redacted_"
_TOKEN = re.compile(r"[A-Za-z0-9_.$@]+")
_ALIAS = re.compile(rf"\b{PREFIX}(?:fn|mod|file)_\d+\b")
_SIMPLE = re.compile(r"^[A-Za-z0-9_.$@]+$")
_SPLIT = re.compile(r"[.@]")


@dataclass
class Redactor:
    """A two-way map between real names and aliases."""

    aliases: dict[str, str]  # real -> alias

    def __post_init__(self) -> None:
        self.names = {alias: real for real, alias in self.aliases.items()}
        simple = {n for n in self.aliases if _SIMPLE.match(n)}
        self._simple = simple
        complex_names = sorted(set(self.aliases) - simple, key=len, reverse=True)
        self._complex = (re.compile(r"(?<![A-Za-z0-9_])(?:"
                                    + "|".join(map(re.escape, complex_names))
                                    + r")(?![A-Za-z0-9_])") if complex_names else None)

    @classmethod
    def for_workload(cls, workload: Workload) -> Redactor:
        aliases: dict[str, str] = {}
        profile = workload.profile
        for index in range(len(profile.functions)):
            name = profile.functions[index].name
            if name and not is_hidden_name(name):
                aliases.setdefault(name, f"{PREFIX}fn_{index}")
        for index, name in enumerate(profile.modules):
            if name:
                aliases.setdefault(name, f"{PREFIX}mod_{index}")
        for n, name in enumerate(_file_names(workload)):
            aliases.setdefault(name, f"{PREFIX}file_{n}")
        return cls(aliases)

    # -- text --------------------------------------------------------------------------
    def outbound(self, text: str | None) -> str | None:
        if not text or not self.aliases:
            return text
        if self._complex is not None:
            text = self._complex.sub(lambda m: self.aliases[m.group(0)], text)
        return _TOKEN.sub(lambda m: self._token(m.group(0)), text)

    def _token(self, token: str) -> str:
        """A whole token, else its longest known prefix before a ``.``/``@`` separator
        (``memcpy@plt`` when only ``memcpy`` is a name), each part redacted."""
        if token in self._simple:
            return self.aliases[token]
        cuts = [m.start() for m in _SPLIT.finditer(token)]
        for cut in reversed(cuts):
            head = token[:cut]
            if head in self._simple:
                return self.aliases[head] + self._token(token[cut:])
        return token

    def inbound(self, text: str | None) -> str | None:
        if not text:
            return text
        return _ALIAS.sub(lambda m: self.names.get(m.group(0), m.group(0)), text)

    def outbound_json(self, value: Any) -> Any:
        return _walk(value, self.outbound)

    def inbound_json(self, value: Any) -> Any:
        return _walk(value, self.inbound)


def _walk(value: Any, fn) -> Any:
    if isinstance(value, str):
        return fn(value)
    if isinstance(value, dict):
        return {_walk(k, fn): _walk(v, fn) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(_walk(v, fn) for v in value)
    return value


def _file_names(workload: Workload) -> Iterable[str]:
    """Input file names and stems (guide IDs carry the guide's stem)."""
    paths = [Path(workload.profile.path)]
    paths += [workload.alp_path] if workload.alp_path else []
    paths += list(workload.guide_paths)
    seen: dict[str, None] = {}
    for path in paths:
        for name in (path.name, path.stem, path.name.split(".")[0]):
            if name:
                seen.setdefault(name, None)
    for section in workload.guides:
        doc = section.id.removeprefix("guide:").split("/")[0]
        seen.setdefault(doc, None)
    return seen


class RedactingBackend:
    """Wraps a model backend: names out as aliases, aliases back as names."""

    def __init__(self, inner, redactor: Redactor) -> None:
        self.inner = inner
        self.redactor = redactor
        self.name = inner.name

    def __getattr__(self, attr: str) -> Any:  # budget binding, cost, limit … of the inner
        return getattr(self.inner, attr)

    async def run(self, request: CallRequest, use_tool: ToolRunner, emit: Emit) -> CallResponse:
        r = self.redactor
        # The system text is the engine's fixed instructions (no workload data): left as is,
        # so category names such as ``memcpy`` stay readable.
        sent = replace(request, brief=r.outbound(request.brief),
                       evidence_ids=tuple(r.outbound(i) for i in request.evidence_ids),
                       seed=r.outbound_json(request.seed))
        response = await self.inner.run(sent, self._tools(use_tool), self._emit(emit))
        output = response.output
        if output is not None:
            output = CallOutput.model_validate(r.inbound_json(output.model_dump()))
        return replace(response, output=output, raw=r.inbound(response.raw),
                       error=r.inbound(response.error))

    async def ask(self, task: Task, use_tool: ToolRunner, ctx: TurnContext) -> Outcome:
        r = self.redactor
        sent = replace(task, content=r.outbound_json(task.content),
                       shared=tuple(r.outbound(s) for s in task.shared))
        ctx.emit = self._emit(ctx.emit)
        outcome = await self.inner.ask(sent, self._tools(use_tool), ctx)
        if outcome.output is not None:
            outcome.output = type(outcome.output).model_validate(
                r.inbound_json(outcome.output.model_dump()))
        outcome.raw = r.inbound(outcome.raw)
        return outcome

    def _tools(self, use_tool: ToolRunner) -> ToolRunner:
        r = self.redactor

        async def run(name: str, args: dict) -> ToolResult:
            result = await use_tool(name, r.inbound_json(args))
            return ToolResult(r.outbound(result.text), result.data,
                              tuple(r.outbound(i) for i in result.ids), r.outbound(result.error))
        return run

    def _emit(self, emit: Emit) -> Emit:
        return lambda kind, payload: emit(kind, self.redactor.inbound_json(payload))
