"""A scripted backend for tests and benchmarks: well-behaved or deliberately bad on cue.

``--model scripted:MODES[@SECONDS]``: MODES is one or more of the modes below joined by
``+``, used in turn by successive calls; each call first sleeps SECONDS (default 0).

- ``ok``        a valid finding about the first PC of its slice (category ``other``)
- ``question``  like ``ok`` plus an open question, so a deeper wave runs
- ``tool``      reads ``asm_around`` through the tool and cites an ID it returned
- ``fabricate`` cites a guide section that was never given (and does not exist)
- ``foreign``   cites an ID given to an earlier call but not to this one
- ``bad-pc``    claims a PC that is not in the profile
- ``uncovered`` claims a PC its cited evidence does not cover
- ``category``  claims ``indirect-branch`` about an instruction that is no br/blr
- ``malformed`` returns output that does not parse as the schema
- ``fail``      raises, as a backend whose request failed
- ``empty``     returns no findings
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from pcscope.core.contract.backend import CallRequest, CallResponse, Emit, ToolRunner, Usage
from pcscope.core.contract.findings import CallOutput, Finding
from pcscope.core.errors import UsageError
from pcscope.core.ids import kind_of, pc_of

MODES = ("ok", "question", "tool", "fabricate", "foreign", "bad-pc", "uncovered", "category",
         "malformed", "fail", "empty")


@dataclass
class ScriptedBackend:
    modes: tuple[str, ...] = ("ok",)
    sleep: float = 0.0
    name: str = "scripted:ok"
    started: int = 0
    _seen: dict[str, tuple[str, ...]] = field(default_factory=dict)

    async def run(self, request: CallRequest, use_tool: ToolRunner, emit: Emit) -> CallResponse:
        mode = self.modes[self.started % len(self.modes)]
        self.started += 1
        earlier = [i for ids in self._seen.values() for i in ids]
        self._seen[request.call_id] = request.evidence_ids
        emit("status", f"scripted {mode}")
        if self.sleep:
            await asyncio.sleep(self.sleep)
        if mode == "fail":
            raise RuntimeError("scripted backend failure")
        if mode == "malformed":
            return CallResponse(None, '{"findings": [{"title": 7, "category": "nonsense"}')
        if mode == "empty":
            return _answer([])
        pc_ids = [i for i in request.evidence_ids if kind_of(i) == "pc"]
        if not pc_ids:
            return _answer([])
        anchor = pc_ids[0]
        pc = f"0x{pc_of(anchor):x}"
        evidence = [anchor]
        pcs = [pc]
        category = "other"
        questions: list[str] = []
        if mode == "question":
            questions = [f"What feeds the instruction at {pc}?"]
        elif mode == "tool":
            result = await use_tool("asm_around", {"pc": pc, "before": 2, "after": 2})
            evidence = [i for i in result.ids if kind_of(i) == "pc"][-1:] or evidence
            pcs = [f"0x{pc_of(evidence[0]):x}"]
        elif mode == "fabricate":
            evidence = [anchor, "guide:uarch/made-up/section"]
        elif mode == "foreign":
            foreign = [i for i in earlier if i not in request.evidence_ids and kind_of(i) == "pc"]
            evidence = [foreign[0] if foreign else "finding:w9.c9.f9"]
            pcs = [f"0x{pc_of(evidence[0]):x}"] if foreign else pcs
        elif mode == "bad-pc":
            pcs = ["0x1"]
        elif mode == "uncovered":
            pcs = [pc, f"0x{pc_of(pc_ids[1]):x}"] if len(pc_ids) > 1 else ["0x2"]
        elif mode == "category":
            category = "indirect-branch"
        finding = Finding(
            title=f"scripted {mode} finding at {pc}",
            category=category,
            target="software",
            claim=f"scripted claim about {pc}",
            recommendation="scripted recommendation",
            pcs=pcs,
            evidence=evidence,
            confidence=0.5,
            basis="profile-only",
            questions=questions,
        )
        return _answer([finding])


def _answer(findings: list[Finding]) -> CallResponse:
    output = CallOutput(findings=findings, summary="scripted")
    return CallResponse(output, output.model_dump_json(), Usage())


def create(arg: str, _options: object = None) -> ScriptedBackend:
    spec, _, seconds = (arg or "ok").partition("@")
    modes = tuple(m for m in spec.split("+") if m)
    unknown = [m for m in modes if m not in MODES]
    if not modes or unknown:
        raise UsageError(f"scripted backend: unknown mode {unknown[0] if unknown else spec!r} "
                         f"(modes: {', '.join(MODES)})")
    try:
        sleep = float(seconds) if seconds else 0.0
    except ValueError:
        raise UsageError(f"scripted backend: bad sleep {seconds!r}") from None
    return ScriptedBackend(modes, sleep, name=f"scripted:{arg or 'ok'}")

