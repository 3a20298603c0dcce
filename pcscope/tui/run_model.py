"""The calls pane's picture of a run, folded from the orchestrator's events (or a record).

The engine decides everything; this only remembers what it said, per call, so the tree
and the detail view can be redrawn from one place after each batch of events.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pcscope.core.engine import events as ev

TEXT_LIMIT = 20_000  # streamed characters kept per call (the record holds the rest)


@dataclass
class CallView:
    id: str
    wave: int
    parent: str | None
    title: str
    given: tuple[str, ...] = ()
    status: str = "queued"  # queued | running | ok | rejected | failed | cancelled | skipped
    fetched: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)  # one line per tool use
    text: str = ""
    accepted: tuple[str, ...] = ()
    rejected: int = 0
    rejections: list[str] = field(default_factory=list)
    input_tokens: int = 0
    output_tokens: int = 0
    seconds: float = 0.0
    error: str | None = None
    raw: str | None = None  # from the session record once the call is saved


@dataclass(frozen=True)
class GateEntry:
    """One thing the gatekeeper did after a wave: merged findings into an idea, rejected a
    finding (a reviewer's withdrawal), or sent a question one wave deeper as a call."""

    kind: str  # merge | reject | question
    wave: int
    key: str  # the idea (merge), finding title (reject) or deeper call (question)
    text: str  # one line for the tree
    reason: str
    ids: tuple[str, ...] = ()  # findings merged; the finding asked about and its call


@dataclass
class RunView:
    run: int | None = None
    model: str = ""
    calls: dict[str, CallView] = field(default_factory=dict)
    waves: dict[int, list[str]] = field(default_factory=dict)
    merged: dict[str, tuple[str, ...]] = field(default_factory=dict)  # idea -> findings
    gate: dict[int, dict[str, GateEntry]] = field(default_factory=dict)  # wave -> key -> entry
    ideas: dict[str, dict] = field(default_factory=dict)  # the latest ranked ideas, by ID
    budget: str | None = None
    stop_reason: str | None = None

    @property
    def done(self) -> bool:
        return self.stop_reason is not None

    def _gate(self, entry: GateEntry) -> None:
        """Entries keyed per wave: an idea that grows is the same entry, updated in place."""
        self.gate.setdefault(entry.wave, {})[entry.key] = entry

    def merges(self) -> int:
        return sum(e.kind == "merge" for wave in self.gate.values() for e in wave.values())

    def findings(self) -> tuple[int, int]:
        """(accepted, rejected) findings over the run's calls."""
        return (sum(len(c.accepted) for c in self.calls.values()),
                sum(c.rejected for c in self.calls.values()))

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for call in self.calls.values():
            out[call.status] = out.get(call.status, 0) + 1
        return out

    def tokens(self) -> tuple[int, int]:
        return (sum(c.input_tokens for c in self.calls.values()),
                sum(c.output_tokens for c in self.calls.values()))

    def apply(self, event: ev.Event) -> None:
        # The engine's events load with a run (not with the explorer's first frame).
        from pcscope.core.engine import events as ev

        self.run = event.run
        if isinstance(event, ev.CallQueued):
            self.calls[event.call] = CallView(event.call, event.wave, event.parent, event.title,
                                              event.given)
            self.waves.setdefault(event.wave, []).append(event.call)
            return
        if isinstance(event, ev.BudgetReached):
            self.budget = f"{event.budget} reached ({event.used:g} of {event.limit:g})"
        elif isinstance(event, ev.RunDone):
            self.stop_reason = event.stop_reason
            # What the orchestrator writes into its records when a run stops (no event
            # says it per call): never started is skipped, cut short is cancelled.
            for call in self.calls.values():
                if call.status in ("queued", "running"):
                    call.status = "skipped" if call.status == "queued" else "cancelled"
        elif isinstance(event, ev.IdeasMerged):
            self.merged[event.idea] = event.merged_from
            self._gate(GateEntry("merge", event.wave, event.idea,
                                 f"⊕ {event.idea} ← {len(event.merged_from)} findings",
                                 event.reason, event.merged_from))
        elif isinstance(event, ev.QuestionAsked):
            self._gate(GateEntry("question", event.wave, event.call,
                                 f"? {event.question[:60]} → {event.call}",
                                 f"asked of {event.finding} (idea {event.idea})",
                                 (event.finding, event.call)))
        elif isinstance(event, ev.IdeasUpdated):
            self.ideas = {idea["id"]: idea for idea in event.ideas}
        elif isinstance(event, ev.FindingRejected) and event.reason.startswith("review:"):
            wave = self.calls[event.call].wave if event.call in self.calls else 0
            title = event.title or "(untitled)"
            self._gate(GateEntry("reject", wave, f"{event.call}:{title}", f"✗ {title[:60]}",
                                 event.reason, (event.call,)))
        call = self.calls.get(getattr(event, "call", ""))
        if call is not None:
            _apply_to_call(call, event)


def _apply_to_call(call: CallView, event: ev.Event) -> None:
    from pcscope.core.engine import events as ev

    if isinstance(event, ev.CallStarted):
        call.status = "running"
    elif isinstance(event, ev.ToolUsed):
        call.fetched += [i for i in event.ids if i not in call.fetched]
        args = ", ".join(f"{k}={v!r}" for k, v in event.input.items())
        outcome = f"error: {event.error}" if event.error else f"{len(event.ids)} ids"
        call.tools.append(f"{event.tool}({args}) → {outcome}")
    elif isinstance(event, ev.CallText):
        call.text = (call.text + event.text)[-TEXT_LIMIT:]
    elif isinstance(event, ev.FindingRejected):
        call.rejections.append(f"{event.title or '(untitled)'}: {event.reason}")
    elif isinstance(event, ev.CallFinished):
        call.status = event.status
        call.accepted = event.accepted
        call.rejected = event.rejected
        call.input_tokens = event.input_tokens
        call.output_tokens = event.output_tokens
        call.seconds = event.seconds
        call.error = event.error


def from_records(run: int, model: str, records) -> RunView:
    """A finished run as the session store recorded it (shown again after reopening)."""
    view = RunView(run=run, model=model, stop_reason="recorded")
    for record in records:
        call = CallView(record.id, record.wave, record.parent, record.title,
                        tuple(record.given), record.status, list(record.fetched),
                        [f"{t.tool}({t.input}) → {len(t.ids)} ids" for t in record.tools],
                        "", tuple(record.accepted), len(record.rejections),
                        [f"{r.get('title') or '(untitled)'}: {r.get('reason')}"
                         for r in record.rejections],
                        record.input_tokens, record.output_tokens, record.seconds,
                        record.error, record.raw)
        view.calls[call.id] = call
        view.waves.setdefault(call.wave, []).append(call.id)
    return view
