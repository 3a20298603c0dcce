"""Blind pairwise evaluation of two analysis strategies by a model judge.

Each side is ``STRATEGY:MODEL`` (``bounded:anthropic:claude-…``, ``full-prompt:replay:F``).
Both run on the same workload; then for every trial the judge sees the two idea sets
identity-masked (no IDs, models, strategies or call names; only what an idea says and
cites) as "Set 1" and "Set 2", once in each order (position bias), with the cited
evidence rendered once for both. It scores each set 0-5 on six criteria (total /30) and
names a preference. Scores are averaged over trials and both orders. A trial's
preference counts for a side only when both orders agree on it; otherwise it is a tie.
The cost of each side (calls, tokens cached and not, seconds, estimated USD) comes along.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from pcscope.core.backends.llm import request_bodies
from pcscope.core.backends.llm.conversation import Task
from pcscope.core.backends.llm.turns import TurnContext
from pcscope.core.contract.backend import ToolResult
from pcscope.core.errors import EvidenceError, UsageError
from pcscope.core.evidence import EvidenceStore

STRATEGIES = ("bounded", "full-prompt")
CRITERIA = ("usefulness", "novelty", "grounding", "expected_upside", "guide_fit",
            "follow_up_clarity")
ORDERS = ("AB", "BA")  # which side is Set 1
MASKED_KEYS = ("title", "category", "target", "claim", "recommendation", "pcs", "evidence",
               "weight", "confidence", "basis")
EVIDENCE_CHARS = 300
MAX_EVIDENCE = 400


@dataclass(frozen=True)
class Side:
    strategy: str
    model: str

    @classmethod
    def parse(cls, text: str) -> Side:
        strategy, sep, model = text.partition(":")
        if not sep or strategy not in STRATEGIES or not model:
            raise UsageError(f"{text!r}: want STRATEGY:MODEL with STRATEGY one of "
                             f"{', '.join(STRATEGIES)} (e.g. bounded:anthropic:claude-sonnet-4-5)")
        return cls(strategy, model)

    def __str__(self) -> str:
        return f"{self.strategy}:{self.model}"


class Scores(BaseModel):
    model_config = ConfigDict(extra="forbid")
    usefulness: int = Field(ge=0, le=5, description="would an engineer act on these ideas")
    novelty: int = Field(ge=0, le=5, description="beyond restating guides or generic advice")
    grounding: int = Field(ge=0, le=5, description="claims follow from the cited evidence")
    expected_upside: int = Field(ge=0, le=5, description="likely gain x weight of the code")
    guide_fit: int = Field(ge=0, le=5, description="consistent with the uarch/optimization guides")
    follow_up_clarity: int = Field(ge=0, le=5, description="clear next step or measurement")


class Judgment(BaseModel):
    """The judge's answer (the ``submit_scores`` tool input)."""

    model_config = ConfigDict(extra="forbid")
    set_1: Scores
    set_2: Scores
    preferred: Literal["set_1", "set_2", "tie"]
    rationale: str = Field(default="", max_length=3000)


SUBMIT_SCORES = request_bodies.answer_tool(
    "submit_scores", "Submit both sets' scores (0-5 per criterion) and your preference.",
    Judgment)

JUDGE_SYSTEM = """\
You are a blind reviewer comparing two sets of performance-optimization ideas produced for
the same AArch64 CPU workload profile. The sets are labelled Set 1 and Set 2 in arbitrary
order; how they were produced is unknown and irrelevant. Score each set from 0 to 5 on:
- usefulness: would a performance engineer act on these ideas;
- novelty: insight beyond restating guide text or generic advice;
- grounding: each claim follows from the evidence it cites, at the PCs it names;
- expected_upside: the likely gain, considering the weight of the code concerned;
- guide_fit: consistent with the microarchitecture and software optimization guides;
- follow_up_clarity: a clear next step, experiment or measurement.
Judge quality, not length. Then name the set you prefer overall, or a tie."""


@dataclass(frozen=True)
class JudgePrompt:
    trial: int
    trials: int
    order: str
    set_1: list[dict]
    set_2: list[dict]
    evidence: str
    profile: str


Judge = Callable[[JudgePrompt], Awaitable[Judgment | None]]


@dataclass
class Verdict:
    """One judgment with the masks removed: scores by side, preference by side."""

    trial: int
    order: str
    scores: dict[str, dict[str, int]]  # "A"/"B" -> criterion -> score
    preferred: str  # "A", "B" or "tie"


@dataclass
class SideCost:
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    seconds: float = 0.0
    usd: float | None = None

    def to_json(self) -> dict:
        return {"calls": self.calls, "input_tokens": self.input_tokens,
                "output_tokens": self.output_tokens, "cached_tokens": self.cached_tokens,
                "seconds": round(self.seconds, 3),
                "usd": None if self.usd is None else round(self.usd, 4)}


