"""Briefs: what one call is given, anchored on its candidates (candidates.py).

A mechanism's part names it (kind, category, own share), gives the metrics computed from
the profile's counts and the code-shape checks that passed, then its hottest sites, each
with the assembly of its counted instructions and the ALP record beside each instruction.
A window's part (heat no mechanism explains) shows its hottest PCs in address order with
their ``pat:`` hits and ALP. Then come the guide sections for the call's kinds and
categories (the guide table's, core/guide_map.py; for unexplained heat, BM25 over the
guides queried from ALP signals and distinctive mnemonics) and the engineers' notes that
concern it; everything else the call reads through the tools. A brief stays under a token
cap (characters / 4): its parts show more instructions while it fits.

This module decides what goes into a brief, as data; ``brief_text`` renders it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from pcscope.core.alp import AlpRecord
from pcscope.core.engine import evidence_text
from pcscope.core.engine.brief_text import render
from pcscope.core.engine.candidates import CallGroup, Candidate, hinted_window
from pcscope.core.engine.evidence_text import Shown
from pcscope.core.engine.hints import Hint
from pcscope.core.engine.penalties import UNEXPLAINED
from pcscope.core.guide_map import sections_for
from pcscope.core.ids import alp_id, hex_pc, pat_id, pc_id
from pcscope.core.mechanisms import Mechanism, Site
from pcscope.core.readers.guides import GuideSection, section_index
from pcscope.core.workload import Workload

MAX_PCS = 24  # hottest PCs shown per window
MAX_PATTERN_PCS = 8  # extra PCs shown because a pattern hit them
WINDOW_SHARE = 0.95  # show a window's PCs until they hold this share of it
MAX_SITES = 6  # a mechanism's hottest sites shown; the rest through the tools
MIN_PCS = 4  # a part shows at least this many PCs, whatever the cap
LIMITS = (MIN_PCS, 6, 9, 13, 20, MAX_PCS + MAX_PATTERN_PCS)  # PCs per part, tried in turn
_DISTINCTIVE = (
    "br", "blr", "braa", "blraa", "ldxr", "ldaxr", "stxr", "stlxr", "cas", "casal", "ldadd",
    "ldaddal", "swp", "swpal", "dmb", "dsb", "isb", "ldar", "stlr", "ldapr", "udiv", "sdiv",
    "fdiv", "fsqrt", "yield", "wfe", "prfm", "fmadd", "fmla",
)

GuideSearch = Callable[[str, int], list[tuple[str, str, str]]]  # -> [(id, heading, text)]
# pcs -> per pc its ALP record, or None without one; one call a batch
AlpRecordsFn = Callable[[list[int]], list[AlpRecord | None]]


@dataclass(frozen=True)
class Part:
    """One candidate as the call sees it."""

    header: tuple[str, ...]
    pcs: tuple[int, ...]  # shown PCs
    blocks: tuple[tuple[str | None, tuple[Shown, ...]], ...]  # (site line or None, its PCs)
    windows: tuple[str, ...]  # win: IDs holding the shown PCs
    ids: tuple[str, ...]  # mech:, win:, fn:, pc:, pat: IDs
    alp_ids: tuple[str, ...]
    categories: tuple[str, ...]
    signals: tuple[str, ...]  # words from the ALP figures, for guide retrieval
    mnemonics: tuple[str, ...]


@dataclass(frozen=True)
class Brief:
    number: int
    candidates: tuple[str, ...]  # candidate IDs
    parts: tuple[Part, ...]
    guides: tuple[tuple[str, str, str], ...]  # (id, heading, text), cut when rendered
    notes: tuple[Hint, ...]
    share: float  # own share of its candidates
    basis: str  # what the profile counts (cycles, samples), for the shares' unit

    @property
    def title(self) -> str:
        more = f" +{len(self.candidates) - 1}" if len(self.candidates) > 1 else ""
        return f"call {self.number}: {self.candidates[0]}{more} ({self.share:.2%})"

    def text(self) -> str:
        return render(self)

    def given(self) -> tuple[str, ...]:
        ids: list[str] = []
        for part in self.parts:
            ids += part.ids
            ids += part.alp_ids
        ids += [g[0] for g in self.guides]
        ids += [n.id for n in self.notes]
        return tuple(dict.fromkeys(ids))

    def seed(self, focus: Sequence[str]) -> dict:
        """The same brief as structured data, for rule-based backends."""
        return {
            "slice": self.number,
            "mechanisms": [c for c in self.candidates if c.startswith("mech:")],
            "windows": list(dict.fromkeys(w for p in self.parts for w in p.windows)),
            "pcs": [hex_pc(int(pc)) for p in self.parts for pc in p.pcs],
            "patterns": [i for p in self.parts for i in p.ids if i.startswith("pat:")],
            "alp": [i for p in self.parts for i in p.alp_ids],
            "guides": [g[0] for g in self.guides],
            "notes": [{"id": n.id, "pc": hex_pc(n.pc) if n.pc is not None else None,
                       "window": n.window, "text": n.text} for n in self.notes],
            "focus": list(focus),
        }


def brief(workload: Workload, group: CallGroup, *, token_cap: int, guide_k: int,
          alp_records: AlpRecordsFn, marked: np.ndarray, hints: Sequence[Hint] = (),
          guide_search: GuideSearch | None = None) -> Brief:
    """The brief of one call: its parts show more instructions, step by step, while it
    stays under ``token_cap`` (growing, not trimming: rows are rendered, ALP included, only
    when they may be shown)."""
    memo: Rows = {}
    windows = {w for c in group.candidates for w in c.windows}
    notes = tuple(h for h in hints if _concerns(workload, h, windows))
    guides: tuple[tuple[str, str, str], ...] | None = None
    made: Brief | None = None
    size = _Size(workload.profile.basis)
    for limit in LIMITS:
        parts = tuple(_part(workload, c, limit, alp_records, marked, memo)
                      for c in group.candidates)
        if guides is None:  # retrieved once, from what the smallest brief shows
            guides = _guides(parts, group.candidates, guide_k, guide_search,
                             section_index(workload.guides))
        bigger = Brief(group.number, tuple(c.id for c in group.candidates), parts, guides,
                       notes, group.share, workload.profile.basis)
        if made is not None and size.tokens(bigger) > token_cap:
            break
        made = bigger
    assert made is not None
    return made


class _Size:
    """A brief's size in tokens as rendered, from each instruction's line rendered once
    (a brief grows step by step; rendering it whole at every step cost most of planning).
    Tokens are characters / 4, as ``system_prompt.tokens`` counts them."""

    MARKERS = 8  # characters allowed per line for the gap marker ("~ 12") that may precede it

    def __init__(self, basis: str) -> None:
        self.basis = basis
        self.lines: dict[int, int] = {}  # pc -> characters of its line
        self.rest: int | None = None  # guides, notes and delimiters

    def tokens(self, made: Brief) -> int:
        if self.rest is None:
            self.rest = len(render(replace(made, parts=())))
        chars = self.rest
        for part in made.parts:
            chars += sum(len(h) + 1 for h in part.header)
            for heading, items in part.blocks:
                chars += len(heading) + 1 if heading is not None else 0
                chars += sum(self._line(item) + self.MARKERS for item in items)
        return (chars + 3) // 4

    def _line(self, item: Shown) -> int:
        if item.pc not in self.lines:
            self.lines[item.pc] = len(evidence_text.instruction_line(item, self.basis)) + 1
        return self.lines[item.pc]


def _concerns(workload: Workload, hint: Hint, windows: set[int]) -> bool:
    if hint.pc is None and hint.window is None:
        return True
    return hinted_window(workload, hint) in windows


def _part(workload: Workload, c: Candidate, limit: int, alp_records: AlpRecordsFn,
          marked: np.ndarray, memo: Rows) -> Part:
    if c.mechanism is not None:
        return mechanism_part(workload, c.mechanism, limit, alp_records, marked, memo)
    return window_part(workload, c.windows[0], limit, alp_records, marked, memo)


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


def window_part(workload: Workload, w: int, limit: int, alp_records: AlpRecordsFn,
                marked: np.ndarray, memo: Rows) -> Part:
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
    shown = _instructions(workload, rows, alp_records, marked, memo)
    return Part(header=(header,), windows=(win.id,),
                ids=tuple(dict.fromkeys([win.id, *([fn.id] if fn else []), *shown.ids])),
                **shown.fields())


def mechanism_part(workload: Workload, m: Mechanism, limit: int, alp_records: AlpRecordsFn,
                   marked: np.ndarray, memo: Rows) -> Part:
    """The mechanism, its metrics and checks, then its hottest sites' instructions."""
    profile = workload.profile
    sites = sorted(m.sites, key=lambda s: (-s.share, s.pc))[:MAX_SITES]
    names = ", ".join(m.functions[:6]) + (" …" if len(m.functions) > 6 else "")
    header = [f"mechanism {m.id}: kind {m.kind}, category {m.category}, own share "
              f"{m.share:.2%} over {len(m.sites)} sites in {len(m.functions)} functions "
              f"({names}); showing {len(sites)} sites"]
    header += [f"metric {x.name}: {x.value:.3g} {x.unit} ({x.how})" for x in m.metrics]
    if m.checks:
        header.append("checks passed: " + "; ".join(m.checks))
    ids, windows, rows_all = [m.id], [], []
    for site in sites:
        rows = _site_rows(workload, site, limit)
        if not len(rows):
            continue
        # every window the shown rows lie in (a JIT region or a long loop spans several),
        # so a reader of the windows sees the site's hottest instructions
        spanned = [profile.windows[w] for w in dict.fromkeys(profile.window[rows].tolist())]
        win = spanned[0]
        fn = profile.functions.index_of(site.function)
        ids += [w.id for w in spanned] + ([profile.functions[fn].id] if fn is not None else [])
        windows += [w.id for w in spanned]
        rows_all.append((site, rows, profile.modules[win.module] if win.module >= 0 else ""))
    blocks: list[tuple[str | None, tuple[Shown, ...]]] = []
    merged = _Shown()
    for site, rows, module in rows_all:
        shown = _instructions(workload, rows, alp_records, marked, memo)
        merged.add(shown)
        blocks.append((f"site {pc_id(site.pc)} in {site.function}"
                       f"{' module ' + module if module else ''}: share "
                       f"{evidence_text.share_text(site.share, profile.basis)}",
                       tuple(shown.items)))
    fields = merged.fields()
    fields["blocks"] = tuple(blocks)
    return Part(header=tuple(header), windows=tuple(dict.fromkeys(windows)),
                ids=tuple(dict.fromkeys([*ids, *merged.ids])), **fields)


