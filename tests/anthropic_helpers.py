"""Shared pieces for the Claude backend tests: a fake key, requests, tools, findings."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

from mock_messages_server import MockMessagesServer, Reply, tool

from pcscope.core.backends.llm.anthropic import anthropic_backend
from pcscope.core.backends.llm.anthropic_config import AnthropicConfig, Price
from pcscope.core.backends.llm.model_backend import ModelBackend
from pcscope.core.contract.backend import CallRequest, ToolResult, ToolSpec

FAKE_KEY = "sk-test-not-a-real-key-7f3a9c"

ASM_TOOL = ToolSpec("asm_around", "Assembly around a PC.",
                    {"type": "object", "properties": {"pc": {"type": "string"}},
                     "required": ["pc"]})


def config(**overrides) -> AnthropicConfig:
    """Fast retries, a small max_tokens and one known price."""
    base = dict(max_tokens=512, timeout_seconds=5.0, max_attempts=4,
                backoff_base_seconds=0.01, backoff_cap_seconds=0.05,
                retry_after_cap_seconds=30.0,
                prices={"claude-test": Price(3.0, 15.0, 3.75, 0.30)})
    return AnthropicConfig(**{**base, **overrides})


def backend(server: MockMessagesServer, *, trace_dir: Path | None = None,
            concurrency: int = 8, wrap=None, **overrides) -> ModelBackend:
    return anthropic_backend("claude-test", config=config(**overrides), trace_dir=trace_dir,
                             concurrency=concurrency, wrap=wrap,
                             environ={"ANTHROPIC_API_KEY": FAKE_KEY,
                                      "ANTHROPIC_BASE_URL": server.base_url})


def request(call_id: str = "r1.w1.c1", wave: int = 1, max_turns: int = 6,
            brief: str = "pc:0x2004  blr x3  samples 509000") -> CallRequest:
    return CallRequest(call_id, wave, "You analyse AArch64 profiles.", brief,
                       ("pc:0x2004", "win:0x2000"), (ASM_TOOL,), max_turns=max_turns)


def finding(**overrides) -> dict:
    base = {"title": "Mispredicted indirect call", "category": "indirect-branch",
            "target": "software", "claim": "the blr at 0x2004 is hot",
            "recommendation": "devirtualize the hot target", "pcs": ["0x2004"],
            "evidence": ["pc:0x2004"], "confidence": 0.6, "basis": "profile-only"}
    return {**base, **overrides}


def submit(*findings: dict, summary: str = "done") -> Reply:
    return Reply([tool("submit_findings", {"findings": list(findings), "summary": summary})])


def n_messages(body: dict) -> int:
    return len(body["messages"])


@dataclass
class Tools:
    """The engine's side of tool use: answers asm_around and remembers what was asked."""

    calls: list[tuple[str, dict]] = field(default_factory=list)

    async def __call__(self, name: str, args: dict) -> ToolResult:
        self.calls.append((name, args))
        return ToolResult("0x2000 ldr x3, [x1, #16]\n0x2004 blr x3", ids=("pc:0x2000",))


@dataclass
class Events:
    seen: list[tuple[str, object]] = field(default_factory=list)

    def __call__(self, kind: str, payload: object) -> None:
        self.seen.append((kind, payload))

    def kinds(self) -> set[str]:
        return {k for k, _ in self.seen}


def tool_results(body: dict) -> list[dict]:
    """The tool_result blocks of the newest user message."""
    content = body["messages"][-1]["content"]
    return [b for b in content if isinstance(b, dict) and b.get("type") == "tool_result"]


def stored_bytes(*roots: Path) -> list[tuple[Path, bytes]]:
    out = []
    for root in roots:
        paths = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
        out += [(p, p.read_bytes()) for p in paths]
    return out


def body_text(body: dict) -> str:
    return json.dumps(body)


# A small workload: a hot load/compare loop, a dispatch through a mispredicting blr (ALP),
# an exclusive pair, and a cold division. ``{dispatch}`` names the dispatch function.
PROFILE = """\
function,module,window,pc,samples,asm
hot_loop,app,w1,0x1000,820000,"ldr x4, [x0]"
hot_loop,app,w1,0x1004,818000,"cmp x4, #0"
hot_loop,app,w1,0x1008,818000,b.eq 0x1000
{dispatch},libjit.so,w2,0x2000,510000,"ldr x3, [x1, #16]"
{dispatch},libjit.so,w2,0x2004,509000,blr x3
{dispatch},libjit.so,w2,0x2008,12000,"add x0, x0, #1"
<unknown_02>,app,w3,0x3000,122000,"ldaxr w5, [x2]"
<unknown_02>,app,w3,0x3004,121000,"add w5, w5, #1"
<unknown_02>,app,w3,0x3008,120000,"stlxr w6, w5, [x2]"
<unknown_02>,app,w3,0x300c,120000,"cbnz w6, 0x3000"
cold_math,app,w4,0x4000,10,"udiv x1, x2, x3"
cold_math,app,w4,0x4004,10,ret
"""

ALP = [
    {"loop": "L1", "pc": "0x2004", "iterations": 120000,
     "stages": {"fetch": 0, "dispatch": 3, "issue": 5.5, "complete": 9, "retire": 12.5},
     "branch": {"kind": "indirect_call", "executed": 120000, "taken": 120000,
                "mispredicted": 27600}},
]


def workload(folder: Path, dispatch: str = "runtime_dispatch", alp: bool = True):
    """The small workload, indexed under ``folder`` (nothing in ~/.cache)."""
    from pcscope.index.store import open_workload

    folder.mkdir(parents=True, exist_ok=True)
    profile = folder / "client_trace.csv"
    name = dispatch if "," not in dispatch and '"' not in dispatch else \
        '"' + dispatch.replace('"', '""') + '"'
    profile.write_text(PROFILE.format(dispatch=name), encoding="utf-8")
    alp_path = folder / "alp.jsonl"
    alp_path.write_text("".join(json.dumps(r) + "\n" for r in ALP), encoding="utf-8")
    return open_workload(profile, alp=alp_path if alp else None, index_dir=folder / "idx")
