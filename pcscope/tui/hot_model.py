"""What the hot-windows pane shows: window order, sort, filters and per-window badges.

All of it is numpy over the window table (a million-row profile has ~10^5 windows), so
re-sorting or filtering never builds per-window Python objects; the widget asks for the
few rows on screen.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from pcscope.core.ids import parse_pc
from pcscope.core.profile import Profile
from pcscope.tui.alp_glance import AlpGlance

SORTS = ("weight", "pc", "function", "size")


@dataclass(frozen=True)
class HotView:
    sort: str = "weight"
    text: str = ""
    category: str | None = None
    function: str | None = None  # exactly this function's windows (the function view's Enter)

    def describe(self) -> str:
        return " · ".join([f"sort {self.sort}", *self.filters()])

    def filters(self) -> list[str]:
        """The filters in force, as the status line names them."""
        parts = []
        if self.function:
            parts.append(f"function {self.function}")
        if self.category:
            parts.append(f"category {self.category}")
        if self.text:
            parts.append(f"filter {self.text!r}")
        return parts


@dataclass
class Badges:
    """Per-window pattern categories (bit k = ``categories[k]``) and ALP flags."""

    categories: list[str]
    pattern_bits: np.ndarray  # uint32 per window
    alp_bits: np.ndarray      # uint8 per window

    def categories_of(self, window: int) -> list[str]:
        bits = int(self.pattern_bits[window])
        return [c for k, c in enumerate(self.categories) if bits >> k & 1]


class HotModel:
    def __init__(self, profile: Profile, selected: list[int]) -> None:
        self.profile = profile
        self.view = HotView()
        self.in_selection = np.zeros(len(profile.windows), dtype=bool)
        self.in_selection[selected] = True
        self.badges: Badges | None = None
        self.shown: np.ndarray = profile.windows_by_weight()

    def __len__(self) -> int:
        return len(self.shown)

    def window_at(self, index: int) -> int:
        return int(self.shown[index])

    def position_of(self, window: int) -> int | None:
        found = np.flatnonzero(self.shown == window)
        return int(found[0]) if len(found) else None

    def apply(self, view: HotView) -> None:
        self.view = view
        order = self._sorted(view.sort)
        keep = self._filter_mask(view)
        self.shown = order if keep is None else order[keep[order]]

    def with_sort(self, sort: str) -> HotView:
        return replace(self.view, sort=sort)

    def _sorted(self, sort: str) -> np.ndarray:
        p = self.profile
        if sort == "pc":
            return np.argsort(p.windows.first_pcs(), kind="stable").astype(np.int32)
        if sort == "function":
            # Function codes follow name order; windows without a function go last.
            code = p.windows.function.astype(np.int64)
            code = np.where(code < 0, np.iinfo(np.int64).max, code)
            return np.lexsort((p.windows.first_pcs(), -p.windows.value, code)).astype(np.int32)
        if sort == "size":
            sizes = p.windows.groups.sizes()
            return np.lexsort((p.windows.first_pcs(), -sizes)).astype(np.int32)
        return p.windows_by_weight()

    def _filter_mask(self, view: HotView) -> np.ndarray | None:
        keep: np.ndarray | None = None
        if view.category and self.badges is not None:
            k = self.badges.categories.index(view.category)
            keep = (self.badges.pattern_bits >> k & 1).astype(bool)
        if view.text:
            match = self._text_mask(view.text)
            keep = match if keep is None else keep & match
        if view.function:
            f = self.profile.functions.index_of(view.function)
            match = self.profile.windows.function == (-2 if f is None else f)
            keep = match if keep is None else keep & match
        return keep

    def _text_mask(self, text: str) -> np.ndarray:
        """Windows whose function, label or module contains ``text`` (any case), or whose
        PC range holds ``text`` read as a PC."""
        p = self.profile
        needle = text.lower()
        windows = p.windows
        names = np.array([needle in name.lower() for name in p.function_names] + [False])
        labels = np.array([needle in label.lower() for label in windows.labels] + [False])
        modules = np.array([needle in m.lower() for m in p.modules] + [False])
        # Index -1 (none) maps to the trailing False of each lookup table.
        mask = names[windows.function] | modules[windows.module] | labels[windows.label_code]
        try:
            pc = parse_pc(text)
        except ValueError:
            return mask
        first = p.pc[windows.first_row].astype(np.uint64)
        last = p.pc[windows.last_row].astype(np.uint64)
        return mask | ((first <= np.uint64(pc)) & (np.uint64(pc) <= last))


def compute_badges(profile: Profile, patterns, alp) -> Badges:
    """Per-window pattern bits from the pattern table, ALP flags from the ALP columns."""
    counts = patterns.counts()
    categories = sorted(c for c, n in counts.items() if n)
    pattern_bits = np.zeros(len(profile.windows), dtype=np.uint32)
    for k, category in enumerate(categories):
        rows = np.fromiter((hit.row for hit in patterns.hits(category)), dtype=np.int64)
        np.bitwise_or.at(pattern_bits, profile.window[rows], np.uint32(1 << k))
    alp_bits = (AlpGlance(alp).window_bits(profile) if alp is not None
                else np.zeros(len(profile.windows), dtype=np.uint8))
    return Badges(categories, pattern_bits, alp_bits)