def _site_rows(workload: Workload, site: Site, limit: int) -> np.ndarray:
    """The site's counted instructions, hottest first up to ``limit``, in address order."""
    profile = workload.profile
    rows = [r for r in (profile.row_of(pc) for pc in (site.pcs or (site.pc,))) if r is not None]
    rows.sort(key=lambda r: (-int(profile.value[r]), r))
    key = profile.row_of(site.pc)
    chosen = rows[: max(1, limit // 2)]
    if key is not None and key not in chosen:
        chosen.append(key)
    return np.sort(np.asarray(chosen, dtype=np.int64))


@dataclass(frozen=True)
class _Row:
    """One instruction rendered for a brief, and the IDs and words it brings."""

    pc: int
    item: Shown  # as the shared rendering shows it
    ids: tuple[str, ...]  # pc: and pat: IDs
    alp_id: str | None
    categories: tuple[str, ...]
    signals: tuple[str, ...]
    mnemonic: str


Rows = dict[int, _Row]  # profile row -> its rendering, shared by one brief's attempts


class _Shown:
    """Instruction lines and the IDs and words they bring."""

    def __init__(self) -> None:
        self.pcs: list[int] = []
        self.items: list[Shown] = []
        self.ids: list[str] = []
        self.alp_ids: list[str] = []
        self.categories: list[str] = []
        self.signals: list[str] = []
        self.mnemonics: list[str] = []

    def add(self, other: _Shown) -> None:
        for name in vars(self):
            getattr(self, name).extend(getattr(other, name))

    def add_row(self, row: _Row) -> None:
        self.pcs.append(row.pc)
        self.items.append(row.item)
        self.ids += row.ids
        if row.alp_id is not None:
            self.alp_ids.append(row.alp_id)
        self.categories += row.categories
        self.signals += row.signals
        self.mnemonics.append(row.mnemonic)

    def fields(self) -> dict:
        return {"pcs": tuple(self.pcs), "blocks": ((None, tuple(self.items)),),
                "alp_ids": tuple(dict.fromkeys(self.alp_ids)),
                "categories": tuple(dict.fromkeys(self.categories)),
                "signals": tuple(dict.fromkeys(self.signals)),
                "mnemonics": tuple(dict.fromkeys(self.mnemonics))}


def _instructions(workload: Workload, rows: np.ndarray, alp_records: AlpRecordsFn,
                  marked: np.ndarray, memo: Rows) -> _Shown:
    """The rows' renderings (each row rendered once per brief, its arrays read at once)."""
    profile = workload.profile
    missing = np.asarray([r for r in rows.tolist() if r not in memo], dtype=np.int64)
    if len(missing):
        pcs = profile.pc[missing].tolist()
        columns = zip(missing.tolist(), pcs, profile.value[missing].tolist(),
                      profile.mnemonic[missing].tolist(), marked[missing].tolist(),
                      profile.function[missing].tolist(), alp_records(pcs), strict=True)
        for r, pc, value, mnemonic, hit, function, record in columns:
            memo[r] = _render_row(workload, r, pc, value, mnemonic, hit, function, record)
    out = _Shown()
    for r in rows.tolist():
        out.add_row(memo[r])
    return out


def _render_row(workload: Workload, r: int, pc: int, value: int, mnemonic: int, hit: bool,
                function: int, record: AlpRecord | None) -> _Row:
    profile = workload.profile
    cats = tuple(workload.patterns.categories_at(pc)) if hit else ()
    share = value / profile.total if profile.total else 0.0
    fn = profile.functions[function].id if function >= 0 else None
    item = Shown(pc, profile.asm(r), share, cats, record, fn)
    return _Row(pc, item, (pc_id(pc), *(pat_id(c, pc) for c in cats)),
                alp_id(pc) if record is not None else None, cats,
                tuple(alp_signals(record)) if record is not None else (),
                profile.mnemonics[mnemonic])


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


def guide_query(parts: Sequence[Part], kinds: Sequence[str] = ()) -> str:
    words: list[str] = [k.replace("-", " ") for k in kinds]
    for part in parts:
        words += [c.replace("-", " ") for c in part.categories]
        words += list(part.signals)
        words += [m for m in part.mnemonics if m in _DISTINCTIVE]
    if not words:
        for part in parts:
            words += list(part.mnemonics[:3])
    return " ".join(dict.fromkeys(words))


def _guides(parts: Sequence[Part], candidates: Sequence[Candidate], k: int,
            search: GuideSearch | None, sections: dict[str, GuideSection]) -> tuple[
                tuple[str, str, str], ...]:
    """The sections the guide table names for the candidates' kinds and categories (first
    ones first), else — for unexplained heat, or guides without those sections — the best
    BM25 matches of what the parts show."""
    if k <= 0:
        return ()
    named = [sid for c in candidates if c.category != UNEXPLAINED
             for sid in sections_for(c.category, c.mechanism.kind if c.mechanism else None)]
    found = [sections[sid] for sid in dict.fromkeys(named) if sid in sections][:k]
    if found:
        return tuple((g.id, g.heading, g.text) for g in found)
    if search is None:
        return ()
    kinds = [c.mechanism.kind for c in candidates if c.mechanism is not None]
    query = guide_query(parts, kinds)
    if not query:
        return ()
    hits = search(query, k)
    return tuple(hits[:k])
