"""Every key binding of the explorer: an id, default keys, the action and a description.

Widgets build their ``BINDINGS`` from here, so the help screen, the command palette and
the config file's ``[keys]`` table (binding id -> keys, applied with ``App.set_keymap``)
all read the same table. Every ctrl combination has a plain-key or F-key alternative so
terminals and multiplexers that eat ctrl keys lose nothing. The focused widget answers
every key in the order typed (widgets/keys_in_order.py), so an action that moves the focus
moves it at once.
"""

from __future__ import annotations

from dataclasses import dataclass

from textual.binding import Binding


@dataclass(frozen=True)
class KeySpec:
    id: str           # "<scope>.<name>", the key of the config's [keys] table
    keys: str         # Textual key names, comma-separated
    action: str       # Textual action run in the scope's widget
    description: str
    show: bool = True  # shown in the footer

    @property
    def scope(self) -> str:
        return self.id.partition(".")[0]


# The pane names, in tab order (number keys 1..7 select them).
PANES: tuple[tuple[str, str], ...] = (
    ("hot", "Hot windows"),
    ("asm", "Assembly"),
    ("alp", "ALP"),
    ("findings", "Findings"),
    ("calls", "Calls"),
    ("search", "Search"),
    ("guide", "Guide"),
)

SCOPE_TITLES = {
    "app": "Everywhere",
    "main": "Explorer",
    "list": "Any list",
    "hot": "Hot windows",
    "functions": "Functions",
    "asm": "Assembly",
    "alp": "ALP",
    "findings": "Findings",
    "evidence": "Finding details",
    "calls": "Calls",
    "search": "Search",
    "guide": "Guide",
    "prompt": "Bottom-line prompt",
}

