"""Shared setup of the explorer's Pilot tests: inputs indexed (under a tmp dir, never
~/.cache; once per run by conftest's ``tui_index``), an app with a fixed config, and
waiting helpers."""

from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, fields, replace
from pathlib import Path

from textual import events
from textual.keys import _character_to_key, key_to_character
from tui_data import Inputs, write_inputs

from pcscope.core.inputs import Inputs as IndexInputs
from pcscope.index.store import open_workload
from pcscope.tui.app import PcscopeApp
from pcscope.tui.config import TuiConfig
from pcscope.tui.launch import OpenRequest
from pcscope.tui.screens.main import MainScreen

WAIT = 20.0  # seconds a test waits for the explorer before failing


@dataclass(frozen=True)
class Indexed:
    inputs: Inputs
    index_dir: Path
    session: Path  # per test: state never leaks from one test into the next

    def request(self, **changes) -> OpenRequest:
        """The request for these inputs; ``changes`` may name input fields (``guides=…``)
        as well as the request's own."""
        named = {f.name for f in fields(IndexInputs)}
        inputs = replace(IndexInputs(self.inputs.profile, self.inputs.alp, (self.inputs.guide,)),
                         **{k: v for k, v in changes.items() if k in named})
        base = dict(inputs=inputs, index_dir=self.index_dir, model="offline",
                    session=self.session)
        base.update({k: v for k, v in changes.items() if k not in named})
        return OpenRequest(**base)

    def app(self, config: TuiConfig | None = None, **changes) -> PcscopeApp:
        return PcscopeApp(self.request(**changes), config or TuiConfig(path=None))


def build_index(folder: Path) -> Indexed:
    inputs = write_inputs(folder / "inputs")
    index_dir = folder / "idx"
    open_workload(inputs.profile, alp=inputs.alp, guides=[inputs.guide], index_dir=index_dir)
    return Indexed(inputs, index_dir, folder / "session.sqlite")


def fresh_session(indexed: Indexed, folder: Path) -> Indexed:
    return replace(indexed, session=folder / "session.sqlite")


async def ready(pilot, *, settle: bool = True) -> MainScreen:
    """Wait until the main screen is up and its background loading has finished."""
    app = pilot.app
    deadline = time.monotonic() + WAIT
    while not isinstance(app.screen, MainScreen):
        if time.monotonic() > deadline:
            raise AssertionError(f"explorer did not open (screen {app.screen!r})")
        await pilot.pause(0.02)
    if settle:
        await app.workers.wait_for_complete()
        await pilot.pause()
    return app.screen


async def until(pilot, condition, what: str, timeout: float = WAIT) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.02)
        await pilot.pause()


async def analyze_all(pilot, screen) -> None:
    """`A` (the offline analyst on every hot window), waited for until it finished."""
    await pilot.press("A")
    await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                "the analysis to finish")
    await pilot.pause(0.2)


def screen_text(app) -> str:
    """What the terminal shows, as plain text (one line per row)."""
    strips = app.screen._compositor.render_strips()
    return "\n".join("".join(segment.text for segment in strip) for strip in strips)


def gatekeeper_batch() -> tuple[dict, list]:
    """Events of a run in the middle of wave 2: two first-wave calls, the gatekeeper's
    merge, a reviewer's rejection, a question sent deeper and that deeper call running."""
    from pcscope.core.engine import events as ev

    idea = {"id": "idea:indirect-branch:0x2004", "title": "Dispatch through BLR X3",
            "weight": 0.1, "confidence": 0.5, "category": "indirect-branch",
            "evidence": ["pc:0x2004", "mech:dispatch:0x2004", "alp:0x2004"]}
    batch = [
        ev.CallQueued(run=1, call="w1.c1", wave=1, parent=None, title="main_loop",
                      given=("win:0x1000",)),
        ev.CallQueued(run=1, call="w1.c2", wave=1, parent=None, title="runtime_dispatch",
                      given=("win:0x2000",)),
        ev.CallFinished(run=1, call="w1.c1", status="ok", accepted=("finding:w1.c1.f1",),
                        rejected=0, input_tokens=10, output_tokens=5, seconds=0.1),
        ev.CallFinished(run=1, call="w1.c2", status="ok",
                        accepted=("finding:w1.c2.f1", "finding:w1.c2.f2"), rejected=0,
                        input_tokens=10, output_tokens=5, seconds=0.1),
        ev.IdeasMerged(run=1, idea=idea["id"], wave=1, reason="same mechanism mech:x",
                       merged_from=("finding:w1.c1.f1", "finding:w1.c2.f1")),
        ev.FindingRejected(run=1, call="w1.c2", reason="review: a GOT load", title="Chase"),
        ev.QuestionAsked(run=1, wave=1, question="is the table hot?", idea=idea["id"],
                         finding="finding:w1.c1.f1", call="w2.c1"),
        ev.IdeasUpdated(run=1, ideas=(idea,)),
        ev.WaveStarted(run=1, wave=2, calls=1),
        ev.CallQueued(run=1, call="w2.c1", wave=2, parent="w1.c1",
                      title="question on finding:w1.c1.f1", given=("finding:w1.c1.f1",)),
        ev.CallStarted(run=1, call="w2.c1"),
    ]
    return idea, batch


def burst(app, *keys: str) -> None:
    """Keys as one terminal read delivers them (a paste, fast typing, SSH latency): every
    key is posted to the app before the first is handled, as the driver does. A key is a
    character (``"/"``, ``"x"``) or a Textual key name (``"enter"``, ``"escape"``).
    ``pilot.press`` waits for each key to be handled, which would hide what happens to the
    later ones."""
    for key in keys:
        if len(key) == 1:
            app.post_message(events.Key(_character_to_key(key), key))
        else:
            app.post_message(events.Key(key, key_to_character(key)))
