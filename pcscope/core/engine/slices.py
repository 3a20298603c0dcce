"""Analysis slices: the hot selection cut into a few windows per call, in weight order.

Each slice holds, per window, its hottest PCs (address order) with their ``pat:`` hits and
the exactly matching ALP records, plus the guide sections retrieved for that evidence
(BM25 over guide sections, queried from the slice's pattern categories, ALP signals and
distinctive mnemonics) and the engineers' notes that concern it. Its rendering stays under
a token cap (characters / 4): windows move to the next slice, and a window too big on its
own shows fewer of its PCs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from pcscope.core.alp import AlpRecord
from pcscope.core.engine import evidence_text
from pcscope.core.engine.hints import Hint
from pcscope.core.engine.system_prompt import tokens
from pcscope.core.ids import alp_id, hex_pc, pat_id, pc_id
from pcscope.core.profile import HotSelection
from pcscope.core.workload import Workload

MAX_PCS = 24  # hottest PCs shown per window
MAX_PATTERN_PCS = 8  # extra PCs shown because a pattern hit them
WINDOW_SHARE = 0.95  # show a window's PCs until they hold this share of it
MIN_PCS = 4  # a window trimmed to fit the cap keeps at least this many PCs
_DISTINCTIVE = (
    "br", "blr", "braa", "blraa", "ldxr", "ldaxr", "stxr", "stlxr", "cas", "casal", "ldadd",
    "ldaddal", "swp", "swpal", "dmb", "dsb", "isb", "ldar", "stlr", "ldapr", "udiv", "sdiv",
    "fdiv", "fsqrt", "yield", "wfe", "prfm", "fmadd", "fmla",
)

GuideSearch = Callable[[str, int], list[tuple[str, str, str]]]  # -> [(id, heading, text)]
AlpLine = Callable[[int], AlpRecord | None]  # pc -> its ALP record, if any


@dataclass(frozen=True)
class WindowPart:
    window: int
    id: str
    header: str
    rows: tuple[int, ...]  # shown rows, address order
    pcs: tuple[int, ...]  # their PCs
    lines: tuple[str, ...]
    ids: tuple[str, ...]  # win:, fn:, pc:, pat: IDs
    alp_ids: tuple[str, ...]
    categories: tuple[str, ...]
    signals: tuple[str, ...]  # words from the ALP figures, for guide retrieval
    mnemonics: tuple[str, ...]

    def text(self) -> str:
        return "\n".join((self.header, *self.lines))


@dataclass(frozen=True)
class Slice:
    number: int
    parts: tuple[WindowPart, ...]
    guides: tuple[tuple[str, str, str], ...]  # (id, heading, text), cut when rendered
    notes: tuple[Hint, ...]
    weight: float

    @property
    def title(self) -> str:
        first = self.parts[0].id
        more = f" +{len(self.parts) - 1}" if len(self.parts) > 1 else ""
        return f"slice {self.number}: {first}{more} ({self.weight:.2%})"

    def brief(self) -> str:
        blocks = ["<evidence>"]
        blocks += [part.text() for part in self.parts]
        if self.guides:
            blocks.append("guide sections:")
            blocks += [evidence_text.guide_line(*g) for g in self.guides]
        if self.notes:
            blocks.append("engineers' notes:")
            blocks += [f"{n.id} ({n.scope}): {n.text}" for n in self.notes]
        blocks.append("</evidence>")
        return "\n".join(blocks)

    def given(self) -> tuple[str, ...]:
        ids: list[str] = []
        for part in self.parts:
            ids += part.ids
            ids += part.alp_ids
        ids += [g[0] for g in self.guides]
        ids += [n.id for n in self.notes]
        return tuple(dict.fromkeys(ids))

    def seed(self, focus: Sequence[str]) -> dict:
        """The same slice as structured data, for rule-based backends."""
        return {
            "slice": self.number,
            "windows": [p.id for p in self.parts],
            "pcs": [hex_pc(int(pc)) for p in self.parts for pc in p.pcs],
            "patterns": [i for p in self.parts for i in p.ids if i.startswith("pat:")],
            "alp": [i for p in self.parts for i in p.alp_ids],
            "guides": [g[0] for g in self.guides],
            "notes": [{"id": n.id, "pc": hex_pc(n.pc) if n.pc is not None else None,
                       "window": n.window, "text": n.text} for n in self.notes],
            "focus": list(focus),
        }


def plan_slices(workload: Workload, selection: HotSelection, *, windows_per_slice: int,
                token_cap: int, guide_k: int, alp_line: AlpLine, hints: Sequence[Hint] = (),
                guide_search: GuideSearch | None = None) -> list[Slice]:
    """Slices over the selected windows in weight order, then over windows that only a
    hint names."""
    profile = workload.profile
    order = list(selection.windows)
    for hint in hints:
        w = _hinted_window(workload, hint)
        if w is not None and w not in order:
            order.append(w)
    marked = pattern_rows(workload)
    guide_room = guide_k * (evidence_text.GUIDE_CAP // 4 + 20)
    budget = max(token_cap - guide_room, 200)
    groups: list[list[WindowPart]] = [[]]
    for w in order:
        part = _fit(workload, w, budget, alp_line, marked)
        current = groups[-1]
        size = sum(tokens(p.text()) for p in current) + tokens(part.text())
        if current and (len(current) >= windows_per_slice or size > budget):
            groups.append([])
        groups[-1].append(part)
    slices = []
    for number, parts in enumerate((g for g in groups if g), 1):
        windows = [p.window for p in parts]
        notes = tuple(h for h in hints if _concerns(workload, h, windows))
        guides = _guides(parts, guide_k, guide_search)
        weight = float(np.sum(profile.windows.value[windows])) / profile.total if profile.total \
            else 0.0
        slices.append(Slice(number, tuple(parts), guides, notes, weight))
    return slices


def _hinted_window(workload: Workload, hint: Hint) -> int | None:
    profile = workload.profile
    pc = hint.pc
    if pc is None and hint.window is not None:
        pc = int(hint.window.removeprefix("win:"), 16)
    row = profile.row_of(pc) if pc is not None else None
    return None if row is None else int(profile.window[row])


def _concerns(workload: Workload, hint: Hint, windows: list[int]) -> bool:
    if hint.pc is None and hint.window is None:
        return True
    return _hinted_window(workload, hint) in windows


def _fit(workload: Workload, w: int, budget: int, alp_line: AlpLine,
         marked: np.ndarray) -> WindowPart:
    limit = MAX_PCS + MAX_PATTERN_PCS
    part = window_part(workload, w, limit, alp_line, marked)
    while tokens(part.text()) > budget and limit > MIN_PCS:
        limit = max(MIN_PCS, limit * 2 // 3)
        part = window_part(workload, w, limit, alp_line, marked)
    return part


def pattern_rows(workload: Workload) -> np.ndarray:
    """Per row: does any pattern hit it."""
    marked = np.zeros(len(workload.profile), dtype=bool)
    for category, hits in workload.patterns.counts().items():
        if hits:
            marked[workload.patterns.rows(category)] = True
    return marked


def shown_rows(workload: Workload, w: int, limit: int, marked: np.ndarray) -> np.ndarray:
    """The window's hottest rows up to ``WINDOW_SHARE`` of its value, plus rows a pattern
    hit (with samples), at most ``limit``, in address order."""
    profile = workload.profile
    rows = profile.window_rows(w)
    values = profile.value[rows]
    order = np.lexsort((rows, -values))
    total = int(values.sum())
    chosen: list[int] = []
    running = 0
    for i in order[: min(MAX_PCS, limit)]:
        if total and running >= WINDOW_SHARE * total:
            break
        chosen.append(int(rows[i]))
        running += int(values[i])
    taken = set(chosen)
    extra = [int(r) for r in rows[(values > 0) & marked[rows]] if int(r) not in taken]
    chosen += extra[: max(0, min(MAX_PATTERN_PCS, limit - len(chosen)))]
    return np.sort(np.asarray(chosen, dtype=np.int64))


def window_part(workload: Workload, w: int, limit: int, alp_line: AlpLine,
                marked: np.ndarray) -> WindowPart:
    profile = workload.profile
    win = profile.windows[w]
    rows = shown_rows(workload, w, limit, marked)
    fn = profile.functions[win.function] if win.function >= 0 else None
    module = profile.modules[win.module] if win.module >= 0 else ""
    header = (f"window {win.id} {fn.id if fn else '(no function)'}"
              f"{' ' + fn.name if fn and fn.name and fn.id != 'fn:' + fn.name else ''}"
              f"{' module ' + module if module else ''}: weight "
              f"{evidence_text.share_text(win.weight, profile.basis)}, "
              f"{win.n} instructions {hex_pc(win.first_pc)}-{hex_pc(win.last_pc)}, "
              f"showing {len(rows)}")
    ids = [win.id] + ([fn.id] if fn else [])
    items = evidence_text.items_of(workload, rows, alp_line, patterns=lambda r: marked[r])
    alp_ids, categories, signals = [], [], []
    mnemonics = [profile.mnemonics[int(profile.mnemonic[r])] for r in rows]
    for item in items:
        ids.append(pc_id(item.pc))
        ids += [pat_id(c, item.pc) for c in item.patterns]
        categories += item.patterns
        if item.alp is not None:
            alp_ids.append(alp_id(item.pc))
            signals += alp_signals(item.alp)
    lines = evidence_text.instruction_lines(items, profile.basis, fn.id if fn else None)
    return WindowPart(
        window=w, id=win.id, header=header, rows=tuple(int(r) for r in rows),
        pcs=tuple(int(profile.pc[r]) for r in rows),
        lines=tuple(lines), ids=tuple(dict.fromkeys(ids)),
        alp_ids=tuple(alp_ids), categories=tuple(dict.fromkeys(categories)),
        signals=tuple(dict.fromkeys(signals)), mnemonics=tuple(dict.fromkeys(mnemonics)),
    )


def alp_signals(record: AlpRecord) -> list[str]:
    """Words naming what an ALP record measures as costly (for guide retrieval)."""
    out = []
    branch, mem = record.branch, record.mem
    if branch is not None and (branch.mispredict_rate or 0) >= 0.05:
        out.append("indirect branch mispredict" if "indirect" in branch.kind
                   else "conditional branch mispredict")
    if mem is not None:
        if (mem.l1d_miss_rate or 0) >= 0.1:
            out.append("cache miss")
        if (mem.tlb_miss_rate or 0) >= 0.01:
            out.append("tlb miss")
    if (record.issue_wait or 0) >= 10:
        out.append("issue wait")
    return out


def guide_query(parts: Sequence[WindowPart]) -> str:
    words: list[str] = []
    for part in parts:
        words += [c.replace("-", " ") for c in part.categories]
        words += list(part.signals)
        words += [m for m in part.mnemonics if m in _DISTINCTIVE]
    if not words:
        for part in parts:
            words += list(part.mnemonics[:3])
    return " ".join(dict.fromkeys(words))


def _guides(parts: Sequence[WindowPart], k: int,
            search: GuideSearch | None) -> tuple[tuple[str, str, str], ...]:
    if search is None or k <= 0:
        return ()
    query = guide_query(parts)
    if not query:
        return ()
    hits = search(query, k)
    return tuple(hits[:k])
