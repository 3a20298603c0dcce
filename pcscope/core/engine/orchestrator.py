"""The orchestrator: plans calls on ranked candidates (mechanisms, unexplained hot windows)
within the run's call bound, runs them in waves under budgets, validates every output,
merges findings into ideas, deepens open questions, records everything and publishes events.

Waves run one after another; inside a wave up to ``concurrency`` calls run at once (in
plan order, i.e. by weight). A budget that runs out stops the run cleanly: calls not yet
started are skipped, running ones finish (or, for ``max-seconds``, are cancelled), and
everything completed is kept. ``cancel()`` (safe from any thread) does the same.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pcscope.core.alp import AlpRecord
from pcscope.core.contract.backend import Backend, CallRequest, CallResponse, Usage
from pcscope.core.engine import calls as status
from pcscope.core.engine.briefs import brief, pattern_rows
from pcscope.core.engine.calls import CallPlan, CallRecord, ToolUse, call_id
from pcscope.core.engine.candidates import CallGroup, Plan, extend, first_wave_calls
from pcscope.core.engine.candidates import plan as plan_calls
from pcscope.core.engine.events import (
    BudgetReached,
    CallFinished,
    CallQueued,
    CallStarted,
    CallText,
    EventBus,
    FindingRejected,
    IdeasMerged,
    IdeasUpdated,
    QuestionAsked,
    RunDone,
    ToolUsed,
    WaveStarted,
)
from pcscope.core.engine.gatekeeper import Question, merge, merge_reason, questions
from pcscope.core.engine.hints import Hint, HintText, parse_hints
from pcscope.core.engine.ideas import Accepted, Idea
from pcscope.core.engine.presets import Settings
from pcscope.core.engine.report import build_report
from pcscope.core.engine.run_budget import Budget, Limits, Reservation
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.engine.system_prompt import SYSTEM, tokens
from pcscope.core.engine.tools import SharedMemory, ToolBox, search_guides, tool_specs
from pcscope.core.engine.validation import Verdict, validate
from pcscope.core.evidence import EvidenceStore
from pcscope.core.ids import hex_pc, pc_id
from pcscope.core.profile import HotSelection
from pcscope.core.workload import Workload

if TYPE_CHECKING:
    from pcscope.core.engine.model_review import Review

Reviewer = Callable[[list[Accepted], EvidenceStore, int, int], Awaitable["Review"]]
"""``(accepted, store, wave, question limit) -> review``: one call (recorded and counted
against the budgets like any other) whose ``Review`` holds the ranked ideas, the questions
for the next wave and the findings it rejected; the default is the rule gatekeeper
(gatekeeper.merge and gatekeeper.questions), which is code, not a call."""

OUTPUT_ALLOWANCE = 1000  # tokens reserved for a call's answer before it runs
REVIEW_TOKENS_PER_FINDING = 150  # a finding's entry in a review prompt, about
COMPLETE = "complete"
COVERAGE = "coverage"  # every planned call ran; the call bound left candidates out
CANCELLED = "cancelled"
SKIPPED = "skipped"  # queued but never started (a budget ran out or the run was cancelled)


@dataclass
class RunResult:
    run: int
    model: str
    settings: Settings
    selection: HotSelection
    stop_reason: str
    ideas: list[Idea]
    records: list[CallRecord]
    accepted: list[Accepted]
    hints: list[Hint]
    seconds: float
    plan: Plan | None = None  # the first wave's candidates: what was examined, left out
    plan_seconds: float = 0.0
    resumed: bool = False

    @property
    def calls(self) -> list[CallRecord]:
        """The calls that started (skipped ones are only in the record)."""
        return [r for r in self.records if r.status != SKIPPED]

    @property
    def rejected(self) -> list[dict[str, str]]:
        return [{"reason": r["reason"], "call": rec.id}
                for rec in self.records for r in rec.rejections]


@dataclass
class _Outcome:
    response: CallResponse
    fetched: list[str] = field(default_factory=list)
    tools: list[ToolUse] = field(default_factory=list)


class Orchestrator:
    def __init__(self, workload: Workload, backend: Backend, settings: Settings,
                 session: SessionStore, *, bus: EventBus | None = None,
                 hints: Sequence[HintText] = (), resume: bool = False,
                 reviewer: Reviewer | None = None,
                 selection: HotSelection | None = None) -> None:
        """``selection``: the windows to analyze (an engineer's pick); by default the
        hot selection the settings ask for."""
        self.workload = workload
        self.backend = backend
        self.settings = settings
        self.session = session
        self.bus = bus or EventBus()
        self.store = EvidenceStore(workload)
        self.shared = SharedMemory(self.store)
        self._hint_texts = tuple(hints)
        self._resume = resume
        self._reviewer = reviewer
        self._selection = selection
        self._ideas: list[Idea] = []
        self._merged: dict[str, tuple[str, ...]] = {}  # idea -> findings, as last announced
        self._reviewed = False
        self._tools = tool_specs()
        self._system = SYSTEM
        self._records: dict[str, CallRecord] = {}
        self._accepted: list[Accepted] = []
        self._reuse: dict[str, CallRecord] = {}
        self._inflight: dict[str, asyncio.Task] = {}
        self._seq: dict[str, int] = {}
        self._stop = False
        self._cancelled = False
        self._announced = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self.run_id = 0
        self.plan: Plan | None = None
        self.plan_seconds = 0.0
        self.result: RunResult | None = None

    # -- control -------------------------------------------------------------------------
    def cancel(self) -> None:
        """Stop the run, keeping every completed call; safe to call from any thread."""
        loop = self._loop
        if loop is None or loop.is_closed():
            self._cancelled = self._stop = True
            return
        try:
            running = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        if running is loop:
            self._cancel_now()
        else:
            loop.call_soon_threadsafe(self._cancel_now)

    def _cancel_now(self) -> None:
        self._cancelled = self._stop = True
        for task in list(self._inflight.values()):
            task.cancel()

    def _time_up(self) -> None:
        if not self.budget.exhausted:
            self.budget.time_up()
            self._announce_budget()
        self._stop = True
        for task in list(self._inflight.values()):
            task.cancel()

    # -- the run -------------------------------------------------------------------------
    async def run(self) -> RunResult:
        self._loop = asyncio.get_running_loop()
        started = time.monotonic()
        settings = self.settings
        hints = parse_hints(self._hint_texts, self.store)
        selection = self._selection or self.workload.hot(top=settings.top,
                                                         coverage=settings.coverage)
        resumed = self._open_run(hints)
        self.budget = Budget(Limits(settings.max_calls, settings.max_tokens, settings.max_seconds))
        # Model backends reserve tokens per turn against the run's budget and pace their
        # requests (AIMD on 429/529); rule backends have nothing to bind.
        bind = getattr(self.backend, "bind", None)
        if bind is not None:
            bind(run_budget=self.budget, concurrency=settings.concurrency)
        self.shared.on_set = lambda name, call, ids: self.session.save_set(
            self.run_id, name, call, ids)
        timer = (self._loop.call_later(settings.max_seconds, self._time_up)
                 if settings.max_seconds else None)
        self._semaphore = asyncio.Semaphore(settings.concurrency)
        try:
            plans = self._first_wave(selection, hints)
            for wave in range(1, settings.depth + 1):
                if not plans or self._stop:
                    break
                self.bus.publish(WaveStarted(run=self.run_id, wave=wave, calls=len(plans)))
                before = len(self._accepted)
                await self._run_wave(plans)
                last = wave == settings.depth or self._stop
                asked = await self._review(wave, self._accepted[before:],
                                           0 if last else settings.max_questions)
                self._announce_merges(wave, self._ideas)
                self.bus.publish(IdeasUpdated(run=self.run_id,
                                              ideas=tuple(i.to_json() for i in self._ideas)))
                if last:
                    break
                asked = asked[: self._calls_left(wave + 1)]
                plans = [self._question_plan(q, wave + 1, n) for n, q in enumerate(asked, 1)]
                for question, plan in zip(asked, plans, strict=True):
                    self.bus.publish(QuestionAsked(
                        run=self.run_id, wave=wave, question=question.text,
                        finding=question.finding.id, idea=question.idea, call=plan.id))
                plans += self._continuation(selection, hints, wave + 1, len(plans))
        except asyncio.CancelledError:
            self._cancelled = True
            self._finish(selection, hints, started, resumed)
            raise
        finally:
            if timer is not None:
                timer.cancel()
        return self._finish(selection, hints, started, resumed)

    def _open_run(self, hints: list[Hint]) -> bool:
        key = self._run_key()
        previous = self.session.resumable(key) if self._resume else None
        if previous is None:
            self.run_id = self.session.start_run(key, self.workload.profile.path,
                                                 self.backend.name, self.settings.to_json())
            self.session.save_notes(self.run_id, [h.to_json() for h in hints])
            return False
        self.run_id = previous.id
        self.session.reopen_run(self.run_id)
        self._reuse = {r.id: r for r in self.session.calls(self.run_id)
                       if r.status in (status.OK, status.REJECTED)}
        for name, (call, ids) in self.session.sets(self.run_id).items():
            self.shared.add_set(name, call, ids)
        return True

    def _run_key(self) -> str:
        w = self.workload
        data = {
            "model": self.backend.name,
            "settings": self.settings.to_json(),
            "profile": str(w.profile.path),
            "alp": str(w.alp_path) if w.alp_path else None,
            "guides": sorted(section.id for section in w.guides),
            "hints": [h.text for h in self._hint_texts],
            "windows": list(self._selection.windows) if self._selection else None,
        }
        text = json.dumps(data, sort_keys=True)
        return hashlib.blake2b(text.encode(), digest_size=12).hexdigest()

    def _finish(self, selection: HotSelection, hints: list[Hint], started: float,
                resumed: bool) -> RunResult:
        if self._cancelled:
            reason = CANCELLED
        else:
            left_out = self.plan is not None and bool(self.plan.left_out)
            reason = self.budget.exhausted or (COVERAGE if left_out else COMPLETE)
        for record in self._records.values():
            if record.status in ("queued", "running", status.CANCELLED):
                record.status = SKIPPED if record.status == "queued" else status.CANCELLED
                self._save(record)
        # A reviewer's last word stands; the rule gatekeeper sees every finding accepted.
        reviewed = self._reviewer is not None and self._reviewed
        ideas = self._ideas if reviewed else merge(self._accepted, self.workload.profile,
                                        self.workload.mechanisms)
        self._announce_merges(max((r.wave for r in self._records.values()), default=0), ideas)
        self.result = RunResult(
            run=self.run_id, model=self.backend.name, settings=self.settings,
            selection=selection, stop_reason=reason, ideas=ideas,
            records=list(self._records.values()), accepted=list(self._accepted), hints=hints,
            seconds=time.monotonic() - started, plan=self.plan,
            plan_seconds=self.plan_seconds, resumed=resumed,
        )
        self.session.save_ideas(self.run_id, [i.to_json() for i in ideas])
        run_status = {COMPLETE: "done", COVERAGE: "done",
                      CANCELLED: "cancelled"}.get(reason, "stopped")
        self.session.finish_run(self.run_id, run_status, reason,
                                build_report(self.result, self.workload))
        self.bus.publish(RunDone(run=self.run_id, stop_reason=reason, ideas=len(ideas),
                                 calls=len(self.result.calls)))
        self.bus.close()
        return self.result

    # -- the gatekeeper ------------------------------------------------------------------
    async def _review(self, wave: int, fresh: list[Accepted], limit: int) -> list[Question]:
        """Merge and rank everything accepted so far; pick the questions for the next wave.
        A reviewer (e.g. a model) may also reject findings, recorded with its reason."""
        if self._reviewer is None:
            self._ideas = merge(self._accepted, self.workload.profile,
                                        self.workload.mechanisms)
            self._reviewed = True
            return questions(self._ideas, fresh, limit)
        review = await self._review_call(wave, limit)
        if review is None:  # not run (a budget) or failed before answering
            self._ideas = merge(self._accepted, self.workload.profile,
                                        self.workload.mechanisms)
            return []
        for fid, reason in review.rejected.items():
            self._withdraw(fid, f"review: {reason}")
        self._ideas, self._reviewed = list(review.ideas), True
        return list(review.questions)

    async def _review_call(self, wave: int, limit: int) -> Review | None:
        """The reviewer as a recorded call: queued, budgeted, timed, its answer and its
        dropped proposals kept like any call's."""
        given = [a.id for a in self._accepted]
        record = CallRecord(id=f"review.w{wave}", run=self.run_id, wave=wave, parent=None,
                            key="", model=self.backend.name,
                            title=f"review of wave {wave} ({len(given)} findings)",
                            status="queued", given=given, brief="", seed={})
        self._records[record.id] = record
        self._save(record)
        self.bus.publish(CallQueued(run=self.run_id, call=record.id, wave=wave, parent=None,
                                    title=record.title, given=tuple(given)))
        reservation = self.budget.reserve(OUTPUT_ALLOWANCE
                                          + REVIEW_TOKENS_PER_FINDING * len(given))
        if reservation is None:
            self._announce_budget()
            self._stop = True
            record.status = SKIPPED
            self._save(record)
            return None
        record.status, record.started = "running", time.time()
        self.bus.publish(CallStarted(run=self.run_id, call=record.id))
        clock = time.perf_counter()
        review: Review | None = None
        assert self._reviewer is not None  # _review calls this only with a reviewer
        try:
            review = await self._reviewer(list(self._accepted), self.store, wave, limit)
        except asyncio.CancelledError:  # _finish records it
            record.status, record.error = status.CANCELLED, "cancelled"
            raise
        except Exception as exc:  # a failed review leaves the rule gatekeeper's ideas
            record.status, record.error = status.FAILED, f"{type(exc).__name__}: {exc}"
        record.seconds, record.finished = time.perf_counter() - clock, time.time()
        if review is not None:
            record.raw = review.raw
            _count_usage(record, review.usage)
            record.status = status.FAILED if review.error else status.OK
            record.error = review.error
            record.rejections = [{"reason": f"review proposal dropped: {d}",
                                  "title": "review proposal"} for d in review.dropped]
            for rejection in record.rejections:
                self.bus.publish(FindingRejected(run=self.run_id, call=record.id,
                                                 reason=rejection["reason"],
                                                 title=rejection["title"]))
        self._settle(reservation, record, self._weighed(record))
        return review

    def _announce_merges(self, wave: int, ideas: list[Idea]) -> None:
        """Each merge once, as the gatekeeper makes it (an idea that grows is announced
        again with all its findings)."""
        for idea in ideas:
            if len(idea.merged_from) < 2 or self._merged.get(idea.id) == idea.merged_from:
                continue
            self._merged[idea.id] = idea.merged_from
            self.bus.publish(IdeasMerged(
                run=self.run_id, idea=idea.id, merged_from=idea.merged_from, wave=wave,
                reason=merge_reason(idea, self._accepted, self.workload.profile)))

    def _withdraw(self, fid: str, reason: str) -> None:
        found = next((a for a in self._accepted if a.id == fid), None)
        if found is None:
            return
        self._accepted.remove(found)
        record = self._records[found.call]
        record.accepted.remove(fid)
        record.rejections.append({"reason": reason, "title": found.finding.title})
        self._save(record)
        self.bus.publish(FindingRejected(run=self.run_id, call=found.call, reason=reason,
                                         title=found.finding.title))

    # -- planning ------------------------------------------------------------------------
    def _first_wave(self, selection: HotSelection, hints: list[Hint]) -> list[CallPlan]:
        """One call per group of ranked candidates, as many as the call bound leaves for
        the first wave; the plan (and what it left out) is kept for the report."""
        s = self.settings
        clock = time.perf_counter()
        self.plan = plan_calls(self.workload, selection,
                               calls=first_wave_calls(s, self._reviewer is not None),
                               windows_per_call=s.windows_per_slice, hints=hints,
                               min_share=s.min_share)
        plans = self._briefed(list(self.plan.calls), 1, 0, hints)
        self.plan_seconds = time.perf_counter() - clock
        return plans

    def _continuation(self, selection: HotSelection, hints: list[Hint], wave: int,
                      taken: int) -> list[CallPlan]:
        """The calls a deeper wave's questions leave unused, on the best candidates the
        plan left out (numbered after the questions)."""
        spare = self._calls_spare(wave) - taken
        if self.plan is None or not self.plan.left_out or spare <= 0:
            return []
        self.plan, groups = extend(self.workload, selection, self.plan, calls=spare,
                                   windows_per_call=self.settings.windows_per_slice)
        first = groups[0].number if groups else 0
        return self._briefed(groups, wave, taken - first + 1, hints)

    def _briefed(self, groups: list[CallGroup], wave: int, offset: int,
                 hints: list[Hint]) -> list[CallPlan]:
        """A call plan per group: its brief built and the IDs it is given; call numbers are
        the groups' plus ``offset``."""
        s = self.settings
        self.shared.alp.preload(self._planned_pcs(groups))  # one pass for every brief
        marked = pattern_rows(self.workload)
        run_wide = tuple(h.id for h in hints if h.pc is None and h.window is None)
        plans = []
        for group in groups:
            made = brief(self.workload, group, token_cap=s.slice_tokens, guide_k=s.guide_k,
                         alp_records=self._alp_records, marked=marked, hints=hints,
                         guide_search=lambda query, k: search_guides(self.shared, query, k))
            given = made.given() + tuple(i for i in run_wide if i not in made.given())
            plans.append(CallPlan(id=call_id(wave, group.number + offset), wave=wave,
                                  parent=None, title=made.title, brief=made.text(),
                                  given=given, seed=made.seed(s.focus), weight=made.share))
        return plans

    def _planned_pcs(self, groups: list[CallGroup]) -> list[int]:
        """Every PC the groups' briefs could show."""
        profile = self.workload.profile
        pcs: list[int] = []
        for group in groups:
            for c in group.candidates:
                if c.mechanism is not None:
                    pcs += c.mechanism.pcs
                else:
                    pcs += profile.pc[profile.window_rows(c.windows[0])].tolist()
        return pcs

    def _calls_spare(self, wave: int) -> int:
        """Calls wave ``wave`` may make while keeping the later waves' questions and the
        reviews still to come."""
        s = self.settings
        if s.max_calls is None:
            return 0
        reviews = (s.depth - wave + 1) if self._reviewer is not None else 0
        later = (s.depth - wave) * s.max_questions
        return max(0, s.max_calls - self.budget.calls - reviews - later)

    def _calls_left(self, wave: int) -> int:
        """Calls a deeper wave may make: the bound less the calls made and the reviews
        still to come."""
        limit = self.settings.max_calls
        if limit is None:
            return self.settings.max_questions
        reviews = (self.settings.depth - wave + 1) if self._reviewer is not None else 0
        return max(0, min(self.settings.max_questions, limit - self.budget.calls - reviews))

    def _alp_records(self, pcs: list[int]) -> list[AlpRecord | None]:
        """The ALP records of ``pcs`` (built in one pass)."""
        alp = self.shared.alp
        alp.preload(pcs)
        return [alp.record(pc) for pc in pcs]

    def _question_plan(self, question: Question, wave: int, n: int) -> CallPlan:
        accepted = question.finding
        f = accepted.finding
        lines = ["<evidence>",
                 f"open question from {accepted.id} ({f.category}, \"{f.title}\"): "
                 f"{question.text}",
                 f"{accepted.id}: {f.claim}"]
        given = [accepted.id]
        for evidence_id in [*f.evidence, *(pc_id(pc) for pc in accepted.pcs)]:
            if evidence_id in given:
                continue
            given.append(evidence_id)
            rendered = self.store.resolve(evidence_id)
            text = " ".join(rendered.text.split())
            lines.append(f"{evidence_id}: {text[:400]}")
        lines.append("</evidence>")
        seed = {
            "question": question.text,
            "finding": accepted.id,
            "category": f.category,
            "pcs": [hex_pc(pc) for pc in accepted.pcs],
            "evidence": list(f.evidence),
            "focus": list(self.settings.focus),
        }
        return CallPlan(id=call_id(wave, n), wave=wave, parent=accepted.call,
                        title=f"question on {accepted.id}: {question.text[:80]}",
                        brief="\n".join(lines), given=tuple(given), seed=seed)

    # -- calls ---------------------------------------------------------------------------
    async def _run_wave(self, plans: list[CallPlan]) -> None:
        queued = []
        for plan in plans:
            record = CallRecord.planned(plan, self.run_id, self.backend.name)
            self._records[plan.id] = record
            queued.append((record, self._seq.setdefault(record.id, len(self._seq))))
        self.session.save_calls(queued)
        for plan in plans:
            self.bus.publish(CallQueued(run=self.run_id, call=plan.id, wave=plan.wave,
                                        parent=plan.parent, title=plan.title, given=plan.given))
        await asyncio.gather(*(self._call(plan) for plan in plans))

    async def _call(self, plan: CallPlan) -> None:
        record = self._records[plan.id]
        async with self._semaphore:
            if self._stop:
                record.status = SKIPPED
                self._save(record)
                return
            reused = self._reuse.get(plan.id)
            if reused is not None and reused.key != plan.key:
                reused = None
            estimate = (reused.input_tokens + reused.output_tokens if reused
                        else tokens(self._system) + tokens(plan.brief) + OUTPUT_ALLOWANCE)
            reservation = self.budget.reserve(estimate)
            if reservation is None:
                self._announce_budget()
                self._stop = True
                record.status = SKIPPED
                self._save(record)
                return
            record.status = "running"
            record.started = time.time()
            self.bus.publish(CallStarted(run=self.run_id, call=plan.id))
            clock = time.perf_counter()
            outcome = await self._execute(plan, record, reused)
            record.seconds = reused.seconds if reused else time.perf_counter() - clock
            record.finished = time.time()
            self._settle(reservation, record, self._conclude(plan, record, outcome))

    def _settle(self, reservation: Reservation, record: CallRecord, used: int) -> None:
        """A finished call: its tokens counted against the budgets, recorded, announced."""
        self.budget.settle(reservation, used)
        if self.budget.exhausted:
            self._announce_budget()
            self._stop = True
        self._save(record)
        self.bus.publish(CallFinished(
            run=self.run_id, call=record.id, status=record.status,
            accepted=tuple(record.accepted), rejected=len(record.rejections),
            input_tokens=record.input_tokens, output_tokens=record.output_tokens,
            seconds=round(record.seconds, 3), error=record.error))

    async def _execute(self, plan: CallPlan, record: CallRecord,
                       reused: CallRecord | None) -> _Outcome | None:
        """Run the backend (or replay a recorded call); None when the call was cancelled."""
        if reused is not None:
            usage = Usage(reused.input_tokens, reused.output_tokens, reused.cached_tokens,
                          reused.cache_write_tokens)
            return _Outcome(CallResponse(None, reused.raw, usage, reused.error),
                            list(reused.fetched), list(reused.tools))
        toolbox = ToolBox(self.store, self.shared, plan.id, plan.given,
                          on_use=lambda use: self._tool_used(plan.id, use))
        request = CallRequest(call_id=plan.id, wave=plan.wave, system=self._system, brief=plan.brief,
                              evidence_ids=plan.given, tools=self._tools, seed=plan.seed)
        task = asyncio.ensure_future(self.backend.run(request, toolbox.use,
                                                      lambda kind, payload: self._emit(
                                                          plan.id, kind, payload)))
        self._inflight[plan.id] = task
        try:
            response = await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                record.status = status.CANCELLED
                raise
            record.status = status.CANCELLED
            record.error = "cancelled"
            record.fetched, record.tools = toolbox.fetched, toolbox.log
            return None
        except Exception as exc:  # a backend failure ends this call only
            response = CallResponse(None, "", Usage(), f"{type(exc).__name__}: {exc}")
        finally:
            self._inflight.pop(plan.id, None)
        return _Outcome(response, toolbox.fetched, toolbox.log)

    def _conclude(self, plan: CallPlan, record: CallRecord, outcome: _Outcome | None) -> int:
        """Validate, register accepted findings, fill the record; returns tokens used."""
        if outcome is None:
            return 0
        response = outcome.response
        record.fetched, record.tools = outcome.fetched, outcome.tools
        record.raw = response.raw or (response.output.model_dump_json()
                                      if response.output is not None else "")
        usage = response.usage
        if not (usage.input_tokens or usage.output_tokens):
            tool_text = "".join(t.text for t in outcome.tools)
            usage = Usage(tokens(self._system) + tokens(plan.brief) + tokens(tool_text),
                          tokens(record.raw))
        _count_usage(record, usage)
        if response.error is not None:
            record.status, record.error = status.FAILED, response.error
        else:
            allowed = set(plan.given) | set(outcome.fetched)
            verdict = validate(response.output, record.raw, allowed, self.store)
            self._accept(plan, record, verdict)
        return self._weighed(record)

    def _weighed(self, record: CallRecord) -> int:
        """The call's tokens against the token budget: a model backend weighs cache writes
        and reads by their prices relative to input; others count every token."""
        weigh = getattr(self.backend, "weigh", None)
        if weigh is None:
            return record.tokens
        return weigh(Usage(record.input_tokens, record.output_tokens, record.cached_tokens,
                           record.cache_write_tokens))

    def _accept(self, plan: CallPlan, record: CallRecord, verdict: Verdict) -> None:
        record.status = status.REJECTED if verdict.malformed else status.OK
        record.rejections = [{"reason": r.reason, "title": r.title} for r in verdict.rejections]
        stored: dict[str, dict] = {}
        for accepted in self.shared.accept(verdict, plan.id, plan.wave, self.backend.name):
            self._accepted.append(accepted)
            record.accepted.append(accepted.id)
            stored[accepted.id] = accepted.to_json()
        if stored:
            self.session.save_findings(self.run_id, plan.id, stored)
        for rejection in verdict.rejections:
            self.bus.publish(FindingRejected(run=self.run_id, call=plan.id,
                                             reason=rejection.reason, title=rejection.title))

    # -- helpers -------------------------------------------------------------------------
    def _save(self, record: CallRecord) -> None:
        self.session.save_call(record, self._seq.setdefault(record.id, len(self._seq)))

    def _tool_used(self, call: str, use: ToolUse) -> None:
        self.bus.publish(ToolUsed(run=self.run_id, call=call, tool=use.tool, input=use.input,
                                  ids=tuple(use.ids), error=use.error))

    def _emit(self, call: str, kind: str, payload: Any) -> None:
        if kind in ("text", "status"):
            self.bus.publish(CallText(run=self.run_id, call=call, text=str(payload),
                                      channel=kind))
        elif kind == "tool_use":  # a tool's input as it streams in: {"name", "partial"}
            self.bus.publish(CallText(run=self.run_id, call=call, channel="tool_use",
                                      text=f"{payload.get('name', '?')}: "
                                           f"{payload.get('partial', '')}"))

    def _announce_budget(self) -> None:
        name = self.budget.exhausted
        if name and not self._announced:
            self._announced = True
            self.bus.publish(BudgetReached(run=self.run_id, budget=name,
                                           limit=self.budget.limit_of(name),
                                           used=self.budget.used_of(name)))


def _count_usage(record: CallRecord, usage: Usage) -> None:
    """A call's token counts, uncached input, cache writes and cache reads apart."""
    record.input_tokens = usage.input_tokens
    record.cache_write_tokens = usage.cache_write_tokens
    record.output_tokens = usage.output_tokens
    record.cached_tokens = usage.cache_read_tokens