@dataclass
class Table:
    scores: dict[str, dict[str, float]]  # side -> criterion (and "total") -> mean
    wins: dict[str, int]  # "A", "B", "tie" -> trials
    judgments: int
    failed: int
    agreement: float  # share of trials whose two orders named the same preference


@dataclass
class SideRun:
    side: Side
    ideas: list[dict]
    cost: SideCost
    stop_reason: str = "complete"


@dataclass
class Evaluation:
    a: SideRun
    b: SideRun
    judge: str
    trials: int
    verdicts: list[Verdict] = field(default_factory=list)
    failed: int = 0
    judge_cost: SideCost = field(default_factory=SideCost)

    def table(self) -> Table:
        return aggregate(self.verdicts, self.trials, self.failed)


# -- masking and prompts ---------------------------------------------------------------
def mask(ideas: list[dict]) -> list[dict]:
    """What an idea says and cites, nothing about who made it."""
    return [{k: idea[k] for k in MASKED_KEYS if k in idea} for idea in ideas]


def render_evidence(store: EvidenceStore, *idea_sets: list[dict]) -> str:
    """Every ID cited by either set, sorted, each rendered briefly (the same for both
    orders, so it reveals nothing about position)."""
    ids = sorted({e for ideas in idea_sets for idea in ideas for e in idea.get("evidence", [])})
    lines = []
    for evidence_id in ids[:MAX_EVIDENCE]:
        try:
            text = " ".join(store.resolve(evidence_id).text.split())
        except EvidenceError:
            text = "(does not resolve)"
        lines.append(f"{evidence_id}: {text[:EVIDENCE_CHARS]}")
    if len(ids) > MAX_EVIDENCE:
        lines.append(f"… {len(ids) - MAX_EVIDENCE} more IDs not shown")
    return "\n".join(lines)


def prompts(a: list[dict], b: list[dict], evidence: str, profile: str,
            trials: int) -> list[JudgePrompt]:
    masked = {"A": mask(a), "B": mask(b)}
    return [JudgePrompt(t, trials, order, masked[order[0]], masked[order[1]], evidence, profile)
            for t in range(1, trials + 1) for order in ORDERS]


def judge_task(prompt: JudgePrompt) -> Task:
    # What every judgment shares (profile, cited evidence) comes first and is cached.
    content = [
        {"type": "text", "text": request_bodies.data("profile", prompt.profile)},
        {"type": "text", "text": request_bodies.data("cited-evidence", prompt.evidence)},
        {"type": "text", "text": request_bodies.data("set-1", json.dumps(prompt.set_1, indent=1))},
        {"type": "text", "text": request_bodies.data("set-2", json.dumps(prompt.set_2, indent=1))},
        {"type": "text", "text": f"Judgment {prompt.trial}.{ORDERS.index(prompt.order) + 1} "
                                 f"of {prompt.trials}: score both sets, then call "
                                 f"submit_scores."},
    ]
    return Task(JUDGE_SYSTEM, content, (), Judgment, SUBMIT_SCORES, max_turns=2, cache_first=1)


def model_judge(backend) -> Judge:
    """A judge that asks a model backend (``ask``) once per prompt."""
    async def no_tools(name: str, _args: dict) -> ToolResult:
        return ToolResult("", error=f"the judge has no tools ({name})")

    async def judge(prompt: JudgePrompt) -> Judgment | None:
        ctx = TurnContext(f"judge.t{prompt.trial}.{prompt.order}", wave=0)
        outcome = await backend.ask(judge_task(prompt), no_tools, ctx)
        return outcome.output  # type: ignore[return-value]

    return judge


# -- judging and aggregation -----------------------------------------------------------
def unmask(prompt: JudgePrompt, judgment: Judgment) -> Verdict:
    first, second = prompt.order[0], prompt.order[1]
    scores = {first: judgment.set_1.model_dump(), second: judgment.set_2.model_dump()}
    preferred = {"set_1": first, "set_2": second, "tie": "tie"}[judgment.preferred]
    return Verdict(prompt.trial, prompt.order, scores, preferred)


async def judge_all(judge: Judge, all_prompts: list[JudgePrompt]) -> tuple[list[Verdict], int]:
    """Judgments in a fixed order (deterministic replay); failed ones are counted."""
    verdicts, failed = [], 0
    for prompt in all_prompts:
        judgment = await judge(prompt)
        if judgment is None:
            failed += 1
        else:
            verdicts.append(unmask(prompt, judgment))
    return verdicts, failed


def aggregate(verdicts: list[Verdict], trials: int, failed: int = 0) -> Table:
    scores: dict[str, dict[str, float]] = {}
    for side in ("A", "B"):
        means = {c: (sum(v.scores[side][c] for v in verdicts) / len(verdicts)
                     if verdicts else 0.0) for c in CRITERIA}
        means["total"] = sum(means[c] for c in CRITERIA)
        scores[side] = means
    wins = {"A": 0, "B": 0, "tie": 0}
    agreed = 0
    for trial in range(1, trials + 1):
        prefs = {v.order: v.preferred for v in verdicts if v.trial == trial}
        same = len(prefs) == len(ORDERS) and len(set(prefs.values())) == 1
        agreed += same
        winner = next(iter(prefs.values())) if same else "tie"
        wins[winner] += 1
    return Table(scores, wins, len(verdicts), failed, agreed / trials if trials else 0.0)


