"""F1 / ?: the keys, starting with the focused pane's, as remapped by the config."""

from __future__ import annotations

from collections.abc import Mapping

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.content import Content
from textual.screen import ModalScreen
from textual.widgets import Static

from pcscope.tui.keymap import SCOPE_TITLES, keys_of, specs_of

# The scopes that apply inside each pane, most specific first.
PANE_SCOPES: dict[str, tuple[str, ...]] = {
    "hot": ("hot", "list"),
    "asm": ("asm", "list"),
    "alp": (),
    "findings": ("findings", "evidence", "list"),
    "calls": ("calls",),
    "search": ("search", "list"),
    "guide": ("guide", "list"),
}

PANE_ABOUT: dict[str, str] = {
    "hot": "Every instruction window, hottest first. ● marks the hot selection that A "
           "analyzes. Badges: pattern categories; A = ALP evidence, M = a branch "
           "mispredicts, $ = a memory op misses.",
    "asm": "The window around the selected PC. → marks a branch or call Enter can follow; "
           "Backspace goes back. Bars show each instruction's samples against the window's "
           "hottest. ALP badges: mp = mispredict rate, l1 = L1D miss rate, A = other "
           "ALP evidence.",
    "alp": "The simulator's evidence for the selected PC: pipeline stages as a timeline, "
           "branch and memory figures, and the per-loop records they aggregate.",
    "findings": "Ideas from the analysis, best first. Enter shows the claim, the "
                "recommendation and the evidence; Enter on an evidence ID jumps to it. "
                "Verdicts and notes are kept per profile.",
    "calls": "The analysis's waves and calls as they run: given and fetched IDs, tool use, "
             "raw output and why findings were rejected.",
    "search": "Tantivy query syntax (mnemonic:ldaxr, function:memcpy, asm:\"x3\"); F3 "
              "switches to a regular expression over the disassembly. n / N step through "
              "the hits in the assembly pane.",
    "guide": "Sections of the uArch and optimization guides, by evidence ID.",
}


class HelpScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,f1,question_mark", "dismiss", "Close", id="help.close")]

    def __init__(self, pane: str | None, keymap: Mapping[str, str]) -> None:
        super().__init__(classes="help-screen")
        self.pane = pane
        self.keymap = dict(keymap)

    def compose(self) -> ComposeResult:
        with VerticalScroll(classes="help"):
            yield Static(self.content(), id="help-text")

    def content(self) -> Content:
        scopes = [*PANE_SCOPES.get(self.pane or "", ()), "main", "app"]
        parts: list[Content] = []
        if self.pane in PANE_ABOUT:
            parts.append(Content.assemble((PANE_ABOUT[self.pane], "italic"), "\n"))
        for scope in dict.fromkeys(scopes):
            specs = specs_of(scope)
            if not specs:
                continue
            parts.append(Content.assemble((SCOPE_TITLES[scope], "bold $primary")))
            for spec in specs:
                keys = ", ".join(_pretty(k) for k in keys_of(spec, self.keymap).split(","))
                parts.append(Content.assemble(
                    (f"  {keys:<22}", "bold $accent"), f" {spec.description:<24}",
                    (spec.id, "$pcscope-muted")))
            parts.append(Content(""))
        parts.append(Content.assemble(
            ("Remap any key in the config file's [keys] table by the id shown "
             "(see README: Terminal explorer).", "$pcscope-muted")))
        return Content("\n").join(parts)


_NAMES = {"question_mark": "?", "slash": "/", "colon": ":", "left_square_bracket": "[",
          "right_square_bracket": "]", "space": "space"}


def _pretty(key: str) -> str:
    key = key.strip()
    return _NAMES.get(key, key)
