"""Pilot tests of the explorer's panes and flows, on the small fixed inputs of tui_data."""

from __future__ import annotations

from tui_support import burst, ready, screen_text, until

from pcscope.tui.config import TuiConfig, read_config
from pcscope.tui.keymap import MOTIONS, SPECS
from pcscope.tui.screens.help import HelpScreen

WIDE = (160, 48)
SMALL = (80, 24)


async def test_drill_from_hot_window_to_pc(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert screen.hot.has_focus and screen.hot.cursor == 0
        await pilot.press("j", "enter")  # the second hottest window: runtime_dispatch
        assert screen.active == "asm" and screen.asm.has_focus
        assert screen.asm.pc == 0x2004  # its hottest PC (7000 samples)
        text = screen_text(app)
        assert "alp:0x2004" in text and "mispredicted 1k (25.0%)" in text
        assert "issue wait 2.75" in text  # (5*1000 + 6*3000) / 4000 - 3
        await pilot.press("k")
        assert screen.asm.pc == 0x2000 and screen.alp.pc == 0x2000
        assert "L1D miss" in screen_text(app) and "(20.0%)" in screen_text(app)


async def test_follow_a_call_and_come_back(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("colon")
        assert screen.command.asking and screen.command.input.has_focus
        await pilot.press(*"0x100c", "enter")
        assert not screen.command.asking
        assert screen.asm.pc == 0x100C and screen.asm.has_focus
        await pilot.press("enter")  # BL 0x2000 -> runtime_dispatch
        assert screen.asm.pc == 0x2000
        assert screen.workload.profile.windows[screen.asm.window].id == "win:0x2000"
        await pilot.press("backspace")
        assert screen.asm.pc == 0x100C
        await pilot.press("right")
        assert screen.asm.pc == 0x2000
        await pilot.press("left", "k")  # back to 0x100c, then up to B.NE 0x1000
        assert screen.asm.pc == 0x1008
        await pilot.press("enter")  # a conditional branch inside the window
        assert screen.asm.pc == 0x1000
        await pilot.press("backspace")
        assert screen.asm.pc == 0x1008


async def test_target_outside_the_profile_stays_put(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert screen.show_pc(0x4004)  # B 0x9000, never sampled
        await pilot.press("enter")
        assert screen.asm.pc == 0x4004
        assert any("0x9000" in str(n.message) for n in app._notifications)


async def test_hottest_and_cycling_hot_pcs(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        screen.show_pc(0x1010)
        await pilot.press("H")
        assert screen.asm.pc == 0x1008  # 9000 samples
        await pilot.press("tab")
        assert screen.asm.pc == 0x1000  # 4000
        await pilot.press("tab")
        assert screen.asm.pc == 0x1004  # 3000
        await pilot.press("shift+tab", "shift+tab")
        assert screen.asm.pc == 0x1008
        await pilot.press("shift+tab")  # wraps to the coldest: B 0x1000 (1000)
        assert screen.asm.pc == 0x1010


async def test_goto_pc_refuses_an_unknown_pc(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        before = screen.asm.pc
        await pilot.press("colon", *"0x9999", "enter")
        assert screen.command.asking  # still asking, with the reason
        assert "0x9999 is not in the profile" in screen_text(app)
        await pilot.press("escape")
        assert not screen.command.asking and screen.asm.pc == before
        assert screen.hot.has_focus  # the focus goes back where it was


async def test_filter_sort_and_clear_hot_windows(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        total = len(screen.hot.model)
        await pilot.press("f", *"dispatch", "enter")
        assert len(screen.hot.model) == 1
        assert screen.hot.window == screen.workload.profile.window[
            screen.workload.profile.row_of(0x2000)]
        assert "1 of" in screen.query_one("#pane-hot").border_subtitle
        await pilot.press("C")
        assert len(screen.hot.model) == total
        await pilot.press("s")
        assert screen.hot.model.view.sort == "pc"


async def test_category_filter_uses_pattern_badges(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        badges = screen.hot.model.badges
        assert badges is not None and "atomic-llsc" in badges.categories
        while screen.hot.model.view.category != "atomic-llsc":
            await pilot.press("c")
        profile = screen.workload.profile
        shown = {profile.windows[screen.hot.model.window_at(i)].id
                 for i in range(len(screen.hot.model))}
        assert shown == {"win:0x3000"}  # the LDAXR/STLXR window only


async def test_theme_switch_is_live_and_kept(indexed, tmp_path) -> None:
    config_file = tmp_path / "config.toml"
    app = indexed.app(TuiConfig(path=config_file))
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        dark = screen.hot.cell_style("hot--bar").color
        await pilot.press("t")  # a stray letter changes nothing that is saved
        assert app.theme == "pcscope-dark"
        await pilot.press("f9")
        assert app.theme == "pcscope-light"
        await pilot.pause()
        assert screen.hot.cell_style("hot--bar").color != dark
        await app.workers.wait_for_complete()
    assert read_config(config_file).theme == "pcscope-light"


async def test_small_terminal_collapses_panes_into_tabs(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=SMALL) as pilot:
        screen = await ready(pilot)
        assert screen.has_class("-tabs")
        shown = [p.pane for p in screen.query(".pane") if p.display]
        assert shown == ["hot"]
        await pilot.press("2")
        assert [p.pane for p in screen.query(".pane") if p.display] == ["asm"]
        assert screen.asm.has_focus
        await pilot.press("right_square_bracket")
        assert [p.pane for p in screen.query(".pane") if p.display] == ["alp"]
        text = screen_text(app)
        assert " 3 ALP " in text.splitlines()[1]
        await pilot.resize_terminal(*WIDE)
        await pilot.pause()
        assert screen.has_class("-wide")
        shown = [p.pane for p in screen.query(".pane") if p.display]
        assert shown == ["hot", "asm", "alp", "findings"]


async def test_help_starts_with_the_focused_pane(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        await ready(pilot)
        await pilot.press("2", "f1")
        assert isinstance(app.screen, HelpScreen)
        text = screen_text(app)
        assert text.index("Follow branch") < text.index("Go to PC")
        assert "asm.follow" in text
        await pilot.press("escape", "4", "question_mark")
        text = screen_text(app)
        assert "Accept" in text and text.index("Accept") < text.index("Go to PC")


async def test_palette_offers_every_action(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        titles = {c.title for c in app.get_system_commands(screen)}
        for spec in SPECS:
            if spec.id not in MOTIONS:
                assert spec.description in titles, spec.id


async def test_remapped_key_from_config(indexed) -> None:
    app = indexed.app(TuiConfig(path=None, keys={"asm.hottest": "z"}))
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        screen.show_pc(0x1010)
        await pilot.press("H")
        assert screen.asm.pc == 0x1010  # H no longer bound
        await pilot.press("z")
        assert screen.asm.pc == 0x1008


async def test_view_is_restored_on_reopen(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        screen.show_pc(0x3008)
        await pilot.press("3")
    again = indexed.app()
    async with again.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert screen.asm.pc == 0x3008
        assert screen.active == "alp"
        await until(pilot, lambda: screen.alp.has_focus, "the ALP pane to take the focus")


async def test_search_and_step_through_hits(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash")
        assert screen.search.input.has_focus
        await pilot.press(*"mnemonic:b", "enter")
        await until(pilot, lambda: screen.hits, "search hits")
        assert screen.hits == [0x1010, 0x4004]  # B 0x1000 (1000 samples), B 0x9000 (300)
        assert screen.search.results.has_focus
        assert "2 hits" in screen.query_one("#pane-search").border_subtitle
        await pilot.press("n")
        assert screen.asm.pc == 0x1010
        await pilot.press("n")
        assert screen.asm.pc == 0x4004
        await pilot.press("N")
        assert screen.asm.pc == 0x1010
        await pilot.press("6", "j", "enter")  # the second result, from the list
        assert screen.asm.pc == 0x4004 and screen.asm.has_focus


async def test_regex_search_toggle(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash", "f3", *"^ldr", "enter")
        await until(pilot, lambda: screen.hits, "regex hits")
        assert screen.search.regex
        assert screen.hits == [0x2000, 0x1000]  # LDR X3 (5000), LDR X4 (4000); not LDAXR


async def test_typed_ahead_enter_answers_the_prompt_once(indexed) -> None:
    """Two Enters in one terminal read: the first answers the prompt, the second acts where
    the answer took the focus (the assembly follows the BL there), as if typed slowly."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, ":", *"0x100c", "enter", "enter")
        await pilot.pause()
        assert not screen.command.asking and screen.command.input.value == "0x100c"
        assert screen.asm.pc == 0x2000 and screen.asm.has_focus  # BL 0x2000 followed


async def test_keys_typed_with_the_slash_reach_the_query(indexed) -> None:
    """`/ldr` in one burst: the letters after / are the query, not commands of the hot
    list (l would open a window) they were sent to before the query box took the focus."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        assert screen.hot.has_focus
        burst(app, *"/ldr")
        await pilot.pause()
        assert screen.search.input.value == "ldr"
        assert screen.search.input.has_focus and screen.active == "search"
        burst(app, *"/x:1")  # inside the query / and : are text, not the search and goto keys
        await pilot.pause()
        assert screen.search.input.value == "ldr/x:1" and not screen.command.asking


async def test_keys_typed_with_the_colon_reach_the_prompt(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        burst(app, *":0x2004")
        await pilot.pause()
        assert screen.command.asking and screen.command.input.value == "0x2004"
        await pilot.press("enter")
        assert screen.asm.pc == 0x2004


async def test_finished_search_never_moves_the_focus(indexed) -> None:
    """F3 re-runs the query in the background: the engineer keeps typing in the query, and
    letters that would be commands elsewhere (e export, t …) stay text."""
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash", *"ldr")
        screen.search.submit("ldr")  # a search already under way when F3 re-runs it
        await pilot.press("f3")
        await app.workers.wait_for_complete()
        await pilot.pause()
        assert screen.search.input.has_focus
        await pilot.press("e", "t")
        assert screen.search.input.value == "ldret"
        assert not screen.command.asking  # e did not open the export prompt


async def test_restored_search_does_not_take_the_focus(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("slash", *"mnemonic:b", "enter")
        await until(pilot, lambda: screen.hits, "search hits")
        await pilot.press("1")
    again = indexed.app()
    async with again.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await until(pilot, lambda: screen.hits, "the restored search")
        assert screen.active == "hot" and screen.hot.has_focus


async def test_goto_takes_symbols_and_offsets(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("colon", *"runtime_dispatch+0x4", "enter")
        assert not screen.command.asking and screen.asm.pc == 0x2004
        await pilot.press("colon", *"100c", "enter")  # bare hex, as addresses are shown
        assert screen.asm.pc == 0x100C
        await pilot.press("colon", *"nosuch", "enter")
        assert screen.command.asking and "no function named 'nosuch'" in screen_text(app)


async def test_an_empty_filter_result_names_the_filter(indexed) -> None:
    from pcscope.tui.hot_model import HotView

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        screen.hot.apply(HotView("weight", "no-such-function", None))
        await pilot.pause()
        status = screen.query_one("#pane-hot").border_subtitle
        assert "0 of 124 windows: all hidden by filter 'no-such-function'" in status
        assert "C clears" in status


async def test_search_the_guides_from_the_guide_pane(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("7")
        listing = screen.guide.sections_list
        assert listing.has_focus and listing.count == 4
        await pilot.press("slash")
        assert screen.command.asking
        await pilot.press(*"contention", "enter")
        await until(pilot, lambda: listing.matches, "guide hits")
        # The leaf ranks first, then its parent (which holds the leaf's text too).
        assert listing.count == 2 and listing.has_focus  # the focus stayed in the pane
        assert "2 sections match 'contention'" in screen.query_one("#pane-guide").border_subtitle
        await pilot.press("enter")
        assert screen.guide.shown.endswith("/atomics/exclusive-pairs")
        await pilot.press("escape")  # back to every section, the one read still chosen
        assert listing.count == 4 and not listing.matches
        assert listing.shown[listing.cursor] == 3


async def test_guide_sections_render_as_markdown(indexed) -> None:
    """The pane starts with a plain summary; the first section read brings the Markdown
    view (loaded then, not with the explorer), later ones replace its text."""
    from textual.widgets import Markdown, Static

    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("7")
        guide = screen.guide
        assert guide.section_text is None
        assert "4 sections" in str(guide.query_one("#guide-empty", Static).render())
        await pilot.press("enter")
        await pilot.pause()
        first = guide.section_text
        assert isinstance(first, Markdown) and guide.shown in first.source
        assert not screen.query("#guide-empty")  # the summary made way for the section
        await pilot.press("j", "enter")
        await pilot.pause()
        assert guide.section_text is first and guide.shown in first.source
        assert first.query("MarkdownParagraph")  # rendered into blocks, not kept as text


async def test_the_guide_opens_at_the_current_pcs_pattern(indexed) -> None:
    from pcscope.samples import guides

    app = indexed.app(guides=tuple(guides()))
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        screen.show_pc(0x2004)  # BLR X3: an indirect branch
        await pilot.press("7")
        assert screen.guide.shown == "guide:uarch/branch-prediction/indirect-branches"
        await pilot.press("j", "enter")  # the engineer reads on: the PC does not pull back
        chosen = screen.guide.shown
        await pilot.press("2", "7")
        assert screen.guide.shown == chosen


async def test_assembly_names_its_columns_and_zooms(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=(120, 40)) as pilot:
        screen = await ready(pilot)
        screen.show_pc(0x3008)
        await pilot.pause()
        text = screen_text(app)
        assert "pc samples share heat asm" in " ".join(text.split())
        asm = screen.asm
        window = [screen.workload.profile.asm(int(r)) for r in asm.rows]
        assert all(line in text for line in window), "operands cut at 120 columns"
        await pilot.press("Z")
        assert screen.zoomed and not screen.query_one("#pane-hot").display
        assert screen.asm.size.width > 100
        await pilot.press("Z")
        assert screen.query_one("#pane-hot").display and screen.asm.size.width < 70


async def test_function_view_drills_down_like_perf_report(indexed) -> None:
    app = indexed.app()
    async with app.run_test(size=WIDE) as pilot:
        screen = await ready(pilot)
        await pilot.press("F")
        functions = screen.functions
        assert functions.has_focus and not screen.hot.display
        profile = screen.workload.profile
        assert profile.function_names[functions.function] == "main_loop"  # hottest total
        status = screen.query_one("#pane-hot").border_subtitle
        assert status.startswith(f"1/{len(profile.functions):,} functions")
        await pilot.press("j", "enter")  # runtime_dispatch: its windows, then assembly
        assert screen.hot.has_focus and screen.hot.model.view.function == "runtime_dispatch"
        assert len(screen.hot.model) == 1
        assert "function runtime_dispatch" in screen.query_one("#pane-hot").border_subtitle
        await pilot.press("enter")
        assert screen.asm.pc == 0x2004
        await pilot.press("1", "F", "escape")
        assert screen.hot.has_focus and screen.hot.display
        await pilot.press("C")
        assert len(screen.hot.model) == len(profile.windows)


async def test_goto_leaves_the_assembly_active_and_focused_in_tabs(indexed) -> None:
    """The prompt hands the focus back before its answer moves it on: the pane the answer
    opens is the active one (its keys, its copy), not the pane the prompt was asked from."""
    app = indexed.app()
    async with app.run_test(size=SMALL) as pilot:
        screen = await ready(pilot)
        await pilot.press("colon", *"runtime_dispatch+0x4", "enter")
        await pilot.pause()
        assert screen.active == "asm" and screen.asm.has_focus
        await pilot.press("Y")
        assert app.clipboard == "pc:0x2004 BLR X3"
