"""The explorer: seven panes on one screen, wired together.

Wide terminals show hot windows, assembly and ALP side by side over one of findings,
calls, search or guide; small ones (80×24) show one pane at a time as tabs. The screen
owns the flows between panes (open a window, follow evidence, step search hits) and the
per-profile state; the panes own their drawing, the engine owns every analysis.
"""

from __future__ import annotations

import gc
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.containers import Container, Horizontal
from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Static
from textual.worker import Worker, WorkerState

from pcscope.core.errors import EvidenceError
from pcscope.core.evidence import EvidenceStore
from pcscope.core.guide_map import sections_for
from pcscope.core.ids import hex_pc, kind_of, pc_of
from pcscope.core.locate import locate
from pcscope.tui import render
from pcscope.tui.analysis import AnalysisController, RunChanged, preload_engine
from pcscope.tui.config import TuiConfig
from pcscope.tui.export import export_report, export_view
from pcscope.tui.hot_model import HotModel, HotView, compute_badges
from pcscope.tui.idea_view import ShownIdea
from pcscope.tui.keymap import MOTIONS, PANES, KeySpec, bindings
from pcscope.tui.launch import OpenRequest, Prepared
from pcscope.tui.session import Restored, RunKey, ViewState, run_key
from pcscope.tui.widgets.alp_view import AlpView
from pcscope.tui.widgets.assembly import AssemblyView
from pcscope.tui.widgets.calls_tree import CallsView
from pcscope.tui.widgets.command_line import CommandLine
from pcscope.tui.widgets.findings import EvidenceList, FindingsView, IdeasList
from pcscope.tui.widgets.functions import FunctionList
from pcscope.tui.widgets.guide_view import GuideView
from pcscope.tui.widgets.hot_windows import HotWindowsList
from pcscope.tui.widgets.key_bar import KeyBar
from pcscope.tui.widgets.pane import Pane
from pcscope.tui.widgets.pane_bar import PaneBar
from pcscope.tui.widgets.search import SearchView
from pcscope.tui.widgets.virtual_list import VirtualList
from pcscope.tui.work import in_thread, surface

TOP = ("hot", "asm", "alp")
BOTTOM = ("findings", "calls", "search", "guide")
TITLES = dict(PANES)
# The widget each pane focuses when shown.
FOCUS = {"hot": "#hot-list", "asm": "#asm-view", "alp": "#alp-view", "findings": "#ideas-list",
         "calls": "#calls-tree", "search": "#search-input", "guide": "#guide-sections"}
# Auto layout: below this size the panes collapse into tabs.
WIDE_MIN = (110, 30)
IDLE_STATUS = " no analysis yet · a analyzes the selection · A all hot windows · F1 help"
SAVE_EVERY = 1.0  # seconds between view-state saves (only when it changed)
RUN_CHECK_EVERY = 2.0  # seconds between looks for a run recorded by another process


