"""``--strategy full-prompt``: the legacy single-pass baseline the bounded design replaces.

One call, no tools, no deeper waves: the whole trimmed hot selection (every instruction of
every selected window with its share, pattern hits and exact-PC ALP records) and the
guides, under the same system text, output schema and validation as bounded calls.

Truncation rule (stated in the prompt and in the call's seed, so reports carry it):
the input budget is the model's context window minus the answer's ``max_tokens`` minus a
10% margin for the system text, tool definitions and estimation error, in tokens
estimated as characters / 4. Guides may take at most 30% of it: whole sections in file
order, stopping at the first that does not fit. The profile takes the rest: selected
windows in descending weight, each whole, stopping at the first that does not fit (the
heaviest window is cut to its first rows if it alone is too big).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pcscope.core.engine.calls import CallPlan, call_id
from pcscope.core.engine.orchestrator import Orchestrator
from pcscope.core.engine.system_prompt import compact, tokens
from pcscope.core.ids import hex_pc, pat_id, pc_id
from pcscope.core.profile import HotSelection
from pcscope.core.workload import Workload

GUIDE_SHARE = 0.30
MARGIN = 0.10
DEFAULT_CONTEXT = 200_000
DEFAULT_MAX_TOKENS = 4096
RULE = ("input budget = context window - max_tokens - 10% margin (tokens = characters/4); "
        "guides at most 30% of it, whole sections in file order, stopping at the first that "
        "does not fit; the profile the rest, selected windows in descending weight, whole, "
        "stopping at the first that does not fit")


@dataclass(frozen=True)
class Block:
    text: str
    ids: tuple[str, ...]

    @property
    def tokens(self) -> int:
        return tokens(self.text)


@dataclass(frozen=True)
class FullPrompt:
    brief: str
    given: tuple[str, ...]
    windows: int
    windows_dropped: int
    sections: int
    sections_dropped: int
    budget: int

    def seed(self) -> dict:
        return {"strategy": "full-prompt", "truncation": RULE, "budget_tokens": self.budget,
                "windows": self.windows, "windows_dropped": self.windows_dropped,
                "guide_sections": self.sections,
                "guide_sections_dropped": self.sections_dropped}


def input_budget(context: int, max_tokens: int) -> int:
    return int((context - max_tokens) * (1 - MARGIN))


def build(workload: Workload, selection: HotSelection, budget: int) -> FullPrompt:
    """The single prompt under the truncation rule (module docstring)."""
    guides = [guide_block(s) for s in workload.guides]
    guide_room = min(sum(b.tokens for b in guides), int(budget * GUIDE_SHARE))
    windows = [window_block(workload, w) for w in selection.windows]
    kept_windows = _prefix(windows, budget - guide_room)
    if not kept_windows and windows:
        kept_windows = [_cut(windows[0], budget - guide_room)]
    used = sum(b.tokens for b in kept_windows)
    kept_guides = _prefix(guides, min(budget - used, int(budget * GUIDE_SHARE)))
    dropped_w, dropped_g = len(windows) - len(kept_windows), len(guides) - len(kept_guides)
    head = (f"Hot selection: {len(selection.windows)} windows holding "
            f"{selection.coverage:.1%} of the total; {len(workload.guides)} guide sections. "
            f"Truncation: {RULE}. Dropped: {dropped_w} windows, {dropped_g} guide sections.")
    parts = ["<evidence>", head, *(b.text for b in kept_windows)]
    if kept_guides:
        parts += ["guide sections:", *(b.text for b in kept_guides)]
    parts.append("</evidence>")
    ids = [i for b in (*kept_windows, *kept_guides) for i in b.ids]
    return FullPrompt("\n".join(parts), tuple(dict.fromkeys(ids)), len(kept_windows),
                      dropped_w, len(kept_guides), dropped_g, budget)


def _prefix(blocks: list[Block], room: int) -> list[Block]:
    kept, used = [], 0
    for block in blocks:
        if used + block.tokens > room:
            break
        kept.append(block)
        used += block.tokens
    return kept


def _cut(block: Block, room: int) -> Block:
    """The first lines of a block that fit (the IDs of the lines kept)."""
    lines = block.text.split("\n")
    kept: list[str] = []
    for line in lines:
        if tokens("\n".join([*kept, line])) > room:
            break
        kept.append(line)
    text = "\n".join(kept)
    return Block(text, tuple(i for i in block.ids if i in text))


def window_block(workload: Workload, w: int) -> Block:
    """Every instruction of window ``w`` with its share, pattern hits and ALP record."""
    profile = workload.profile
    win = profile.windows[w]
    fn = profile.functions[win.function] if win.function >= 0 else None
    module = profile.modules[win.module] if win.module >= 0 else ""
    ids = [win.id] + ([fn.id] if fn else [])
    lines = [f"window {win.id} {fn.id if fn else '(no function)'}"
             f"{' module ' + module if module else ''}: weight {win.weight:.2%}, "
             f"{win.n} instructions {hex_pc(win.first_pc)}-{hex_pc(win.last_pc)}"]
    for row in profile.window_rows(w):
        r = int(row)
        pc = int(profile.pc[r])
        pats = [pat_id(c, pc) for c in workload.patterns.categories_at(pc)]
        ids += [pc_id(pc), *pats]
        tag = f"  {' '.join(pats)}" if pats else ""
        lines.append(f"{pc_id(pc)}  {profile.asm(r)}  share {profile.share(r):.3%}{tag}")
        record = workload.alp.get(pc) if workload.alp is not None else None
        if record is not None:
            data = record.to_json(rounded=True)
            for key in ("id", "pc", "asm", "matched", "loops"):
                data.pop(key, None)
            lines.append(f"{record.id} {compact(data)}")
            ids.append(record.id)
    return Block("\n".join(lines), tuple(ids))


def guide_block(section) -> Block:
    return Block(f'{section.id} "{section.heading}":\n{section.text}', (section.id,))


def context_of(backend) -> tuple[int, int]:
    """(context window, max_tokens) of a model backend; defaults for others."""
    config = getattr(backend, "config", None)
    if config is None:
        return DEFAULT_CONTEXT, DEFAULT_MAX_TOKENS
    return config.context_window(getattr(backend, "model", "")), config.max_tokens


class FullPromptOrchestrator(Orchestrator):
    """The orchestrator with one first-wave call holding everything, no tools, depth 1."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.settings = replace(self.settings, depth=1)
        self._tools = ()
        self.prompt: FullPrompt | None = None

    def _slice_plans(self, selection: HotSelection, hints) -> list:
        context, max_tokens = context_of(self.backend)
        prompt = build(self.workload, selection, input_budget(context, max_tokens))
        self.prompt = prompt
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
