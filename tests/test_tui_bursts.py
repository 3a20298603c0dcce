"""Keys typed in one burst (a paste, fast typing, SSH latency) do what the same keys typed
slowly do: the text after a key that opens a field reaches the field, and the keys after the
Enter or Escape that closes it reach the list the focus went back to.

Every test posts its whole burst before the first key is handled (``tui_support.burst``)."""

from __future__ import annotations

import pytest
from tui_support import analyze_all, burst, ready, until

WIDE = (160, 48)


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
        await analyze_all(pilot, screen)
        await pilot.press("4")
        ideas = screen.findings.ideas
        assert ideas.has_focus and ideas.idea is not None
        first = ideas.idea.id
        burst(app, "i", *"check the BTB", "enter")
        await pilot.pause()
        assert ideas.verdict_of(first).note == "check the BTB"
        assert not screen.command.asking and ideas.has_focus
        # Keys before i in the burst act first: the note is on the idea they moved to.
        burst(app, "j", "y", "i", *"second", "enter")
        await pilot.pause()
        second = ideas.ideas[1].id
        assert ideas.cursor == 1 and ideas.verdict_of(second).verdict == "accepted"
        assert ideas.verdict_of(second).note == "second"
        assert ideas.verdict_of(first).note == "check the BTB"


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


@pytest.mark.parametrize("key", ["e", "E"])
async def test_export_path_typed_with_e(indexed, tmp_path, monkeypatch, key) -> None:
    """No run yet: e and E both export the view, to the path typed after them."""
    monkeypatch.chdir(tmp_path)
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, key, "ctrl+u", *"view.md", "enter")
        await pilot.pause()
        assert not screen.command.asking and screen.hot.has_focus
        await app.workers.wait_for_complete()
        assert (tmp_path / "view.md").read_text().startswith("# Hot windows")


async def test_keys_before_a_field_key_act_first(indexed) -> None:
    """`jj/` in one burst: the cursor moves twice, then the query box opens."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, "j", "j", "/", *"ldr")
        await pilot.pause()
        assert screen.hot.cursor == 2 and screen.search.input.value == "ldr"


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


async def test_palette_query_typed_with_its_key(indexed) -> None:
    """The command palette is a screen of its own, mounted after ctrl+p: the keys typed
    with it wait for its field."""
    from textual.command import CommandPalette
    from textual.widgets import Input

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, "ctrl+p", *"zoom")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette)
                    and app.screen.query_one(Input).value == "zoom", "the palette's query")
        burst(app, "enter")  # the one command matching: Zoom assembly
        await until(pilot, lambda: app.screen is screen, "the palette to close")
        assert screen.zoomed and screen.hot.cursor == 0


async def test_enter_and_back_in_findings_give_the_keys_after_them_to_the_new_list(
        indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        await pilot.press("4")
        ideas, evidence = screen.findings.ideas, screen.findings.evidence
        assert len(ideas.ideas) > 1 and len(evidence.ids) > 1
        burst(app, "enter", "j")
        await pilot.pause()
        assert evidence.has_focus and evidence.cursor == 1 and ideas.cursor == 0
        burst(app, "h", "j")
        await pilot.pause()
        assert ideas.has_focus and ideas.cursor == 1 and evidence.cursor == 0


async def test_a_palette_command_that_moves_the_focus_keeps_it_there(indexed) -> None:
    """A command run from the palette focuses its widget at once, before its action runs:
    an action that moves the focus on (Back to ideas, from the evidence) has the last word
    (a focus queued behind it took the evidence list back)."""
    from textual.command import CommandPalette
    from textual.widgets import Input

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await analyze_all(pilot, screen)
        ideas = screen.findings.ideas
        assert len(ideas.ideas) > 1
        burst(app, "ctrl+p", *"back to ideas")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette)
                    and app.screen.query_one(Input).value == "back to ideas",
                    "the palette's query")
        burst(app, "enter")
        await until(pilot, lambda: app.screen is screen, "the palette to close")
        await pilot.pause()
        assert ideas.has_focus
        await pilot.press("j")
        assert ideas.cursor == 1