class MainScreen(Screen):
    BINDINGS = bindings("main")
    AUTO_FOCUS = None  # the restored pane takes the focus
    # Textual repaints the whole screen when the focus moves (for `:focus-within` rules);
    # here nothing is styled that way, and the widgets that gain or lose the focus redraw
    # themselves, so a pane switch costs only what changes.
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)

    def __init__(self, prepared: Prepared, request: OpenRequest, config: TuiConfig) -> None:
        super().__init__(classes="main-screen")
        workload = prepared.workload
        self.workload = workload
        self.request = request
        self.config = config
        self.settings = prepared.settings
        self.session = prepared.session
        self.restored = prepared.restored
        self.store = EvidenceStore(workload)
        self.selection = workload.hot(top=self.settings.top, coverage=self.settings.coverage)
        self.active = "hot"
        self.lower = "findings"
        self.tabs = False  # one pane at a time (set by the terminal size or the config)
        self.hits: list[int] = []
        self.hit_index = -1
        self._guide_pc: int | None = None  # the PC whose guide section was last opened
        self.hot = HotWindowsList(HotModel(workload.profile, self.selection.windows),
                                  id="hot-list")
        self.functions = FunctionList(workload.profile)
        self.functions.display = False  # F in the hot pane swaps it in for the windows
        self.asm = AssemblyView(workload, id="asm-view")
        self.asm_header = Static("", id="asm-header")
        self.zoomed = False  # the assembly takes the whole width (Z), as perf annotate
        self.alp = AlpView(id="alp-view")
        self.findings = FindingsView(self.store)
        self.calls = CallsView(self.session.call_of)
        self.search = SearchView(workload)
        self.guide = GuideView(lambda: workload.guides)
        self.analysis = AnalysisController(self)
        self.command = CommandLine(IDLE_STATUS)
        self._run_seen: RunKey | None = run_key(self.restored.run) if self.restored.run else None
        self._own_runs: set[int] = set()  # runs this explorer made (shown live already)
        self._run_check: Worker | None = None

    # -- building ------------------------------------------------------------------------
    def compose(self) -> ComposeResult:
        # The layout class goes on before the children exist: set later, it would restyle
        # every widget of the screen once more before the first frame.
        self._set_mode(self.app.size.width, self.app.size.height)
        yield Static(self._title(), id="title")
        yield PaneBar()
        with Horizontal(id="top"):
            yield Pane("hot", TITLES["hot"], self.hot, self.functions)
            yield Pane("asm", TITLES["asm"], self.asm_header, self.asm)
            yield Pane("alp", TITLES["alp"], self.alp)
        first = self._first_pane()
        with Container(id="bottom"):
            yield Pane("findings", TITLES["findings"], self.findings)
            yield Pane("calls", TITLES["calls"], self.calls, held=first != "calls")
            yield Pane("search", TITLES["search"], self.search, held=first != "search")
            yield Pane("guide", TITLES["guide"], self.guide, held=first != "guide")
        yield self.command
        yield KeyBar()

    def _title(self) -> str:
        p = self.workload.profile
        return (f" pcscope · {self.request.inputs.profile.name} · {len(p):,} instructions · "
                f"{len(p.windows):,} windows · {p.basis} · hot selection "
                f"{len(self.selection.windows):,} windows ({self.selection.coverage:.0%}) · "
                f"model {self.request.model}")

    def _first_pane(self) -> str:
        pane = self.restored.view.pane
        return pane if pane in FOCUS else "hot"

    def on_mount(self) -> None:
        self._restore(self.restored)
        self._apply_layout()
        # After the first frame: decoding the ALP holds the GIL while it runs.
        self.call_after_refresh(self.load_evidence)
        self.call_after_refresh(self._fill_panes)
        self.set_interval(SAVE_EVERY, self._save_view)
        self.set_interval(RUN_CHECK_EVERY, self._check_runs)

    def _fill_panes(self) -> None:
        for name in BOTTOM:
            self._fill(name)

    def _fill(self, name: str) -> None:
        """Mount a pane's held-back content; the search restored from the session runs
        once its pane is there."""
        if self.query_one(f"#pane-{name}", Pane).fill() and name == "search":
            self.search.restore(self.restored.view.query, self.restored.view.regex)

    def load_evidence(self) -> None:
        """The ALP table and the per-window badges load off the UI thread."""
        workload = self.workload

        def work():
            alp = workload.alp
            badges = compute_badges(workload.profile, workload.patterns, alp)
            preload_engine()
            return alp, badges

        in_thread(self, work, name="load ALP and badges", group="evidence")

    def on_worker_state_changed(self, event: Worker.StateChanged) -> None:
        worker = event.worker
        if worker.group == "evidence" and event.state == WorkerState.SUCCESS:
            alp, badges = worker.result
            # The workload's long-lived lists (names, ALP texts: ~10^6 references) would
            # make every full collection walk them — 150 ms pauses mid-keystroke. They
            # live as long as the explorer, so the collector may ignore them for good.
            gc.freeze()
            self.asm.set_alp(alp)
            self.alp.set_alp(alp)
            self.hot.set_badges(badges)
            category = self.restored.view.category
            if category in badges.categories:  # a category filter waits for the badges
                view = self.hot.model.view
                self.hot.apply(replace(view, category=category))
            self._retitle()
        elif worker.group == "analysis" and worker.is_finished:
            own = worker.result.run if worker.result is not None else self.analysis.run.run
            if own is not None:
                self._own_runs.add(own)
        elif worker.group == "runs" and event.state == WorkerState.SUCCESS and worker.result:
            self._show_new_run(worker.result)

    # -- runs recorded elsewhere ---------------------------------------------------------
    def _check_runs(self) -> None:
        """A cheap look (one query, off the UI thread) for a run another process recorded:
        an agent through `pcscope mcp`, or `pcscope analyze`, on the same profile."""
        checking = self._run_check is not None and not self._run_check.is_finished
        if self.analysis.running or checking:
            return
        seen = self._run_seen
        self._run_check = in_thread(self, lambda: self.session.newer_run(seen),
                                    name="check runs", group="runs")

    def _show_new_run(self, found: Restored) -> None:
        info = found.run
        self._run_seen = run_key(info)
        if info.id in self._own_runs or self.analysis.running:
            return
        self.analysis.show_recorded(info, found.ideas, found.calls)
        self.notify(f"run r{info.id} recorded by {info.model}: {len(found.ideas)} ideas",
                    title="new run", timeout=6)

    # -- layout --------------------------------------------------------------------------
    def on_resize(self, event: events.Resize) -> None:
        self._choose_layout(event.size.width, event.size.height)

    def _choose_layout(self, width: int, height: int) -> None:
        self._set_mode(width, height)
        self._apply_layout()

    def _set_mode(self, width: int, height: int) -> None:
        """Tabs (one pane at a time) or wide, by the config or the terminal's size."""
        if self.config.layout == "auto":
            self.tabs = width < WIDE_MIN[0] or height < WIDE_MIN[1]
        else:
            self.tabs = self.config.layout == "tabs"
        if not self.has_class("-tabs" if self.tabs else "-wide"):
            self.set_class(self.tabs, "-tabs")
            self.set_class(not self.tabs, "-wide")

    def _apply_layout(self) -> None:
        self.set_class(self.zoomed and not self.tabs, "-zoom")
        for name, _title in PANES:
            pane = self.query_one(f"#pane-{name}", Pane)
            if self.tabs:
                pane.display = name == self.active
            elif self.zoomed and name in TOP:
                pane.display = name == "asm"
            else:
                pane.display = name in TOP or name == self.lower
            if pane.display:
                self._fill(name)
        top = self.query_one("#top")
        bottom = self.query_one("#bottom")
        top.display = not self.tabs or self.active in TOP
        bottom.display = not self.tabs or self.active in BOTTOM
        self.query_one(PaneBar).set_active(self.active)

    def _activate(self, name: str) -> None:
        """Make ``name`` the active pane: tab bar, border highlight, lower-area choice."""
        if name != self.active:
            self.query_one(f"#pane-{self.active}", Pane).set_active(False)
        self.active = name
        self.query_one(f"#pane-{name}", Pane).set_active(True)
        if name in BOTTOM:
            self.lower = name
        self.query_one(PaneBar).set_active(name)

    def action_show_pane(self, name: str) -> None:
        self._show_pane(name)
        if name == "search" and self.search.results.count:
            self._focus(self.search.results)  # back to the hits; / goes to the query
        elif name == "hot" and self.functions.display:
            self._focus(self.functions)
        else:
            self._focus(self.query_one(FOCUS[name]))

    def _focus(self, widget: Widget) -> None:
        """Now, not queued behind the keys already waiting (as Widget.focus is): a key
        typed after the pane key in the same burst is answered by the pane's widget. A
        widget its pane mounted just now takes the focus once it is mounted."""
        if widget.is_mounted:
            self.set_focus(widget)
        else:
            widget.focus()

    def _show_pane(self, name: str) -> None:
        self._activate(name)
        self._apply_layout()
        if name == "guide":
            self._guide_for_pc()

    def action_zoom(self) -> None:
        """The assembly alone across the top (wide layout); again to bring the panes back."""
        self.zoomed = not self.zoomed
        if self.zoomed and self.active != "asm":
            self.action_show_pane("asm")
        else:
            self._apply_layout()

    def action_cycle_pane(self, step: int) -> None:
        names = [n for n, _ in PANES]
        self.action_show_pane(names[(names.index(self.active) + step) % len(names)])

    def on_descendant_focus(self, event: events.DescendantFocus) -> None:
        pane = _pane_of(event.widget)
        if pane is not None and pane != self.active:
            self._activate(pane)

    @property
    def focused_pane(self) -> str:
        return self.active

    def palette_action(self, spec: KeySpec) -> Callable[[], Awaitable[None]] | None:
        """How the command palette runs a binding: on the app, this screen, or the widget
        of its pane (focused first). Plain cursor motions are left out."""
        targets = {"app": self.app, "main": self, "hot": self.hot, "asm": self.asm,
                   "functions": self.functions,
                   "findings": self.findings.ideas, "evidence": self.findings.evidence,
                   "calls": self.calls.calls_tree, "search": self.search.input,
                   "guide": self.guide.sections_list}
        target = targets.get(spec.scope)
        if target is None or spec.id in MOTIONS:
            return None

        async def run() -> None:
            if isinstance(target, Widget):
                pane = _pane_of(target)
                if pane is not None:
                    self.action_show_pane(pane)
                self._focus(target)  # now: an action moving the focus on has the last word
            await target.run_action(spec.action)

        return run

    # -- hot windows -> assembly -> ALP --------------------------------------------------
    def on_hot_windows_list_window_chosen(self, event: HotWindowsList.WindowChosen) -> None:
        self.asm.show_window(event.window)
        self._follow_asm()
        self.action_show_pane("asm")

    # -- functions (perf report's first level) -------------------------------------------
    def on_hot_windows_list_functions_requested(self, event) -> None:
        self._show_functions(True)

    def on_function_list_back(self, event: FunctionList.Back) -> None:
        self._show_functions(False)

    def on_function_list_function_chosen(self, event: FunctionList.FunctionChosen) -> None:
        self.hot.apply(HotView(self.hot.model.view.sort, function=event.name))
        self._show_functions(False)

    def _show_functions(self, shown: bool) -> None:
        self.functions.display = shown
        self.hot.display = not shown
        self._focus(self.functions if shown else self.hot)
        self.query_one("#pane-hot", Pane).set_status(
            self.functions.describe() if shown else self.hot.describe())

    def on_hot_windows_list_view_changed(self, event: HotWindowsList.ViewChanged) -> None:
        self._retitle()

    def on_virtual_list_highlighted(self, event: VirtualList.Highlighted) -> None:
        if event.source is self.hot:
            self.query_one("#pane-hot", Pane).set_status(self.hot.describe())
        elif event.source is self.functions:
            self.query_one("#pane-hot", Pane).set_status(self.functions.describe())

    def on_assembly_view_pc_changed(self, event: AssemblyView.PcChanged) -> None:
        self._follow_asm()

    def _follow_asm(self) -> None:
        """The ALP pane and the hot list follow the assembly's PC. Called directly after
        a jump too, so one frame shows the whole result (the message would come a frame
        later); the message's own call then finds nothing changed."""
        if self.asm.pc is not None:
            self.alp.show_pc(self.asm.pc)
        if self.asm.window is not None:
            self.hot.show_window(self.asm.window)
        self._retitle()

    def _retitle(self) -> None:
        hot = self.functions if self.functions.display else self.hot
        self.query_one("#pane-hot", Pane).set_status(hot.describe())
        self.query_one("#pane-asm", Pane).set_status(self.asm.describe())
        self.asm_header.update(self.asm.header())
        if self.alp.pc is not None:
            self.query_one("#pane-alp", Pane).set_status(hex_pc(self.alp.pc))

    def action_goto_pc(self) -> None:
        profile = self.workload.profile

        def check(text: str) -> str | None:
            try:
                pc = locate(profile, text)
            except ValueError as exc:
                return str(exc)
            return None if profile.row_of(pc) is not None else (
                f"{hex_pc(pc)} is not in the profile")

        def done(text: str | None) -> None:
            if text:
                self.show_pc(locate(profile, text))

        self.command.ask("go to PC (0x…, hex, symbol, symbol+0xoff)", done, check=check)

    def show_pc(self, pc: int, pane: str = "asm") -> bool:
        if not self.asm.show_pc(pc):
            self.notify(f"{hex_pc(pc)} is not in the profile", severity="warning")
            return False
        self._follow_asm()
        self.action_show_pane(pane)
        return True

    # -- evidence links ------------------------------------------------------------------
    def on_evidence_list_chosen(self, event: EvidenceList.Chosen) -> None:
        self.jump(event.evidence_id)

    def jump(self, evidence_id: str) -> None:
        """Open what an evidence ID names: its PC, window, ALP record or guide section."""
        try:
            kind = kind_of(evidence_id)
            if kind == "guide":
                self._fill("guide")
                if not self.guide.show(evidence_id):
                    raise EvidenceError(f"no guide section {evidence_id}")
                self._guide_pc = self.asm.pc  # the link chose the section, not the PC
                self.action_show_pane("guide")
                return
            if kind == "fn":
                fn = self.store.function_by_id(evidence_id)
                if fn is None:
                    raise EvidenceError(f"evidence id does not resolve: {evidence_id}")
                self.show_pc(fn.first_pc)
                return
            pc = int(evidence_id.rsplit(":", 1)[1], 16) if kind == "mech" \
                else pc_of(evidence_id)  # a mechanism opens at its anchor PC
            if pc is not None:
                if kind == "win":
                    self.hot.show_window(int(self.workload.profile.window[
                        self.workload.profile.row_of(pc)]))
                self.show_pc(pc, pane="alp" if kind == "alp" else "asm")
                return
            evidence = self.store.resolve(evidence_id)
            self.notify(evidence.text, title=evidence.title, timeout=10)
        except (EvidenceError, ValueError, TypeError) as exc:
            self.notify(str(exc), severity="warning")

    # -- guides --------------------------------------------------------------------------
    def on_guide_view_searched(self, event: GuideView.Searched) -> None:
        self.query_one("#pane-guide", Pane).set_status(event.summary)

    def _guide_for_pc(self) -> None:
        """Showing the guide opens the section behind the current PC's pattern, once per
        PC: the reading stays where the engineer took it until the PC changes."""
        pc = self.asm.pc
        if pc is None or pc == self._guide_pc:
            return
        self._guide_pc = pc
        for hit in self.workload.patterns.at(pc):
            if any(self.guide.show(section) for section in sections_for(hit.category)[:2]):
                return

    # -- search --------------------------------------------------------------------------
    def action_search(self) -> None:
        self._show_pane("search")
        # The focus moves now, not after the keys already waiting (Widget.focus would
        # queue it behind them): the keys typed after / in the same burst are the query.
        self.set_focus(self.search.input)

    def on_search_view_results(self, event: SearchView.Results) -> None:
        self.hits = [hit.pc for hit in event.hits]
        self.hit_index = -1
        self.asm.set_marked(set(self.hits))
        self.query_one("#pane-search", Pane).set_status(event.summary)
        self.query_one(PaneBar).set_badge("search", str(len(self.hits)) if self.hits else "")

    def on_search_view_chosen(self, event: SearchView.Chosen) -> None:
        if event.pc in self.hits:
            self.hit_index = self.hits.index(event.pc)
        self.show_pc(event.pc)

    def action_step_hit(self, step: int) -> None:
        if not self.hits:
            self.notify("no search hits — press / to search", severity="warning")
            return
        self.hit_index = (self.hit_index + step) % len(self.hits)
        self.search.results.move_to(self.hit_index)
        if self.asm.show_pc(self.hits[self.hit_index]):
            self._follow_asm()
            if self.tabs:  # wide: the focus stays where n was pressed
                self.action_show_pane("asm")
        self.notify(f"hit {self.hit_index + 1} of {len(self.hits)}", timeout=2)

    # -- findings ------------------------------------------------------------------------
    def on_ideas_list_verdict_changed(self, event: IdeasList.VerdictChanged) -> None:
        surface(self, self.session.save_verdict(event.idea, event.verdict),
                name="save verdict", group="session")

    def set_ideas(self, ideas: Sequence[Mapping[str, Any]]) -> None:
        """Report-form ideas (engine events, its result, the session store) become typed
        here, where they enter the UI."""
        self.findings.ideas.set_ideas([ShownIdea.from_json(idea) for idea in ideas])
        self.query_one(PaneBar).set_badge("findings", str(len(ideas)) if ideas else "")
        self.query_one("#pane-findings", Pane).set_status(render.plural(len(ideas), "idea"))

    # -- analysis ------------------------------------------------------------------------
    def action_analyze(self, everything: bool) -> None:
        if everything:
            self.analysis.start_hot()
        elif self.active == "hot" and self.hot.window is not None:
            self.analysis.start_windows([self.hot.window])
        elif self.asm.pc is not None:
            self.analysis.start_pc(self.asm.pc)
        else:
            self.notify("select a window or a PC first", severity="warning")

    def action_cancel(self) -> None:
        if self.analysis.running:
            self.analysis.cancel()
        elif self.search.busy:
            self.search.cancel()
        elif self.active == "search" and self.focused is self.search.input:
            self._focus(self.search.results)

    def action_export(self) -> None:
        export_report(self)

    def action_export_view(self) -> None:
        export_view(self)

    # -- copy ----------------------------------------------------------------------------
    def action_copy(self) -> None:
        """The current PC, ID or line to the terminal's clipboard (OSC 52: works over SSH,
        and in tmux with `set -g set-clipboard on`)."""
        text = self.copy_text()
        if not text:
            self.notify("nothing to copy here", severity="warning")
            return
        self.app.copy_to_clipboard(text)
        self.notify(f"copied: {text}", timeout=3)

    def copy_text(self) -> str | None:
        """What Y copies in the active pane: an ID, with the line it names."""
        profile = self.workload.profile
        if self.active == "hot" and self.hot.window is not None:
            win = profile.windows[self.hot.window]
            name = profile.function_names[win.function] if win.function >= 0 else ""
            return f"{win.id} {name}".strip()
        if self.active in ("asm", "alp") and self.asm.pc is not None:
            row = profile.row_of(self.asm.pc)
            prefix = "alp" if self.active == "alp" else "pc"
            asm = profile.asm(row) if row is not None else ""
            return f"{prefix}:{hex_pc(self.asm.pc)} {asm}".strip()
        if self.active == "findings":
            evidence = self.findings.evidence
            if evidence.has_focus and evidence.ids:
                return evidence.ids[evidence.cursor]
            idea = self.findings.ideas.idea
            return f"{idea.id} {idea.title}" if idea else None
        if self.active == "calls":
            return self.calls.selected
        if self.active == "search" and self.search.results.hits:
            hit = self.search.results.hits[self.search.results.cursor]
            return f"pc:{hex_pc(hit.pc)} {hit.asm}"
        if self.active == "guide" and self.guide.sections:
            return self.guide.sections[self.guide.sections_list.cursor].id
        return None

    def set_run_status(self, text: str) -> None:
        self.command.status.update(text)

    def on_run_changed(self, message: RunChanged) -> None:
        """The analysis controller's picture of the run, applied to the panes at once."""
        self._fill("calls")
        if message.restart is not None:
            self.calls.start(message.run, message.restart)
        self.calls.sync(set(message.changed))
        if message.ideas is not None:
            self.set_ideas(message.ideas)
        if message.status is not None:
            self.set_run_status(message.status)
        if message.calls_badge is not None:
            self.query_one(PaneBar).set_badge("calls", message.calls_badge)

    # -- state ---------------------------------------------------------------------------
    def view_state(self) -> ViewState:
        view = self.hot.model.view
        return ViewState(pane=self.active, pc=self.asm.pc, sort=view.sort,
                         filter=view.text, category=view.category, query=self.search.query_text,
                         regex=self.search.regex)

    def _save_view(self) -> None:
        saving = self.session.save_view(self.view_state())
        if saving is not None:
            surface(self, saving, name="save view", group="session")

    def on_unmount(self) -> None:
        self.analysis.close()
        self._save_view()
        self.session.close()  # waits (briefly) for the pending writes

    def _restore(self, restored: Restored) -> None:
        state = restored.view
        self.findings.ideas.set_verdicts(restored.verdicts)
        if restored.run is not None:
            self.analysis.show_recorded(restored.run, restored.ideas, restored.calls)
        if state.sort != "weight" or state.filter:
            self.hot.apply(HotView(state.sort, state.filter, None))
        if state.pc is not None and self.asm.show_pc(state.pc, remember=False):
            self.hot.show_window(self.asm.window)
        elif len(self.hot.model):
            self.asm.show_window(self.hot.model.window_at(0))
        if self.query_one("#pane-search", Pane).filled:  # else once it is filled
            self.search.restore(state.query, state.regex)
        self.action_show_pane(state.pane if state.pane in FOCUS else "hot")
        self._retitle()


def _pane_of(widget: Widget) -> str | None:
    for node in widget.ancestors_with_self:
        if isinstance(node, Pane):
            return node.pane
    return None
