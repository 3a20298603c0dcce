"""Keys typed in one burst (a paste, fast typing, SSH latency) do what the same keys typed
slowly do: the text after a key that opens a field reaches the field, and the keys after the
Enter or Escape that closes it reach the list the focus went back to.

Every test posts its whole burst before the first key is handled (``tui_support.burst``)."""

from __future__ import annotations

import pytest
from tui_support import build_index, burst, fresh_session, ready, until

WIDE = (160, 48)


@pytest.fixture(scope="module")
def shared(tmp_path_factory):
    return build_index(tmp_path_factory.mktemp("bursts"))


@pytest.fixture
def indexed(shared, tmp_path):
    return fresh_session(shared, tmp_path)


async def test_filter_typed_with_f(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert screen.hot.has_focus
        burst(app, "f", *"runtime", "enter")
        await pilot.pause()
        assert screen.hot.model.view.text == "runtime"
        assert not screen.command.asking and screen.hot.has_focus


async def test_note_typed_with_i(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("A")
        await until(pilot, lambda: screen.analysis.run.done and not screen.analysis.running,
                    "the analysis to finish")
        await pilot.press("4")
        ideas = screen.findings.ideas
        assert ideas.has_focus and ideas.idea is not None
        burst(app, "i", *"check the BTB", "enter")
        await pilot.pause()
        assert ideas.verdict_of(ideas.idea.id).note == "check the BTB"
        assert not screen.command.asking and ideas.has_focus


async def test_guide_search_typed_with_its_slash(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("7")
        listing = screen.guide.sections_list
        assert listing.has_focus
        burst(app, "/", *"contention", "enter")
        await until(pilot, lambda: listing.matches, "guide hits")
        assert screen.guide.query == "contention"
        assert not screen.command.asking and listing.has_focus


async def test_escape_gives_the_keys_after_it_back_to_the_list(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, ":", *"0x20", "escape", "j", "j")
        await pilot.pause()
        assert not screen.command.asking and screen.hot.has_focus
        assert screen.command.input.value == "0x20"  # j was not typed into the closed field
        assert screen.hot.cursor == 2


async def test_enter_gives_the_keys_after_it_to_the_new_focus(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, ":", *"0x2004", "enter", "k")
        await pilot.pause()
        assert not screen.command.asking and screen.asm.has_focus
        assert screen.command.input.value == "0x2004"
        assert screen.asm.pc == 0x2000  # k moved up from the PC the prompt went to


async def test_pane_key_gives_the_keys_after_it_to_the_pane(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        pc = screen.asm.pc
        burst(app, "2", "j")
        await pilot.pause()
        assert screen.asm.has_focus and screen.hot.cursor == 0
        assert screen.asm.pc != pc  # j moved the assembly, not the hot list


async def test_enter_in_the_query_gives_the_keys_after_it_to_the_hits(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, "/", *"ldr", "enter", "j")
        await pilot.pause()
        assert screen.search.input.value == "ldr" and screen.search.query_text == "ldr"
        assert screen.search.results.has_focus


async def test_escape_in_the_query_gives_the_keys_after_it_to_the_hits(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, "/", *"ldr", "escape", "j")
        await pilot.pause()
        assert screen.search.input.value == "ldr" and screen.search.results.has_focus


async def test_down_in_the_query_gives_the_keys_after_it_to_the_hits(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash", *"ldr", "enter")
        await until(pilot, lambda: screen.search.results.count == 2, "two hits")
        await pilot.press("slash")
        burst(app, "down", "j", "enter")
        await pilot.pause()
        assert screen.search.input.value == "ldr"
        assert screen.asm.pc == screen.search.results.hits[1].pc  # the second hit opened
