"""The orchestrator: waves and depth, budgets, cancellation, concurrency, failures, events."""

from __future__ import annotations

import asyncio
import threading

import pytest
from engine_helpers import mini_workload, run, settings

from pcscope.core.backends.registry import backend_for
from pcscope.core.engine.events import (
    BudgetReached,
    CallFinished,
    CallStarted,
    EventBus,
    RunDone,
)
from pcscope.core.engine.orchestrator import Orchestrator
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.profile import HotSelection


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    return mini_workload(tmp_path_factory.mktemp("orch"))


ALL = {"coverage": 1.0, "windows_per_slice": 1}  # the mini workload: 4 slices, one per window


def test_open_questions_go_one_wave_deeper_up_to_depth(workload, tmp_path):
    two = run(workload, "scripted:question", session=tmp_path / "a.sqlite", depth=2, **ALL)
    assert [c.wave for c in two.calls] == [1, 1, 1, 1, 2, 2, 2, 2]
    parents = {c.id: c.parent for c in two.calls if c.wave == 2}
    assert parents == {"w2.c1": "w1.c1", "w2.c2": "w1.c2", "w2.c3": "w1.c3", "w2.c4": "w1.c4"}
    # the deeper call is seeded with the parent finding and its evidence
    deeper = next(c for c in two.calls if c.id == "w2.c1")
    assert "finding:w1.c1.f1" in deeper.given and deeper.seed["question"]
    # it answers about the same PC, so its finding merges into the parent's idea
    assert all(len(i.merged_from) == 2 for i in two.ideas)
    one = run(workload, "scripted:question", session=tmp_path / "b.sqlite", depth=1, **ALL)
    assert {c.wave for c in one.calls} == {1}
    three = run(workload, "scripted:question", session=tmp_path / "c.sqlite", depth=3,
                max_questions=2, **ALL)
    assert [c.wave for c in three.calls].count(2) == 2
    assert [c.wave for c in three.calls].count(3) == 2


def test_an_engineers_selection_replaces_the_hot_selection(workload, tmp_path):
    profile = workload.profile
    coldest = int(profile.windows_by_weight()[-1])
    pick = HotSelection([coldest], profile.windows[coldest].weight, 1,
                        profile.windows[coldest].weight)
    session = tmp_path / "s.sqlite"
    result = run(workload, "scripted:ok", session=session, selection=pick, **ALL)
    assert result.selection is pick
    assert len(result.calls) == 1  # one slice: the picked window's
    windows = {i for i in result.calls[0].given if i.startswith("win:")}
    assert windows == {profile.windows[coldest].id}
    # A run of the whole hot selection is another run, never a resume of this one.
    whole = run(workload, "scripted:ok", session=session, resume=True, **ALL)
    assert not whole.resumed and len(whole.calls) == 4


def test_max_calls_shapes_the_plan_and_reports_what_it_left_out(workload, tmp_path):
    result = run(workload, "scripted:ok", session=tmp_path / "s.sqlite", max_calls=2, depth=1,
                 concurrency=1, **ALL)
    # The bound is planned for, not hit: two calls, none skipped, the rest left out.
    assert result.stop_reason == "complete"
    assert [r.status for r in result.records] == ["ok", "ok"]
    plan = result.plan
    assert plan.candidates == 4 and len(plan.calls) == 2
    # each window is the hottest of a pattern category, so all are forced in: the two
    # calls share them instead of leaving any out
    # windows a mechanism holds are examined through its sites, the rest as windows
    windows = {w for g in plan.calls for c in g.candidates if c.mechanism is None
               for w in c.windows}
    sites = {w for g in plan.calls for c in g.candidates if c.mechanism for w in c.windows}
    assert windows == set(plan.examined_windows) and len(windows | sites) == 4
    # a mechanism examines its sites, not the rest of its windows
    assert not plan.left_out and 0.99 < plan.examined_share <= 1.0


def test_deeper_waves_get_only_what_the_bound_leaves(workload, tmp_path):
    bus = EventBus()
    result = run(workload, "scripted:question", session=tmp_path / "s.sqlite", bus=bus,
                 max_calls=2, depth=3, max_questions=4, concurrency=1, **ALL)
    # one first-wave call (the floor); its question takes the last call, so the third wave
    # is not planned at all rather than queued and skipped
    assert [c.wave for c in result.calls] == [1, 2] and result.stop_reason == "complete"
    assert "skipped" not in [r.status for r in result.records]
    assert not [e for e in bus.history if isinstance(e, BudgetReached)]


