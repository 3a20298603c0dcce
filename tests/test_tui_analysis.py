"""Live analysis in the explorer: the engine's calls and ideas appear, verdicts and notes
are kept across reopening, runs can be cancelled, evidence links jump, reports export."""

from __future__ import annotations

import sqlite3
import threading

from tui_support import analyze_all, gatekeeper_batch, ready, screen_text, until

from pcscope.core.engine import events as ev
from pcscope.core.engine.session_store import SessionStore
from pcscope.core.ids import parse_pc
from pcscope.tui.analysis import AnalysisController
from pcscope.tui.app import PcscopeApp
from pcscope.tui.config import TuiConfig
from pcscope.tui.launch import reopen
from pcscope.tui.run_model import RunView

WIDE = (160, 48)


async def test_offline_analysis_shows_calls_and_findings(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        run = screen.analysis.run
        assert run.stop_reason == "complete"
        assert run.calls and all(c.status == "ok" for c in run.calls.values())
        # The tree holds one node per call under its wave.
        tree = screen.calls.calls_tree
        leaves = [n for wave in tree.root.children for n in wave.children
                  if not str(n.data).startswith("gate:")]
        assert sorted(n.data for n in leaves) == sorted(run.calls)
        ideas = screen.findings.ideas.ideas
        assert ideas, "the offline analyst found nothing in the planted hot spots"
        profile = screen.workload.profile
        for idea in ideas:
            assert all(profile.row_of(parse_pc(pc)) is not None for pc in idea.pcs)
        # What the engine recorded is what the panes show.
        with SessionStore(indexed.session) as store:
            info = store.runs()[-1]
            assert [i["id"] for i in store.ideas(info.id)] == [i.id for i in ideas]
            assert {c.id for c in store.calls(info.id)} >= set(run.calls)
        assert f"{len(ideas)} ideas" in screen_text(app)
        # Selecting a call shows what it was given.
        await pilot.press("5")
        for _ in range(4):  # root, wave, first call
            if screen.calls.selected is None:
                await pilot.press("down")
        call = run.calls[screen.calls.selected]
        text = screen_text(app)
        assert f"given ({len(call.given)})" in text and call.given[0] in text
        # Its raw output comes from the session record, fetched when the call is shown.
        await until(pilot, lambda: call.raw, "the call's raw output")
        with SessionStore(indexed.session) as store:
            assert call.raw == store.call(call.id).raw


async def test_accepted_idea_and_note_are_restored_on_reopen(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("4")
        first = screen.findings.ideas.idea.id
        await pilot.press("y", "i")
        assert screen.command.asking
        await pilot.press(*"check the BTB", "enter")
        await pilot.pause()
    reopened = indexed.app()
    async with reopened.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        ideas = screen.findings.ideas
        assert ideas.ideas and ideas.ideas[0].id == first  # the recorded run is back
        verdict = ideas.verdict_of(first)
        assert (verdict.verdict, verdict.note) == ("accepted", "check the BTB")
        assert screen.analysis.run.calls  # and its calls


async def test_a_recorded_runs_evidence_resolves_off_the_ui_thread(indexed) -> None:
    """Reopened on a recorded run, the first idea's evidence shows at once and its ALP
    record and mechanism resolve in a worker: the UI thread neither decodes the ALP nor
    reads the mechanisms, nor waits while a worker does."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        await analyze_all(pilot, await ready(pilot))
    request = indexed.request()
    prepared = reopen(request)  # as `pcscope open` does before the UI starts
    assert prepared is not None
    workload = prepared.workload
    gate = threading.Event()  # the loads finish once the explorer has drawn without them
    on_ui: list[str] = []
    waited: list[bool] = []
    for part in ("alp_loader", "mechanism_loader"):
        load = getattr(workload, part)

        def held(load=load, part=part):
            if threading.current_thread() is threading.main_thread():
                on_ui.append(part)
            waited.append(gate.wait(timeout=5.0))  # False: nobody drew meanwhile
            return load()

        setattr(workload, part, held)
    reopened = PcscopeApp(request, TuiConfig(path=None), prepared)
    async with reopened.run_test(size=WIDE) as pilot:
        await ready(pilot, settle=False)
        await until(pilot, lambda: "alp:0x2004  …" in screen_text(reopened),
                    "the evidence drawn before the ALP has loaded")
        gate.set()
        await until(pilot, lambda: "ALP at 0x2004" in screen_text(reopened),
                    "the ALP record's title")
        assert "indirect-call mechanism, own share" in screen_text(reopened)
    assert on_ui == [] and waited and all(waited)


async def test_a_verdict_the_session_store_cannot_save_is_reported(indexed,
                                                                   monkeypatch) -> None:
    """The session store writes on its own thread; a write that fails reaches the app's
    one error handler, as a failed worker does."""
    def failing(*_args, **_kwargs) -> None:
        raise sqlite3.OperationalError("disk I/O error")

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        monkeypatch.setattr(SessionStore, "set_verdict", failing)
        await pilot.press("4", "y")
        await until(pilot, lambda: any(n.title == "save verdict failed" and
                                       "disk I/O error" in str(n.message)
                                       for n in app._notifications),
                    "the failed save to be reported")


async def test_rejecting_and_undeciding_an_idea(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("4", "r")
        idea = screen.findings.ideas.idea.id
        assert screen.findings.ideas.verdict_of(idea).verdict == "rejected"
        await pilot.press("u")
        assert screen.findings.ideas.verdict_of(idea).verdict == "proposed"


async def test_evidence_link_jumps_to_its_pc(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("4", "enter")
        evidence = screen.findings.evidence
        assert evidence.has_focus
        target = next(i for i in evidence.ids if i.startswith(("pc:", "alp:")))
        evidence.move_to(evidence.ids.index(target))
        await pilot.press("enter")
        assert screen.asm.pc == parse_pc(target.partition(":")[2])


async def test_analyze_one_window_scopes_the_run(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("j", "a")  # the highlighted window only: runtime_dispatch
        await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                    "the analysis to finish")
        given = {i for c in screen.analysis.run.calls.values() for i in c.given}
        windows = {i for i in given if i.startswith("win:")}
        assert windows == {"win:0x2000"}


async def test_cancel_keeps_what_finished(indexed) -> None:
    app = indexed.app(model="scripted:ok@0.4")
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("A")
        await until(pilot, lambda: screen.analysis.run.calls, "calls to be queued")
        await pilot.press("x")
        await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                    "the run to stop")
        assert screen.analysis.run.stop_reason == "cancelled"
        text = screen_text(app)
        assert "· cancelled ·" in text and "skipped" in text


async def test_export_writes_the_markdown_report(indexed, tmp_path) -> None:
    app = indexed.app()
    target = tmp_path / "report.md"
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("e")
        assert screen.command.asking
        screen.command.input.value = str(target)
        await pilot.press("enter")
        await until(pilot, target.exists, "the report file")
        title = screen.findings.ideas.ideas[0].title
    assert title in target.read_text(encoding="utf-8")


def test_bursts_of_events_are_applied_once_per_batch() -> None:
    """200 events in one batch: one message to the screen, carrying the tree's changes,
    the ideas and the status line together."""
    from pcscope.tui.analysis import RunChanged

    posted: list = []

    class Screen:  # the controller only posts to its screen
        post_message = staticmethod(posted.append)

        class settings:  # noqa: N801
            max_calls = 400

    controller = AnalysisController.__new__(AnalysisController)
    controller.screen = Screen
    controller.run = RunView()
    controller._ideas = 0
    controller._started = 0.0
    controller._worker = None
    batch: list[ev.Event] = []
    for n in range(100):
        call = f"r1.w1.c{n}"
        batch.append(ev.CallQueued(run=1, call=call, wave=1, parent=None, title="t",
                                   given=("pc:0x1000",)))
        batch.append(ev.CallText(run=1, call=call, text="…"))
    batch.append(ev.IdeasUpdated(run=1, ideas=({"id": "idea:x"},)))
    controller.apply(batch)
    assert len(posted) == 1 and isinstance(posted[0], RunChanged)
    message = posted[0]
    assert len(message.changed) == 100 and message.ideas == ({"id": "idea:x"},)
    assert "1 idea ·" in message.status and message.calls_badge == "0/100"
    assert len(controller.run.calls) == 100


async def test_unknown_model_fails_cleanly(indexed) -> None:
    app = indexed.app(model="nosuch:model")
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("A")
        await until(pilot, lambda: not screen.analysis.running, "the failed run")
        await pilot.pause(0.2)
        assert "analysis failed: unknown model 'nosuch:model'" in screen_text(app)
        assert any("unknown model" in str(n.message) for n in app._notifications)


async def test_calls_tree_moves_like_every_list(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("5")
        tree = screen.calls.calls_tree
        assert tree.has_focus and tree.last_line > 1
        await pilot.press("G")
        assert tree.cursor_line == tree.last_line
        await pilot.press("g")
        assert tree.cursor_line == 0
        await pilot.press("end")
        assert tree.cursor_line == tree.last_line
        await pilot.press("home", "pagedown")
        assert tree.cursor_line > 0
        await pilot.press("pageup")
        assert tree.cursor_line == 0


async def test_a_budget_stopped_run_says_so_and_counts_skipped_calls(indexed) -> None:
    from dataclasses import replace

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        # the plan fits a call bound, so a token budget that one call fills stops it
        screen.settings = replace(screen.settings, max_tokens=5000, windows_per_slice=1)
        await analyze_all(pilot, screen)
        run = screen.analysis.run
        assert run.stop_reason == "max-tokens"
        skipped = [c for c in run.calls.values() if c.status == "skipped"]
        assert skipped, "a one-call budget over several calls leaves calls unrun"
        status = str(screen.command.status.render())
        assert "stopped by max-tokens" in status
        done = len(run.calls) - len(skipped)
        assert f"{done} done · {len(skipped)} skipped of {len(run.calls)} calls" in status
        assert "complete" not in status


async def test_call_detail_belongs_to_the_current_run(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("5", "down", "down")
        assert screen.calls.selected is not None
        before = screen.calls.run_view.calls[screen.calls.selected]
        await pilot.press("A")
        await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                    "the second analysis")
        assert screen.calls.selected is None
        assert "Select a call" in str(screen.calls.detail.render())
        # A record the old run asked for never lands in the new run's call of that name.
        stale = type(before)(before.id, before.wave, before.parent, before.title)
        from concurrent.futures import Future

        done: Future = Future()
        done.set_result(type("R", (), {"raw": "OLD RAW", "fetched": ()})())
        screen.calls.on_calls_view_record_loaded(screen.calls.RecordLoaded(stale, done))
        current = screen.calls.run_view.calls.get(before.id)
        assert current is None or current.raw != "OLD RAW"


async def test_a_call_record_the_session_store_cannot_read_is_reported(indexed,
                                                                      monkeypatch) -> None:
    def failing(*_args, **_kwargs) -> None:
        raise sqlite3.OperationalError("database disk image is malformed")

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        monkeypatch.setattr(SessionStore, "call", failing)
        await pilot.press("5", "down", "down")
        assert screen.calls.selected is not None
        await until(pilot, lambda: any("malformed" in str(n.message)
                                       for n in app._notifications),
                    "the failed read to be reported")


async def test_export_keeps_the_triage_and_leaves_rejected_ideas_out(indexed, tmp_path) -> None:
    import json

    app = indexed.app()
    markdown, data = tmp_path / "triaged.md", tmp_path / "triaged.json"
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        ideas = screen.findings.ideas.ideas
        assert len(ideas) >= 2
        await pilot.press("4", "r", "i")  # reject the first idea, with a reason
        screen.command.input.value = "a GOT load, not a chase"
        await pilot.press("enter", "j", "y")  # accept the second
        for target in (markdown, data):
            await pilot.press("e")
            screen.command.input.value = str(target)
            await pilot.press("enter")
            await until(pilot, target.exists, f"the export {target.name}")
        await app.workers.wait_for_complete()
    rejected, accepted = ideas[0], ideas[1]
    report = json.loads(data.read_text(encoding="utf-8"))
    assert rejected.id not in [i["id"] for i in report["ideas"]]
    assert report["rejected_ideas"] == [{"id": rejected.id, "title": rejected.title,
                                         "note": "a GOT load, not a chase"}]
    kept = {i["id"]: i for i in report["ideas"]}
    assert kept[accepted.id]["verdict"] == "accepted"
    text = markdown.read_text(encoding="utf-8")
    ideas_part, _, triage = text.partition("## Engineer's triage")
    assert f"### 1. {accepted.title}" in ideas_part
    assert rejected.title not in ideas_part.split("## Ideas", 1)[1]
    assert "rejected — not recommended | a GOT load, not a chase" in triage


async def test_export_and_copy_without_any_analysis(indexed, tmp_path) -> None:
    app = indexed.app()
    hot, window = tmp_path / "hot.md", tmp_path / "window.md"
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("e")  # no run yet: the current view
        screen.command.input.value = str(hot)
        await pilot.press("enter")
        await until(pilot, hot.exists, "the hot-list export")
        await pilot.press("Y")
        assert app.clipboard == "win:0x1000 main_loop"
        await pilot.press("enter", "E")  # the open window's annotated assembly
        screen.command.input.value = str(window)
        await pilot.press("enter")
        await until(pilot, window.exists, "the window export")
        await pilot.press("Y")
        assert app.clipboard.startswith(f"pc:0x{screen.asm.pc:x} ")
        assert any("copied: pc:" in str(n.message) for n in app._notifications)
        await app.workers.wait_for_complete()
    listing = hot.read_text(encoding="utf-8")
    assert "| 1 | `win:0x1000` | main_loop |" in listing
    assert "| 2 | `win:0x2000` | runtime_dispatch |" in listing
    code = window.read_text(encoding="utf-8")
    assert "# main_loop · win:0x1000" in code and "0x100c" in code and "samples" in code


async def test_the_gatekeeper_is_watched_live(indexed) -> None:
    """Merges (updated in place as an idea grows), a reviewer's rejection and a question
    sent deeper appear under their wave as they happen, with why; a merge shows the
    evidence kept from both sides; the status line counts it all."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        controller = screen.analysis
        controller.run = RunView(model="offline")
        screen.calls.start(controller.run, "test run")
        idea, batch = gatekeeper_batch()
        controller.apply(batch)
        await pilot.pause()
        tree = screen.calls.calls_tree
        gate = next(n for n in tree.root.children[0].children if n.data == "gate:1")
        assert str(gate.label) == "gatekeeper  1 merged · 1 rejected · 1 deeper"
        labels = [str(n.label) for n in gate.children]
        assert labels[0] == f"⊕ {idea['id']} ← 2 findings"
        assert labels[1] == "✗ Chase" and labels[2] == "? is the table hot? → w2.c1"
        # The idea grows in the next wave: the same entry, relabelled (no new line).
        controller.apply([ev.IdeasMerged(
            run=1, idea=idea["id"], wave=1, reason="same mechanism mech:x",
            merged_from=("finding:w1.c1.f1", "finding:w1.c2.f1", "finding:w1.c2.f2"))])
        await pilot.pause()
        assert [str(n.label) for n in gate.children][0] == f"⊕ {idea['id']} ← 3 findings"
        assert len(gate.children) == 3
        await pilot.press("5")
        tree.move_cursor(gate.children[0])
        await pilot.pause()
        text = screen_text(app)
        assert "why same mechanism mech:x" in text
        assert "evidence kept (both sides) (3)" in text and "mech:dispatch:0x2004" in text
        status = str(screen.command.status.render())
        assert "findings +3 −0" in status and "1 merge ·" in status


async def test_the_idea_detail_scrolls_from_the_list(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("4")
        scroll = screen.query_one("#idea-detail-scroll")
        assert scroll.max_scroll_y > 0, "the detail fits: nothing to scroll at 80x24?"
        await pilot.press("J")
        await pilot.pause()
        assert scroll.scroll_y == 3 and screen.findings.ideas.has_focus
        await pilot.press("K")
        await pilot.pause()
        assert scroll.scroll_y == 0


async def test_a_run_an_agent_submits_shows_up_in_the_open_explorer(indexed) -> None:
    from pcscope.mcp_server.agent_run import AgentRun

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert not screen.findings.ideas.ideas
        # What `pcscope mcp` does for an agent, here in-process on another store connection.
        with SessionStore(indexed.session) as store:
            agent = AgentRun(screen.workload, store, "claude-code")
            assert not (await agent.use("asm_around", {"pc": "0x2004"})).error
            verdict = agent.submit({"findings": [{
                "title": "Indirect call through the dispatch table", "category":
                "indirect-branch", "target": "software", "claim": "BLR X3 mispredicts.",
                "recommendation": "Devirtualize the hottest target.", "pcs": ["0x2004"],
                "evidence": ["pc:0x2004"], "confidence": 0.5, "basis": "profile-only"}]})
            assert "1 accepted" in verdict.text
        await until(pilot, lambda: screen.findings.ideas.ideas, "the agent's run", timeout=10)
        (idea,) = screen.findings.ideas.ideas
        assert idea.title == "Indirect call through the dispatch table"
        assert screen.analysis.run_id == agent.run_id
        assert "recorded run r1 (mcp:claude-code, complete)" in screen_text(app)
