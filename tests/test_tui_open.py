"""Opening the explorer: the CLI entry, the indexing screen, errors and cancellation."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from tui_data import write_inputs
from tui_support import ready

from pcscope.cli.cmd_open import request_of
from pcscope.cli.main import build_parser, main
from pcscope.core.errors import InputError
from pcscope.core.inputs import Inputs
from pcscope.tui.app import PcscopeApp
from pcscope.tui.config import TuiConfig
from pcscope.tui.launch import OpenRequest
from pcscope.tui.screens.indexing import IndexingCancelled, IndexingScreen


def test_no_profile_opens_the_bundled_sample_with_its_alp_and_guides(sample_c) -> None:
    args = build_parser().parse_args(["open"])
    request = request_of(args)
    sample = sample_c
    assert request.inputs.profile == Path(sample.profile)
    assert request.inputs.alp == Path(sample.alp)
    assert request.inputs.guides == tuple(Path(g) for g in sample.guides)
    assert request.inputs.guides
    assert request.model == "offline"


def test_pcscope_without_a_command_runs_open() -> None:
    from pcscope.cli.main import default_command

    assert default_command() == ["open"]


def test_missing_profile_is_one_line_and_exit_2(tmp_path, capsys) -> None:
    missing = tmp_path / "nope.csv"
    assert main(["open", str(missing), "--index-dir", str(tmp_path / "idx")]) == 2
    err = capsys.readouterr().err
    assert err == f"pcscope: error: {missing}: no such file\n"


async def test_bad_profile_leaves_with_its_file_and_line(tmp_path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("pc,samples,asm\n0x10,5,NOP\nzzz,1,NOP\n", encoding="utf-8")
    app = PcscopeApp(OpenRequest(Inputs(bad), index_dir=tmp_path / "idx",
                                 session=tmp_path / "s.sqlite"), TuiConfig(path=None))
    async with app.run_test() as pilot:
        for _ in range(500):
            if app.error is not None:
                break
            await pilot.pause(0.02)
    assert app.return_code == 2
    assert isinstance(app.error, InputError)
    assert (app.error.path, app.error.line) == (str(bad), 3)


async def test_indexing_shows_progress_and_escape_cancels(tmp_path, monkeypatch) -> None:
    """A slow build reports its steps; Escape makes the next progress call raise, so the
    builder stops (and cleans up) and the explorer leaves."""
    inputs = write_inputs(tmp_path / "in")
    raised = threading.Event()

    def slow_open(store, inputs, *, progress, **_):
        import time

        for step in range(200):
            try:
                progress(f"step {step}")
            except IndexingCancelled:
                raised.set()
                raise
            time.sleep(0.02)
        raise AssertionError("the build was never cancelled")

    monkeypatch.setattr("pcscope.index.store.IndexStore.open", slow_open)
    app = PcscopeApp(OpenRequest(Inputs(inputs.profile), index_dir=tmp_path / "idx",
                                 session=tmp_path / "s.sqlite"), TuiConfig(path=None))
    async with app.run_test() as pilot:
        screen = app.screen
        assert isinstance(screen, IndexingScreen)
        for _ in range(200):
            if screen._steps:
                break
            await pilot.pause(0.02)
        assert screen._steps[0].startswith("step ")
        await pilot.press("escape")
        await pilot.pause(0.2)
    assert app.return_code == 130
    assert raised.wait(5), "the builder did not see the cancellation"


def test_no_color_is_honoured(monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("NO_COLOR", "1")
    app = PcscopeApp(OpenRequest(Inputs(tmp_path / "p.csv")), TuiConfig(path=None))
    assert app.no_color


async def test_palette_opens_with_a_function_key(indexed) -> None:
    from textual.command import CommandPalette

    app = indexed.app()
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        await pilot.press("f2")
        assert isinstance(app.screen, CommandPalette)


@pytest.mark.parametrize("theme", ["pcscope-dark", "pcscope-light", "pcscope-high-contrast"])
async def test_every_theme_opens(indexed, theme) -> None:
    app = indexed.app(TuiConfig(path=None, theme=theme))
    async with app.run_test(size=(80, 24)) as pilot:
        await ready(pilot)
        assert app.theme == theme