def test_max_tokens_refuses_a_call_whose_reservation_does_not_fit(workload, tmp_path):
    result = run(workload, "scripted:ok", session=tmp_path / "s.sqlite", max_tokens=3500,
                 concurrency=1, **ALL)
    assert result.stop_reason == "max-tokens"
    assert 1 <= len(result.calls) < 4
    assert sum(c.input_tokens + c.output_tokens for c in result.calls) <= 3500


def test_max_seconds_cancels_running_calls_and_keeps_finished_ones(workload, tmp_path):
    result = run(workload, "scripted:ok@0.5", session=tmp_path / "s.sqlite", max_seconds=0.8,
                 concurrency=1, **ALL)
    assert result.stop_reason == "max-seconds"
    statuses = [r.status for r in result.records]
    assert statuses[0] == "ok" and statuses[1] == "cancelled"
    assert set(statuses[2:]) == {"skipped"}
    assert len(result.ideas) == 1


def test_cancel_from_another_thread_keeps_completed_results(workload, tmp_path):
    bus = EventBus()
    with SessionStore(tmp_path / "s.sqlite") as store:
        orch = Orchestrator(workload, backend_for("scripted:ok@0.2"),
                            settings(concurrency=1, **ALL), store, bus=bus)

        def cancel_after_first(event):
            if isinstance(event, CallFinished):
                threading.Thread(target=orch.cancel).start()

        bus.listen(cancel_after_first)
        result = asyncio.run(orch.run())
        assert result.stop_reason == "cancelled"
        assert result.records[0].status == "ok" and result.ideas
        assert {r.status for r in result.records[1:]} <= {"cancelled", "skipped"}
        assert store.run(result.run).status == "cancelled"
        assert store.calls(result.run)[0].status == "ok"


async def test_cancelling_the_run_task_records_what_finished(workload, tmp_path):
    # cancel while the second call is in flight, by events rather than a sleep that a
    # loaded machine can outrun
    bus, finished, second = EventBus(), [], asyncio.Event()

    def watch(event):
        if isinstance(event, CallFinished):
            finished.append(event)
        elif isinstance(event, CallStarted) and len(finished) == 1:
            second.set()

    bus.listen(watch)
    with SessionStore(tmp_path / "s.sqlite") as store:
        orch = Orchestrator(workload, backend_for("scripted:ok@0.3"),
                            settings(concurrency=1, **ALL), store, bus=bus)
        task = asyncio.create_task(orch.run())
        await asyncio.wait_for(second.wait(), timeout=60)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert orch.result is not None and orch.result.stop_reason == "cancelled"
        assert [c.status for c in store.calls(orch.run_id)][:2] == ["ok", "cancelled"]


def test_concurrency_bounds_calls_in_flight(workload, tmp_path):
    bus = EventBus()
    in_flight, peak = 0, 0

    def count(event):
        nonlocal in_flight, peak
        if isinstance(event, CallStarted):
            in_flight += 1
            peak = max(peak, in_flight)
        elif isinstance(event, CallFinished):
            in_flight -= 1

    bus.listen(count)
    run(workload, "scripted:ok@0.1", session=tmp_path / "s.sqlite", bus=bus, concurrency=2,
        depth=1, **ALL)
    assert peak == 2


def test_a_failing_backend_fails_its_call_only(workload, tmp_path):
    result = run(workload, "scripted:fail+ok", session=tmp_path / "s.sqlite", concurrency=1,
                 depth=1, **ALL)
    assert [c.status for c in result.calls] == ["failed", "ok", "failed", "ok"]
    assert result.stop_reason == "complete" and len(result.ideas) == 2


def test_events_reach_a_subscriber_on_another_threads_loop(workload, tmp_path):
    bus = EventBus()
    received: list = []
    ready = threading.Event()

    def consume():
        async def main():
            subscription = bus.subscribe()
            ready.set()
            async for event in subscription:
                received.append(event)

        asyncio.run(main())

    consumer = threading.Thread(target=consume)
    consumer.start()
    ready.wait(5)
    run(workload, "scripted:ok", session=tmp_path / "s.sqlite", bus=bus, depth=1, **ALL)
    consumer.join(5)
    assert not consumer.is_alive()
    kinds = [e.kind for e in received]
    assert kinds[0] == "wave_started" and kinds[-1] == "run_done"
    assert kinds.count("call_queued") == kinds.count("call_finished") == 4
    assert [e.seq for e in received] == sorted(e.seq for e in received)
    assert isinstance(received[-1], RunDone) and received[-1].ideas == 4


async def test_a_late_subscriber_can_replay_the_history():
    bus = EventBus()
    bus.publish(RunDone(run=1, stop_reason="complete", ideas=0, calls=0))
    bus.close()
    events = [e async for e in bus.subscribe(replay=True)]
    assert [e.kind for e in events] == ["run_done"]
    assert [e async for e in bus.subscribe()] == []