async def evaluate(a: SideRun, b: SideRun, judge: Judge, judge_name: str, trials: int,
                   store: EvidenceStore, profile_text: str) -> Evaluation:
    evidence = render_evidence(store, a.ideas, b.ideas)
    verdicts, failed = await judge_all(judge, prompts(a.ideas, b.ideas, evidence,
                                                      profile_text, trials))
    return Evaluation(a, b, judge_name, trials, verdicts, failed)


# -- running a side -------------------------------------------------------------------
async def run_side(side: Side, workload, backend, settings, session) -> SideRun:
    """One strategy on the workload through the orchestrator; its ideas and cost."""
    from pcscope.core.engine.full_prompt import FullPromptOrchestrator
    from pcscope.core.engine.orchestrator import Orchestrator

    kind = FullPromptOrchestrator if side.strategy == "full-prompt" else Orchestrator
    bind = getattr(backend, "bind", None)
    if bind is not None:  # every turn reserves against the side's token and time budget
        from pcscope.core.backends.llm.turn_budget import run_budget

        bind(budget=run_budget(settings.max_tokens, settings.max_seconds))
    result = await kind(workload, backend, settings, session).run()
    return SideRun(side, [i.to_json() for i in result.ideas],
                   cost_of(result.calls, result.seconds, backend), result.stop_reason)


def cost_of(calls, seconds: float, backend) -> SideCost:
    """Calls and tokens from the call records; USD from the backend's price table."""
    cost = SideCost(len(calls), sum(c.input_tokens for c in calls),
                    sum(c.output_tokens for c in calls), sum(c.cached_tokens for c in calls),
                    seconds)
    price = getattr(backend, "cost", None)
    usage = getattr(backend, "usage", None)
    if price is not None and usage is not None:
        cost.usd = price(usage)
    return cost


# -- output ----------------------------------------------------------------------------
def to_json(ev: Evaluation, profile_path: str) -> dict:
    table = ev.table()
    return {
        "profile": profile_path,
        "a": {"side": str(ev.a.side), "ideas": len(ev.a.ideas), "stop_reason": ev.a.stop_reason},
        "b": {"side": str(ev.b.side), "ideas": len(ev.b.ideas), "stop_reason": ev.b.stop_reason},
        "judge": ev.judge,
        "trials": ev.trials,
        "criteria": list(CRITERIA),
        "scores": {side: {k: round(v, 3) for k, v in s.items()}
                   for side, s in table.scores.items()},
        "preferences": {**table.wins, "order_agreement": round(table.agreement, 3)},
        "judgments": [{"trial": v.trial, "order": v.order, "A": v.scores["A"],
                       "B": v.scores["B"], "preferred": v.preferred} for v in ev.verdicts],
        "failed_judgments": table.failed,
        "cost": {"A": ev.a.cost.to_json(), "B": ev.b.cost.to_json(),
                 "judge": ev.judge_cost.to_json()},
    }


def text_table(data: dict) -> str:
    a, b = data["a"]["side"], data["b"]["side"]
    rows = [("criterion", "A", "B")]
    rows += [(c.replace("_", " "), f"{data['scores']['A'][c]:.2f}", f"{data['scores']['B'][c]:.2f}")
             for c in CRITERIA]
    rows.append(("total /30", f"{data['scores']['A']['total']:.2f}",
                 f"{data['scores']['B']['total']:.2f}"))
    prefs = data["preferences"]
    out = [f"A = {a}", f"B = {b}", f"judge = {data['judge']}, {data['trials']} trial(s) x 2 "
           f"orders, {len(data['judgments'])} judgments ({data['failed_judgments']} failed)", ""]
    out += [f"{r[0]:<20} {r[1]:>8} {r[2]:>8}" for r in rows]
    out += ["", f"preferred (both orders agree): A {prefs['A']}, B {prefs['B']}, "
                f"tie {prefs['tie']} (order agreement {prefs['order_agreement']:.0%})", ""]
    cost_rows = [("cost", "calls", "input", "output", "cached", "seconds", "usd")]
    for side in ("A", "B", "judge"):
        c = data["cost"][side]
        cost_rows.append((side, str(c["calls"]), f"{c['input_tokens']:,}",
                          f"{c['output_tokens']:,}", f"{c['cached_tokens']:,}",
                          f"{c['seconds']:.1f}", "-" if c["usd"] is None else f"{c['usd']:.4f}"))
    out += [f"{r[0]:<8} {r[1]:>6} {r[2]:>11} {r[3]:>9} {r[4]:>11} {r[5]:>8} {r[6]:>8}"
            for r in cost_rows]
    return "\n".join(out)
