"""The pcscope explorer application: themes, keys, and the screen that opens the index."""

from __future__ import annotations

from collections.abc import Iterable

from textual.app import App, SystemCommand
from textual.screen import Screen

from pcscope.core.errors import PcscopeError
from pcscope.themes import STYLESHEET, THEMES, next_theme
from pcscope.tui.config import TuiConfig, save_theme
from pcscope.tui.keymap import SPECS, bindings
from pcscope.tui.launch import OpenRequest, Prepared
from pcscope.tui.screens.help import HelpScreen
from pcscope.tui.screens.indexing import IndexingCancelled, IndexingScreen
from pcscope.tui.screens.main import MainScreen
from pcscope.tui.work import WorkFailed, in_thread


class PcscopeApp(App[int], inherit_bindings=False):
    TITLE = "pcscope"
    BINDINGS = bindings("app")
    ENABLE_COMMAND_PALETTE = True

    def __init__(self, request: OpenRequest, config: TuiConfig,
                 prepared: Prepared | None = None) -> None:
        super().__init__()
        self.request = request
        self.config = config
        self.prepared = prepared  # already reopened: no indexing screen
        self.error: PcscopeError | None = None  # why the explorer could not open
        if not config.animations:
            self.animation_level = "none"
        for theme in THEMES.values():
            self.register_theme(theme)
        self.theme = config.theme
        self.set_keymap(dict(config.keys))

    def get_default_screen(self) -> Screen:
        """The explorer itself when the index reopened before the UI started: no empty
        default screen is mounted, styled and laid out first only to be covered by a pushed
        one before the first frame."""
        # The stylesheet is read here, not through CSS_PATH: Textual parses a CSS_PATH
        # stylesheet for its start-up theme, then once more (its parse cache cleared) when
        # the first screen's styles are added; read here, it is parsed once.
        self.stylesheet.read(STYLESHEET)
        if self.prepared is not None:
            return MainScreen(self.prepared, self.request, self.config)
        return super().get_default_screen()

    def on_mount(self) -> None:
        if self.prepared is None:  # switched for the explorer once the index is built
            self.push_screen(IndexingScreen(self.request))

    def on_indexing_screen_opened(self, event: IndexingScreen.Opened) -> None:
        self.switch_screen(MainScreen(event.prepared, self.request, self.config))

    # -- the one place background errors surface -----------------------------------------
    def on_work_failed(self, event: WorkFailed) -> None:
        error = event.error
        if isinstance(error, IndexingCancelled):
            return
        if event.group == "indexing":
            # Nothing to explore: leave, and let the CLI print the one-line error.
            self.error = error if isinstance(error, PcscopeError) else PcscopeError(
                f"{type(error).__name__}: {error}")
            self.exit(return_code=2)
            return
        what = error.one_line() if isinstance(error, PcscopeError) else (
            f"{type(error).__name__}: {error}")
        self.notify(what, title=f"{event.name} failed", severity="error", timeout=10)

    # -- actions -------------------------------------------------------------------------
    def action_next_theme(self) -> None:
        self.theme = next_theme(self.theme)
        self.config = self.config.with_theme(self.theme)
        config = self.config
        in_thread(self, lambda: save_theme(config), name="save theme", group="config")
        self.notify(f"theme {self.theme}", timeout=2)

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            return
        pane = getattr(self.screen, "focused_pane", None)
        self.push_screen(HelpScreen(pane, self.config.keys))

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        """Every action of the keymap, runnable from the palette (F2 / ctrl+p)."""
        if not isinstance(screen, MainScreen):
            yield from super().get_system_commands(screen)
            return
        for spec in SPECS:
            run = screen.palette_action(spec)
            if run is not None:
                keys = self.config.keys.get(spec.id, spec.keys)
                yield SystemCommand(spec.description, f"{spec.id} · keys {keys}", run)