SPECS: tuple[KeySpec, ...] = (
    KeySpec("app.quit", "q,ctrl+q", "quit", "Quit"),
    KeySpec("app.help", "f1,question_mark", "help", "Help"),
    KeySpec("app.palette", "f2,ctrl+p", "command_palette", "Commands"),
    # Not a single letter: a theme change is saved, and a stray keystroke must not do it.
    KeySpec("app.theme", "f9", "next_theme", "Theme"),
    KeySpec("main.search", "slash", "search", "Search"),
    KeySpec("main.next_hit", "n", "step_hit(1)", "Next hit", show=False),
    KeySpec("main.prev_hit", "N", "step_hit(-1)", "Previous hit", show=False),
    KeySpec("main.goto", "colon", "goto_pc", "Go to PC"),
    KeySpec("main.analyze", "a", "analyze(False)", "Analyze selection"),
    KeySpec("main.analyze_all", "A", "analyze(True)", "Analyze all hot", show=False),
    KeySpec("main.cancel", "x,escape", "cancel", "Cancel", show=False),
    KeySpec("main.export", "e", "export", "Export report", show=False),
    KeySpec("main.export_view", "E", "export_view", "Export view", show=False),
    KeySpec("main.copy", "Y", "copy", "Copy ID", show=False),
    KeySpec("main.next_pane", "right_square_bracket", "cycle_pane(1)", "Next pane", show=False),
    KeySpec("main.prev_pane", "left_square_bracket", "cycle_pane(-1)", "Previous pane",
            show=False),
    *(
        KeySpec(f"main.pane_{name}", str(n), f"show_pane('{name}')", f"{title} pane", show=False)
        for n, (name, title) in enumerate(PANES, start=1)
    ),
    KeySpec("list.down", "j,down", "cursor(1)", "Down", show=False),
    KeySpec("list.up", "k,up", "cursor(-1)", "Up", show=False),
    KeySpec("list.page_down", "pagedown,space", "page(1)", "Page down", show=False),
    KeySpec("list.page_up", "pageup,b", "page(-1)", "Page up", show=False),
    KeySpec("list.top", "g,home", "first", "Top", show=False),
    KeySpec("list.bottom", "G,end", "last", "Bottom", show=False),
    KeySpec("hot.open", "enter,l", "open", "Open window"),
    KeySpec("hot.sort", "s", "cycle_sort", "Sort"),
    KeySpec("hot.filter", "f", "filter_text", "Filter"),
    KeySpec("hot.category", "c", "cycle_category", "Category"),
    KeySpec("hot.clear", "C", "clear_filters", "Clear filters", show=False),
    KeySpec("hot.functions", "F", "functions", "Functions"),
    KeySpec("functions.open", "enter,l", "open", "Its windows"),
    KeySpec("functions.windows", "F,escape", "windows", "Back to windows"),
    KeySpec("asm.follow", "enter,l", "follow", "Follow branch"),
    KeySpec("asm.back", "backspace,left,h", "back", "Back"),
    KeySpec("asm.forward", "right", "forward", "Forward", show=False),
    KeySpec("asm.hottest", "H", "hottest", "Hottest PC"),
    KeySpec("main.zoom", "Z", "zoom", "Zoom assembly", show=False),
    KeySpec("asm.next_hot", "tab", "cycle_hot(1)", "Next hot PC", show=False),
    KeySpec("asm.prev_hot", "shift+tab", "cycle_hot(-1)", "Previous hot PC", show=False),
    KeySpec("findings.open", "enter,l", "open_idea", "Details"),
    KeySpec("findings.accept", "y", "verdict('accepted')", "Accept"),
    KeySpec("findings.reject", "r", "verdict('rejected')", "Reject"),
    KeySpec("findings.reset", "u", "verdict('proposed')", "Undecide", show=False),
    KeySpec("findings.note", "i", "note", "Note"),
    KeySpec("findings.detail_down", "J", "scroll_detail(3)", "Scroll detail down", show=False),
    KeySpec("findings.detail_up", "K", "scroll_detail(-3)", "Scroll detail up", show=False),
    KeySpec("evidence.follow", "enter,l", "follow", "Jump to evidence"),
    KeySpec("evidence.back", "backspace,h", "back", "Back to ideas"),
    KeySpec("calls.down", "j", "cursor_down", "Down", show=False),
    KeySpec("calls.up", "k", "cursor_up", "Up", show=False),
    KeySpec("calls.page_down", "pagedown,space", "page_down", "Page down", show=False),
    KeySpec("calls.page_up", "pageup,b", "page_up", "Page up", show=False),
    KeySpec("calls.top", "g,home", "scroll_home", "Top", show=False),
    KeySpec("calls.bottom", "G,end", "scroll_end", "Bottom", show=False),
    KeySpec("search.regex", "f3,ctrl+r", "toggle_regex", "Regex on/off"),
    KeySpec("search.results", "down", "focus_results", "To results", show=False),
    KeySpec("search.cancel", "escape", "cancel", "Stop search, to results", show=False),
    KeySpec("search.open", "enter,l", "open", "Jump to hit"),
    KeySpec("guide.open", "enter,l", "open", "Read section"),
    KeySpec("guide.search", "slash", "search_guides", "Search guides"),
    KeySpec("guide.outline", "escape", "outline", "All sections", show=False),
    KeySpec("prompt.submit", "enter", "submit", "Answer", show=False),
    KeySpec("prompt.cancel", "escape", "cancel", "Cancel", show=False),
)

KEY_IDS = frozenset(spec.id for spec in SPECS)
# Keys, not commands (cursor motions, the prompt's answer), so the palette leaves them out.
MOTIONS = frozenset(
    spec.id for spec in SPECS
    if spec.scope in ("list", "prompt") or spec.id.startswith("calls.")
    or spec.id == "search.results"
)


def bindings(*scopes: str) -> list[Binding]:
    """The Textual bindings of these scopes, ids kept so ``App.set_keymap`` remaps them."""
    return [_binding(spec) for spec in SPECS if spec.scope in scopes]


def bindings_of(*ids: str) -> list[Binding]:
    """Bindings picked by id (for widgets that take part of a scope)."""
    wanted = set(ids)
    return [_binding(spec) for spec in SPECS if spec.id in wanted]


def _binding(spec: KeySpec) -> Binding:
    return Binding(spec.keys, spec.action, spec.description, show=spec.show, id=spec.id)


def specs_of(scope: str) -> list[KeySpec]:
    return [spec for spec in SPECS if spec.scope == scope]


def keys_of(spec: KeySpec, keymap: dict[str, str]) -> str:
    """The keys a binding answers to once the config's remapping is applied."""
    return keymap.get(spec.id, spec.keys)
