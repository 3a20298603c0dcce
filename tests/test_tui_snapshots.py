"""Snapshots of the explorer at 80×24 and 160×48 (pytest-textual-snapshot).

Deterministic: fixed inputs, a fixed config (no config file, dark theme, animations off,
no cursor blink), a fresh session per test. Update after an intended change with
``pytest tests/test_tui_snapshots.py --snapshot-update`` and review the SVGs.
"""

from __future__ import annotations

import asyncio

import pytest
from tui_support import gatekeeper_batch, ready, until

from pcscope.tui.config import TuiConfig

SMALL = (80, 24)
WIDE = (160, 48)


def app_of(indexed, **config):
    return indexed.app(TuiConfig(path=None, **config))


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x48"])
def test_opening_view(snap_compare, indexed, size) -> None:
    assert snap_compare(app_of(indexed), terminal_size=size, run_before=ready)


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x48"])
def test_drilled_into_an_indirect_call(snap_compare, indexed, size) -> None:
    async def drill(pilot) -> None:
        await ready(pilot)
        await pilot.press("j", "enter")
        if size == SMALL:
            await pilot.press("3")

    assert snap_compare(app_of(indexed), terminal_size=size, run_before=drill)


def test_help_in_the_assembly_pane(snap_compare, indexed) -> None:
    async def help_(pilot) -> None:
        await ready(pilot)
        await pilot.press("2", "f1")

    assert snap_compare(app_of(indexed), terminal_size=SMALL, run_before=help_)


def test_high_contrast_theme(snap_compare, indexed) -> None:
    assert snap_compare(app_of(indexed, theme="pcscope-high-contrast"), terminal_size=SMALL,
                        run_before=ready)


@pytest.mark.parametrize("size", [SMALL, WIDE], ids=["80x24", "160x48"])
def test_findings_of_a_recorded_run(snap_compare, indexed, size) -> None:
    # Record a run first (not snapshotted: its status line holds timings), then reopen.
    async def record() -> None:
        app = app_of(indexed)
        async with app.run_test(size=WIDE) as pilot:
            screen = await ready(pilot)
            await pilot.press("A")
            await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                        "the analysis")

    asyncio.run(record())

    async def findings(pilot) -> None:
        await ready(pilot)
        await pilot.press("4")

    assert snap_compare(app_of(indexed), terminal_size=size, run_before=findings)


@pytest.mark.parametrize("size", [(80, 24), (120, 40), (200, 50)],
                         ids=["80x24", "120x40", "200x50"])
def test_gatekeeper_mid_run(snap_compare, indexed, size, monkeypatch) -> None:
    """Wave 2 running; the gatekeeper node of wave 1 open on its merge."""
    import pcscope.tui.analysis as analysis
    from pcscope.tui.run_model import RunView

    class Clock:  # the status line's elapsed time, fixed for the picture
        @staticmethod
        def monotonic() -> float:
            return 12.5

    monkeypatch.setattr(analysis, "time", Clock)

    async def mid_run(pilot) -> None:
        screen = await ready(pilot)
        controller = screen.analysis
        controller.run = RunView(model="offline")
        screen.calls.start(controller.run, "analysis of all hot windows · offline")
        _, batch = gatekeeper_batch()
        controller.apply(batch)
        await pilot.press("5")
        tree = screen.calls.calls_tree
        gate = next(n for n in tree.root.children[0].children if n.data == "gate:1")
        tree.move_cursor(gate.children[0])
        await pilot.pause()

    assert snap_compare(app_of(indexed), terminal_size=size, run_before=mid_run)
