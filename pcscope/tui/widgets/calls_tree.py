"""The calls pane: the run's waves as a live tree, and the selected call in full.

Each call shows its status (queued, running, ok, rejected, failed, cancelled), tokens and
seconds; the detail lists exactly which IDs it was given and fetched, its tool use, the
streamed text while it runs, its raw output and why findings were rejected.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, VerticalScroll
from textual.content import Content
from textual.message import Message
from textual.widgets import Static, Tree
from textual.widgets.tree import TreeNode

from pcscope.tui import render
from pcscope.tui.keymap import bindings
from pcscope.tui.run_model import CallView, RunView
from pcscope.tui.widgets.keys_in_order import KeysInOrder
from pcscope.tui.work import surface

STATUS_MARK = {"queued": "·", "running": "▶", "ok": "✓", "rejected": "✗", "failed": "!",
               "cancelled": "∅", "skipped": "–"}
STATUS_STYLE = {"ok": "$success", "rejected": "$error", "failed": "$error",
                "running": "bold $accent", "cancelled": "$warning", "skipped": "$warning"}
# The tree draws rich Text, which knows no theme variables: its colours are looked up in
# the current theme when a label is made, and every label is remade on a theme switch.
TREE_COLOURS = {"ok": "success", "rejected": "error", "failed": "error", "running": "accent",
                "cancelled": "warning", "skipped": "warning", "muted": "pcscope-muted"}
MAX_IDS = 200  # IDs listed per group in the detail (the rest are counted)


class CallsTree(KeysInOrder, Tree[str]):
    BINDINGS = bindings("calls")

    def __init__(self) -> None:
        super().__init__("No analysis yet — press a (selection) or A (all hot windows)",
                         id="calls-tree")
        self.show_root = True
        self.guide_depth = 2
        self._waves: dict[int, TreeNode[str]] = {}
        self._calls: dict[str, TreeNode[str]] = {}
        self._gates: dict[int, TreeNode[str]] = {}  # wave -> its gatekeeper node
        self._gate_leaves: dict[tuple[int, str], TreeNode[str]] = {}
        self._run: RunView | None = None

    def on_mount(self) -> None:
        self.app.theme_changed_signal.subscribe(self, self._recolour)

    def _recolour(self, _theme) -> None:
        if self._run is not None:
            for call_id, leaf in self._calls.items():
                leaf.set_label(call_label(self._run.calls[call_id], self._colours()))

    def _colours(self) -> dict[str, str]:
        variables = self.app.theme_variables
        return {k: variables.get(v, "") for k, v in TREE_COLOURS.items()}

    def clear_run(self, title: str) -> None:
        self.clear()
        self.root.set_label(title)
        self._waves.clear()
        self._calls.clear()
        self._gates.clear()
        self._gate_leaves.clear()

    def sync(self, run: RunView) -> None:
        """Add the calls that are new and relabel the rest (called once per event batch)."""
        self._run = run
        colours = self._colours()
        for wave, ids in sorted(run.waves.items()):
            node = self._waves.get(wave)
            if node is None:
                node = self._waves[wave] = self.root.add(f"wave {wave}", data=f"wave:{wave}",
                                                         expand=True)
            for call_id in ids:
                call = run.calls[call_id]
                label = call_label(call, colours)
                leaf = self._calls.get(call_id)
                if leaf is None:
                    self._calls[call_id] = node.add_leaf(label, data=call_id)
                else:
                    leaf.set_label(label)
            done = sum(run.calls[c].status in ("ok", "rejected", "failed") for c in ids)
            skipped = sum(run.calls[c].status in ("skipped", "cancelled") for c in ids)
            tail = f", {skipped} skipped" if skipped else ""
            node.set_label(f"wave {wave}  {done}/{len(ids)} calls{tail}")
        for wave, entries in sorted(run.gate.items()):
            self._sync_gate(wave, entries)
        self.root.expand()

    def _sync_gate(self, wave: int, entries: dict) -> None:
        """The gatekeeper's work after ``wave``: merges (updated in place as ideas grow),
        rejections with reasons, questions sent deeper with the call that answers each."""
        wave_node = self._waves.get(wave)
        if wave_node is None:
            return
        gate = self._gates.get(wave)
        if gate is None:
            gate = self._gates[wave] = wave_node.add("gatekeeper", data=f"gate:{wave}",
                                                     expand=True)
        for key, entry in entries.items():
            leaf = self._gate_leaves.get((wave, key))
            if leaf is None:
                self._gate_leaves[(wave, key)] = gate.add_leaf(entry.text,
                                                               data=f"gate:{wave}:{key}")
            else:
                leaf.set_label(entry.text)
        kinds = [e.kind for e in entries.values()]
        gate.set_label(f"gatekeeper  {kinds.count('merge')} merged · "
                       f"{kinds.count('reject')} rejected · {kinds.count('question')} deeper")


def call_label(call: CallView, colours: dict[str, str]) -> Text:
    mark = STATUS_MARK.get(call.status, "?")
    tokens = f"{render.count(call.input_tokens)}/{render.count(call.output_tokens)} tok"
    tail = f"  {tokens} {call.seconds:.1f}s" if call.status not in ("queued", "running") else ""
    found = f"  +{len(call.accepted)}" if call.accepted else ""
    dropped = f" -{call.rejected}" if call.rejected else ""
    return Text.assemble(
        (f"{mark} {call.status:<9}", colours.get(call.status) or ""),
        f" {call.id}  {call.title}", (f"{found}{dropped}{tail}", colours.get("muted") or ""),
    )


def call_detail(call: CallView) -> Content:
    parts: list[Content] = [
        Content.assemble((call.id, "bold $primary"), f"  {call.title}"),
        Content.assemble(("status ", "$pcscope-muted"),
                         (call.status, STATUS_STYLE.get(call.status, "")),
                         ("  parent ", "$pcscope-muted"), call.parent or "-",
                         ("  tokens ", "$pcscope-muted"),
                         f"{call.input_tokens:,} in / {call.output_tokens:,} out",
                         ("  seconds ", "$pcscope-muted"), f"{call.seconds:.2f}"),
    ]
    if call.error:
        parts.append(Content.assemble(("error ", "bold $error"), call.error))
    parts += _ids("given", call.given)
    parts += _ids("fetched", call.fetched)
    if call.tools:
        parts.append(Content.assemble(("tool use", "bold $primary")))
        parts += [Content(f"  {line}") for line in call.tools]
    if call.accepted:
        parts += _ids("accepted findings", call.accepted)
    if call.rejections:
        parts.append(Content.assemble(("rejected", "bold $error")))
        parts += [Content(f"  {line}") for line in call.rejections]
    if call.text:
        parts.append(Content.assemble(("streamed", "bold $primary")))
        parts.append(Content(call.text))
    if call.raw:
        parts.append(Content.assemble(("raw output", "bold $primary")))
        parts.append(Content(call.raw))
    return Content("\n").join(parts)


def gate_detail(entry, idea: dict | None) -> Content:
    """A gatekeeper entry in full: what it did, why, and the evidence on both sides."""
    parts: list[Content] = [
        Content.assemble((f"gatekeeper after wave {entry.wave}", "bold $primary"),
                         f"  {entry.kind}"),
        Content.assemble(("why ", "$pcscope-muted"), entry.reason or "-"),
    ]
    if entry.kind == "merge":
        parts.append(Content.assemble(("idea ", "bold"), (entry.key, "$pcscope-link"),
                                      f"  {idea['title']}" if idea else ""))
        parts += _ids("merged findings", entry.ids)
        if idea:
            parts += _ids("evidence kept (both sides)", idea.get("evidence", []))
    else:
        parts += _ids("links", entry.ids)
    return Content("\n").join(parts)


def _ids(label: str, ids) -> list[Content]:
    ids = list(ids)
    if not ids:
        return [Content.assemble((f"{label}: none", "$pcscope-muted"))]
    shown = " ".join(ids[:MAX_IDS])
    more = f" … {len(ids) - MAX_IDS} more" if len(ids) > MAX_IDS else ""
    return [Content.assemble((f"{label} ({len(ids)})", "bold $primary")),
            Content.assemble((f"  {shown}{more}", "$pcscope-link"))]


class CallsView(Horizontal):
    """The tree on the left, the highlighted call on the right. A call's raw output is in
    the session record, not in the events: it is fetched when the call is looked at."""

    def __init__(self, fetch_record: Callable[[str], Future]) -> None:
        super().__init__(id="calls-view")
        self.fetch_record = fetch_record
        self.calls_tree = CallsTree()
        self.detail = Static(Content("Select a call to see what it was given and returned."),
                             id="call-detail")
        self.run_view: RunView | None = None
        self.selected: str | None = None
        self.gate_key: str | None = None  # "gate:<wave>:<key>" when a gate entry is shown

    def compose(self) -> ComposeResult:
        yield self.calls_tree
        with VerticalScroll(id="call-detail-scroll"):
            yield self.detail

    def start(self, run: RunView, title: str) -> None:
        self.run_view = run
        self.selected = None
        self.gate_key = None
        self.calls_tree.clear_run(title)
        self.detail.update(Content("Select a call to see what it was given and returned."))

    def sync(self, changed: set[str]) -> None:
        if self.run_view is None:
            return
        self.calls_tree.sync(self.run_view)
        if self.selected in changed or self.gate_key is not None:
            self._draw()

    @property
    def gate_entry(self):
        """The gatekeeper entry highlighted in the tree, if any."""
        if self.run_view is None or self.gate_key is None or self.gate_key.count(":") < 2:
            return None
        _, wave, key = self.gate_key.split(":", 2)
        return self.run_view.gate.get(int(wave), {}).get(key)

    def on_tree_node_highlighted(self, event: Tree.NodeHighlighted) -> None:
        event.stop()
        data = event.node.data
        self.selected = data if self.run_view and data in self.run_view.calls else None
        self.gate_key = data if isinstance(data, str) and data.startswith("gate:") else None
        self._draw()
        call = self.run_view.calls.get(self.selected) if self.run_view and self.selected else None
        if call is not None and call.raw is None and call.status not in ("queued", "running"):
            call.raw = ""  # asked once
            fetching = self.fetch_record(call.id)
            surface(self, fetching, name="load the call's record", group="session")
            fetching.add_done_callback(
                lambda done: self.post_message(self.RecordLoaded(call, done)))  # any thread

    class RecordLoaded(Message):
        def __init__(self, call: CallView, done: Future) -> None:
            super().__init__()
            self.call = call
            self.done = done

    def on_calls_view_record_loaded(self, event: RecordLoaded) -> None:
        event.stop()
        record = event.done.result() if event.done.exception() is None else None
        # Call IDs repeat from run to run: a record asked for by an earlier run's call
        # must not be drawn into this run's call of the same name.
        current = self.run_view.calls.get(event.call.id) if self.run_view else None
        if record is not None and current is event.call:
            event.call.raw = record.raw
            event.call.fetched = list(record.fetched)
            if self.selected == event.call.id:
                self._draw()

    def _draw(self) -> None:
        if self.run_view is not None and self.selected in self.run_view.calls:
            self.detail.update(call_detail(self.run_view.calls[self.selected]))
        elif self.run_view is not None and self.gate_entry is not None:
            entry = self.gate_entry
            self.detail.update(gate_detail(entry, self.run_view.ideas.get(entry.key)))
