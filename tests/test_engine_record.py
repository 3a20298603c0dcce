"""The session store: every call recorded, a crash mid-run survived, resume or fresh runs,
named sets shared between calls, the explorer's state."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest
from engine_helpers import ROOT, mini_workload, run

from pcscope.core.backends.doubles.scripted import ScriptedBackend
from pcscope.core.engine.session_store import SessionStore, default_path

ALL = {"coverage": 1.0, "windows_per_slice": 1, "depth": 1, "concurrency": 1}

CHILD = textwrap.dedent("""
    import asyncio, sys
    from engine_helpers import settings
    from pcscope.core.backends.registry import backend_for
    from pcscope.core.engine.orchestrator import Orchestrator
    from pcscope.core.engine.session_store import SessionStore
    from pcscope.index.store import open_workload
    profile, alp, index, session = sys.argv[1:5]
    workload = open_workload(profile, alp=alp, index_dir=index)
    chosen = settings(coverage=1.0, windows_per_slice=1, depth=1, concurrency=1)
    with SessionStore(session) as store:
        asyncio.run(Orchestrator(workload, backend_for("scripted:ok@0.4"), chosen, store).run())
""")


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("record")
    return folder, mini_workload(folder, guides=False)


def test_every_call_is_recorded_with_inputs_tools_output_and_verdict(built, tmp_path):
    _folder, workload = built
    result = run(workload, "scripted:tool+fabricate", session=tmp_path / "s.sqlite", **ALL)
    with SessionStore(tmp_path / "s.sqlite") as store:
        calls = store.calls(result.run)
        first = store.call("w1.c1")
    assert [c.id for c in calls] == ["w1.c1", "w1.c2", "w1.c3", "w1.c4"]
    assert first.given == list(next(r for r in result.records if r.id == "w1.c1").given)
    assert first.tools[0].tool == "asm_around" and first.tools[0].ids
    assert set(first.fetched) <= set(first.tools[0].ids)
    assert first.accepted == ["finding:w1.c1.f1"] and "scripted" in first.raw
    assert calls[1].rejections and calls[1].rejections[0]["reason"].startswith("evidence id")
    assert first.brief.startswith("<evidence>") and first.seconds >= 0


def test_a_crash_mid_run_keeps_finished_calls_and_a_rerun_resumes(built, tmp_path):
    folder, workload = built
    session = tmp_path / "s.sqlite"
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{ROOT / 'tests'}"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(folder / "mini" / "profile.csv"),
         str(folder / "mini" / "alp.jsonl"), str(folder / "idx"), str(session)], env=env)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if session.exists():
                with SessionStore(session) as store:
                    if sum(c.status == "ok" for c in store.calls()) >= 2:
                        break
            time.sleep(0.05)
        child.send_signal(signal.SIGKILL)
    finally:
        child.wait(10)
    with SessionStore(session) as store:
        (crashed,) = store.runs()
        done_before = [c.id for c in store.calls(crashed.id) if c.status == "ok"]
    assert crashed.status == "running" and 2 <= len(done_before) < 4

    backend = ScriptedBackend(name="scripted:ok@0.4")  # same name: same run key
    result = run(workload, session=session, resume=True, backend=backend, **ALL)
    assert result.run == crashed.id and result.resumed
    assert backend.started == 4 - len(done_before)  # recorded calls were reused, not rerun
    assert [c.status for c in result.calls] == ["ok"] * 4 and len(result.ideas) == 4
    with SessionStore(session) as store:
        assert store.run(crashed.id).status == "done"
        assert len(store.runs()) == 1

    fresh = run(workload, session=session, backend=ScriptedBackend(name="scripted:ok@0.4"),
                **ALL)
    assert fresh.run == crashed.id + 1 and not fresh.resumed


def test_resume_without_an_unfinished_run_starts_fresh(built, tmp_path):
    _folder, workload = built
    first = run(workload, "scripted:ok", session=tmp_path / "s.sqlite", **ALL)
    second = run(workload, "scripted:ok", session=tmp_path / "s.sqlite", resume=True, **ALL)
    assert second.run == first.run + 1 and not second.resumed
    assert [i.to_json() for i in first.ideas] == [i.to_json() for i in second.ideas]


def test_remembered_sets_are_stored_and_other_calls_can_fetch_them(built, tmp_path):
    from pcscope.core.engine.tools import SharedMemory, ToolBox
    from pcscope.core.evidence import EvidenceStore

    _folder, workload = built
    store = EvidenceStore(workload)
    saved = []
    shared = SharedMemory(store, on_set=lambda name, call, ids: saved.append((name, call, ids)))
    first = ToolBox(store, shared, "w1.c1", ("pc:0x2004", "win:0x2000"))
    second = ToolBox(store, shared, "w1.c2", ("pc:0x1000",))

    async def go():
        refused = await first.use("remember", {"name": "hot-dispatch", "ids": ["pc:0x3000"]})
        stored = await first.use("remember", {"name": "hot-dispatch",
                                              "ids": ["pc:0x2004", "win:0x2000"]})
        fetched = await second.use("finding", {"id": "set:hot-dispatch"})
        return refused, stored, fetched

    refused, stored, fetched = asyncio.run(go())
    assert refused.error == "only IDs this call may cite can be remembered: pc:0x3000"
    assert stored.ids == ("set:hot-dispatch",)
    assert saved == [("hot-dispatch", "w1.c1", ["pc:0x2004", "win:0x2000"])]
    assert set(fetched.ids) == {"set:hot-dispatch", "pc:0x2004", "win:0x2000"}
    assert {"pc:0x2004", "set:hot-dispatch"} <= second.allowed
    assert store.resolve("set:hot-dispatch").pcs == (0x2004, 0x2000)


def test_explorer_state_and_verdicts_persist(tmp_path):
    path = default_path(tmp_path, "/some/profile.csv.gz")
    assert path.parent == tmp_path / "sessions" and path.suffix == ".sqlite"
    with SessionStore(path) as store:
        store.set_state("cursor", {"pc": "0x2004"})
        store.set_verdict("idea:indirect-branch:0x2000", "accepted", "try PGO")
    with SessionStore(path) as store:
        assert store.get_state("cursor") == {"pc": "0x2004"}
        assert store.get_state("missing", 7) == 7
        assert store.verdicts() == {"idea:indirect-branch:0x2000": ("accepted", "try PGO")}
