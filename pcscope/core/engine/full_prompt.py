"""``--strategy full-prompt``: the legacy single-pass baseline the bounded design replaces.

One call, no tools, no deeper waves, its own system text (no tool protocol): the trimmed
hot selection — every instruction of every selected window, in the compact rendering of
``evidence_text`` — and whole guide sections, under the same output schema and validation
as bounded calls.

Fit rule (stated in the prompt and in the call's seed, so reports carry it): the whole
request — system text, answer schema, instruction and evidence — must fit the model's
context window minus the answer's ``max_tokens``. Blocks are sized at 3 characters per
token (conservative for hex-heavy text). Guides may take at most 30% of the room: whole
sections in file order, stopping at the first that does not fit. The profile takes the
rest: selected windows in descending weight, each whole, stopping at the first that does
not fit (the heaviest window is cut to its first rows if it alone is too big). The built
request is then measured (``count_tokens`` when the backend has it); while it does not
fit, or fits using less than 90% of the room with evidence left out, the evidence budget
is scaled by the measured ratio and the prompt rebuilt (at most 4 times; the largest
fitting one is kept).

Evidence options: ALP records of every shown instruction (``alp=None``, the legacy
baseline's window ALP), only those of given PCs (the evidence a bounded run selected:
Table 3 of the article), or none (a workload without ALP).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Collection, Iterable
from dataclasses import dataclass, replace

from pcscope.core.engine import evidence_text
from pcscope.core.engine.calls import CallPlan, call_id
from pcscope.core.engine.orchestrator import Orchestrator
from pcscope.core.engine.system_prompt import FULL_SYSTEM
from pcscope.core.ids import alp_id, hex_pc, pat_id, pc_id
from pcscope.core.profile import HotSelection
from pcscope.core.workload import Workload

GUIDE_SHARE = 0.30
CHARS_PER_TOKEN = 3
DEFAULT_CONTEXT = 200_000
DEFAULT_MAX_TOKENS = 4096
MAX_REFITS = 4
FULL = 0.9  # a fitting prompt using this share of the room is not grown further
SAFETY = 0.98  # refits aim just under the room
RULE = ("the whole request (system text, answer schema, instruction, evidence) within the "
        "context window minus max_tokens, measured by count_tokens when available, else 3 "
        "characters per token; guides at most 30% of the room, whole sections in file "
        "order, stopping at the first that does not fit; the profile the rest, selected "
        "windows in descending weight, whole, stopping at the first that does not fit")

Measure = Callable[[str, str], Awaitable[int]]  # (system, brief) -> input tokens


@dataclass(frozen=True)
class Block:
    text: str
    ids: tuple[str, ...]

    @property
    def tokens(self) -> int:
        return size(self.text)


@dataclass(frozen=True)
class FullPrompt:
    brief: str
    given: tuple[str, ...]
    windows: int
    windows_dropped: int
    sections: int
    sections_dropped: int
    room: int  # tokens the request may take (context - max_tokens)
    measured: int  # tokens the request takes, as measured

    def seed(self) -> dict:
        return {"strategy": "full-prompt", "truncation": RULE, "room_tokens": self.room,
                "measured_tokens": self.measured, "windows": self.windows,
                "windows_dropped": self.windows_dropped, "guide_sections": self.sections,
                "guide_sections_dropped": self.sections_dropped}


def size(text: str) -> int:
    """Tokens at 3 characters per token, rounded up."""
    return -(-len(text) // CHARS_PER_TOKEN)


def build(workload: Workload, selection: HotSelection, budget: int,
          alp: Collection[int] | None = None) -> FullPrompt:
    """The evidence under the fit rule (module docstring) for ``budget`` tokens of it."""
    budget -= size(_head(workload, selection, 10**6, 10**6)) + size("<evidence>\n\n"
                                                                   "guide sections:\n"
                                                                   "</evidence>")
    guides = [guide_block(s) for s in workload.guides]
    guide_room = min(sum(b.tokens for b in guides), int(budget * GUIDE_SHARE))
    # windows render one by one: a 1M-row profile is never rendered whole
    windows = (window_block(workload, w, alp) for w in selection.windows)
    kept_windows = _prefix(windows, budget - guide_room)
    if not kept_windows and selection.windows:
        kept_windows = [_cut(window_block(workload, selection.windows[0], alp),
                             budget - guide_room)]
    used = sum(b.tokens for b in kept_windows)
    kept_guides = _prefix(guides, min(budget - used, int(budget * GUIDE_SHARE)))
    dropped_w = len(selection.windows) - len(kept_windows)
    dropped_g = len(guides) - len(kept_guides)
    parts = ["<evidence>", _head(workload, selection, dropped_w, dropped_g),
             *(b.text for b in kept_windows)]
    if kept_guides:
        parts += ["guide sections:", *(b.text for b in kept_guides)]
    parts.append("</evidence>")
    ids = [i for b in (*kept_windows, *kept_guides) for i in b.ids]
    return FullPrompt("\n".join(parts), tuple(dict.fromkeys(ids)), len(kept_windows),
                      dropped_w, len(kept_guides), dropped_g, budget, 0)


def _head(workload: Workload, selection: HotSelection, dropped_windows: int,
          dropped_sections: int) -> str:
    return (f"Hot selection: {len(selection.windows)} windows holding "
            f"{selection.coverage:.1%} of the total; {len(workload.guides)} guide sections. "
            f"Fit: {RULE}. Dropped: {dropped_windows} windows, {dropped_sections} guide "
            f"sections.")


async def fit(workload: Workload, selection: HotSelection, room: int, measure: Measure,
              alp: Collection[int] | None = None) -> FullPrompt:
    """The largest prompt whose whole request measures within ``room`` tokens."""
    overhead = await measure(FULL_SYSTEM, "")
    budget = room - overhead
    best: FullPrompt | None = None
    for _ in range(MAX_REFITS):
        prompt = build(workload, selection, budget, alp)
        prompt = replace(prompt, room=room, measured=await measure(FULL_SYSTEM, prompt.brief))
        if prompt.measured <= room:
            if best is None or prompt.measured > best.measured:
                best = prompt
            if prompt.measured >= FULL * room or not (prompt.windows_dropped
                                                      or prompt.sections_dropped):
                break
        # the estimate was off by the measured ratio: scale the evidence budget by it
        evidence = max(1, prompt.measured - overhead)
        budget = int(budget * (room - overhead) / evidence * SAFETY)
    return best if best is not None else prompt


def _prefix(blocks: Iterable[Block], room: int) -> list[Block]:
    kept, used = [], 0
    for block in blocks:
        if used + block.tokens > room:
            break
        kept.append(block)
        used += block.tokens
    return kept


def _cut(block: Block, room: int) -> Block:
    """The first lines of a block that fit (the IDs of the lines kept)."""
    kept: list[str] = []
    for line in block.text.split("\n"):
        if size("\n".join([*kept, line])) > room:
            break
        kept.append(line)
    text = "\n".join(kept)
    return Block(text, tuple(i for i in block.ids if i in text))


def window_block(workload: Workload, w: int, alp: Collection[int] | None = None) -> Block:
    """Every instruction of window ``w``: share, pattern hits and (``alp`` PCs', or all)
    ALP figures."""
    profile = workload.profile
    table = workload.alp
    win = profile.windows[w]
    fn = profile.functions[win.function] if win.function >= 0 else None
    module = profile.modules[win.module] if win.module >= 0 else ""

    def record(pc: int):
        return table.get(pc) if table is not None and (alp is None or pc in alp) else None

    rows = [int(r) for r in profile.window_rows(w)]
    items = evidence_text.items_of(workload, rows, record)
    ids = [win.id] + ([fn.id] if fn else [])
    for item in items:
        ids += [pc_id(item.pc), *(pat_id(c, item.pc) for c in item.patterns)]
        if item.alp is not None:
            ids.append(alp_id(item.pc))
    header = (f"window {win.id} {fn.id if fn else '(no function)'}"
              f"{' module ' + module if module else ''}: weight "
              f"{evidence_text.share_text(win.weight, profile.basis)}, {win.n} instructions "
              f"{hex_pc(win.first_pc)}-{hex_pc(win.last_pc)}")
    lines = evidence_text.instruction_lines(items, profile.basis, fn.id if fn else None)
    return Block("\n".join([header, *lines]), tuple(dict.fromkeys(ids)))


def guide_block(section) -> Block:
    return Block(f'{section.id} "{section.heading}":\n{section.text}', (section.id,))


def context_of(backend) -> tuple[int, int]:
    """(context window, max_tokens) of a model backend; defaults for others."""
    config = getattr(backend, "config", None)
    if config is None:
        return DEFAULT_CONTEXT, DEFAULT_MAX_TOKENS
    return config.context_window(getattr(backend, "model", "")), config.max_tokens


def measure_of(backend) -> Measure:
    """How ``backend`` measures a one-turn request: its own (count_tokens, or characters
    / 3 of the whole body) when it is a model backend, else characters / 3 of the text."""
    own = getattr(backend, "measure", None)
    if own is not None:
        return own

    async def rough(system: str, brief: str) -> int:
        return size(system) + size(brief)

    return rough


class FullPromptOrchestrator(Orchestrator):
    """The orchestrator with one first-wave call holding everything, no tools, depth 1.

    ``alp``: the PCs whose ALP records the prompt shows (None: every shown instruction's)."""

    def __init__(self, *args, alp: Collection[int] | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.settings = replace(self.settings, depth=1)
        self._tools = ()
        self._system = FULL_SYSTEM
        self._alp = alp
        self.prompt: FullPrompt | None = None

    async def run(self):
        selection = self._selection or self.workload.hot(top=self.settings.top,
                                                         coverage=self.settings.coverage)
        context, max_tokens = context_of(self.backend)
        self.prompt = await fit(self.workload, selection, context - max_tokens,
                                measure_of(self.backend), self._alp)
        return await super().run()

    def _first_wave(self, selection: HotSelection, hints) -> list:
        prompt = self.prompt
        assert prompt is not None, "run() fits the prompt first"
        notes = tuple(h.id for h in hints)
        brief = prompt.brief
        if hints:
            lines = "\n".join(f"{h.id} ({h.scope}): {h.text}" for h in hints)
            brief = brief.replace("</evidence>", f"engineers' notes:\n{lines}\n</evidence>")
        return [CallPlan(id=call_id(1, 1), wave=1, parent=None,
                         title=f"full prompt: {prompt.windows} windows, "
                               f"{prompt.sections} guide sections",
                         brief=brief, given=prompt.given + notes, seed=prompt.seed(),
                         weight=selection.coverage)]
