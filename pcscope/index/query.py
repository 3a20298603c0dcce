"""Search primitives for model calls, the TUI and the CLI, each with a typed, bounded result.

``QueryEngine(profile, patterns, text)``:

- ``search(query, limit)``: Tantivy query syntax over instructions (``ldr x17``,
  ``mnemonic:ldaxr``, ``"ldr x17"``, ``function:foo``, ``[x16``, ``samples:>1000``);
- ``regex(pattern, field, limit)``: a regular expression over each instruction's text or
  over the distinct mnemonics;
- ``group(by, where, limit)``: instructions grouped by mnemonic, function, window,
  pattern category or module, optionally only those a query matches;
- ``search_guides(query, k)``: BM25 over guide sections.

Hits come in samples-descending order (ties: lower PC first). Every result says how many
matched in all (``total``) and whether it was cut (``truncated``).

Regexes run in polars (Rust ``regex``: linear time, no backtracking, so no catastrophic
patterns exist) once per distinct instruction text (a quarter of the rows of a big
profile), then map to rows; they are limited in length, counted repetition and compiled
size (Rust's 10 MB limit), and case-insensitive.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Sized
from functools import cached_property

import numpy as np
import polars as pl

from pcscope.core.asmtext import asm_series, distinct_rows
from pcscope.core.errors import UsageError
from pcscope.core.ids import fn_id, hex_pc, pc_id, win_id
from pcscope.core.isa import normalize_mnemonic
from pcscope.core.pattern_table import PATTERN_CATEGORIES, PatternTable
from pcscope.core.profile import Profile
from pcscope.core.queries import (
    Field,
    GroupBy,
    GroupResult,
    GroupRow,
    GuideHit,
    GuideResult,
    Hit,
    SearchResult,
)
from pcscope.core.workload import Workload
from pcscope.index.memory import keep_freed_memory
from pcscope.index.text import QUERY_TOKEN, TextIndex

MAX_LIMIT = 1000  # hits or groups in one result
MAX_GUIDES = 50
MAX_REGEX = 256  # characters in a regex
REGEX_SLICE = 1 << 18  # rows a regex scans between checks of its deadline
MAX_REPEAT = 100  # largest counted repetition: instructions are far shorter
GUIDE_EXCERPT = 600  # characters of a guide section's text in a result
GROUP_KEYS = ("mnemonic", "function", "window", "category", "module")
NO_KEY = "(none)"  # the group of rows without a function / module

class QueryEngine:
    """Queries over one indexed workload (the index's implementation of
    pcscope.core.queries.Queries). ``text`` may be a zero-argument callable that
    returns the TextIndex, so that regex and grouping never wait for it to be built."""

    def __init__(
        self,
        profile: Profile,
        patterns: PatternTable | None = None,
        text: TextIndex | Callable[[], TextIndex] | None = None,
    ) -> None:
        self.profile = profile
        self.patterns = patterns
        self._text = text
        keep_freed_memory()  # a query's temporaries are not faulted in anew each time

    @classmethod
    def of(cls, workload: Workload) -> QueryEngine:
        """From a pcscope.core.workload.Workload (its text index opens on first need)."""
        return cls(workload.profile, workload.patterns, lambda: workload.text)

    @cached_property
    def text(self) -> TextIndex:
        if self._text is None:
            raise UsageError("no text index for this workload")
        return self._text() if callable(self._text) else self._text

    # --- search -----------------------------------------------------------------------

    def search(self, query: str, limit: int = 20) -> SearchResult:
        """Instructions a Tantivy query matches, heaviest first."""
        _check_limit(limit, MAX_LIMIT)
        rows, total = self.text.search(self.resolve(query), limit)
        return SearchResult(query=query, total=total, truncated=total > len(rows),
                            hits=self.hits(rows))  # fmt: skip

    def resolve(self, query: str) -> str:
        """Evidence IDs and labels the index does not hold, as the values it does:
        ``fn:0x…`` (a hidden function) -> its name; ``window:<label>`` -> its ``win:`` ID."""
        return " ".join(self._resolve_token(t) for t in QUERY_TOKEN.findall(query))

    def _resolve_token(self, token: str) -> str:
        sign = token[0] if token[:1] in ("+", "-") else ""
        field, sep, value = token[len(sign) :].partition(":")
        if not sep or value.startswith('"'):
            return token
        p = self.profile
        if field == "fn" and value.lower().startswith("0x"):
            for f in np.flatnonzero(_first_pcs(p) == _parse_hex(value)):
                return f'{sign}function:"{p.function_names[int(f)]}"'
        if field == "window" and not value.startswith("win:") and value in p.window_labels:
            label = p.window_labels.index(value)
            window = int(np.flatnonzero(p.windows.label_code == label)[0])
            return f'{sign}window:"{win_id(int(p.windows.first_pcs()[window]))}"'
        return token

    # --- regex ------------------------------------------------------------------------

    def regex(self, pattern: str, field: Field = "asm", limit: int = 20,
              deadline: float | None = None) -> SearchResult:
        """Instructions whose text (``asm``) or mnemonic (``mnemonic``: as written or
        canonical) the regex matches anywhere (anchor with ``^``/``$``), case-insensitive.
        ``deadline`` (time.monotonic()): past it the work stops with TimeoutError."""
        _check_limit(limit, MAX_LIMIT)
        if field == "mnemonic":
            rows = self._mnemonic_rows(pattern)
        elif field == "asm":
            rows = self._asm_rows(pattern, deadline)
        else:
            raise UsageError(f"regex field must be asm or mnemonic, not {field!r}")
        top = self.top(rows, limit)
        return SearchResult(query=pattern, total=len(rows), truncated=len(rows) > len(top),
                            hits=self.hits(top), kind="regex", field=field)  # fmt: skip

    def _asm_rows(self, pattern: str, deadline: float | None) -> np.ndarray:
        """Rows whose text matches. The regex runs once per distinct text (a quarter of
        the rows of a big profile), a slice of texts at a time, so work past ``deadline``
        stops within one slice instead of running on in its thread."""
        texts, codes = self._asm_distinct
        matched = np.zeros(len(texts), dtype=bool)
        for start in range(0, len(texts), REGEX_SLICE):
            if deadline is not None and time.monotonic() > deadline:
                raise TimeoutError("regex ran past its time limit")
            hit = _contains(texts.slice(start, REGEX_SLICE), pattern, self._ascii)
            matched[start : start + len(hit)] = hit.to_numpy()
        return np.flatnonzero(matched[codes])

    @cached_property
    def _asm_distinct(self) -> tuple[pl.Series, np.ndarray]:
        """The distinct lower-case texts, and each row's index among them (the profile's
        distinct texts, lower-cased and made distinct again: case folding may merge some)."""
        profile = self.profile
        series = asm_series(profile.asm_distinct)
        blob = profile.asm_column.blob
        if not ((blob >= 65) & (blob <= 90)).any():
            return series, profile.asm_code
        lower = series.str.to_lowercase()
        first, codes = distinct_rows(lower)
        return lower.gather(first), np.take(codes, profile.asm_code)

    @cached_property
    def _ascii(self) -> bool:
        return bool(self.profile.asm_column.blob.max(initial=0) < 128)

    def _mnemonic_rows(self, pattern: str) -> np.ndarray:
        names = self.profile.mnemonics
        written = _contains(pl.Series(names, dtype=pl.String), pattern).to_numpy()
        canonical = pl.Series([normalize_mnemonic(m) for m in names], dtype=pl.String)
        lut = written | _contains(canonical, pattern).to_numpy()
        if not len(lut):
            return np.zeros(0, dtype=np.int64)
        return np.flatnonzero(lut[self.profile.mnemonic])

    # --- group ------------------------------------------------------------------------

    def group(self, by: GroupBy, where: str | None = None, limit: int = 20) -> GroupResult:
        """Instructions grouped by ``by`` (those ``where`` matches, else all), with count,
        samples and share per group; groups by samples descending, ties in dictionary
        order (names alphabetically, windows by PC, categories as listed, "(none)" last)."""
        _check_limit(limit, MAX_LIMIT)
        if by not in GROUP_KEYS:
            raise UsageError(f"--by must be one of {', '.join(GROUP_KEYS)}, not {by!r}")
        p = self.profile
        rows = None if where is None else self.text.matching_rows(self.resolve(where))
        n = len(p) if rows is None else len(rows)
        if by == "category":
            groups = self._category_groups(rows)
            groups.sort(key=lambda g: -g.samples)  # stable: category order breaks ties
            total = len(groups)
        else:
            codes, size = self._codes(by)
            picked = codes if rows is None else codes[rows]
            samples = p.samples if rows is None else p.samples[rows]
            value = p.value if rows is None else p.value[rows]
            count = np.bincount(picked, minlength=size)
            sample_sum = np.rint(np.bincount(picked, weights=samples, minlength=size))
            value_sum = np.bincount(picked, weights=value, minlength=size)
            present = np.flatnonzero(count)
            order = present[np.lexsort((present, -sample_sum[present]))]
            total = len(order)
            groups = [
                GroupRow(key=key, id=ident, count=int(count[g]), samples=int(sample_sum[g]),
                         share=_share(value_sum[g], p.total))
                for g in order[:limit].tolist()
                for key, ident in [self._key(by, g)]
            ]  # fmt: skip
        return GroupResult(by=by, where=where, instructions=n, total=total,
                           truncated=total > limit, groups=groups[:limit])  # fmt: skip

    def _codes(self, by: str) -> tuple[np.ndarray, int]:
        """Per-row group codes (rows without a function/module: the last code) and count."""
        p = self.profile
        table: dict[str, tuple[np.ndarray, Sized]] = {
            "mnemonic": (p.mnemonic, p.mnemonics),
            "module": (p.module, p.modules),
            "function": (p.function, p.function_names),
            "window": (p.window, p.windows),
        }
        codes, names = table[by]
        size = len(names) + 1
        return np.where(codes >= 0, codes, size - 1), size

    def _key(self, by: str, code: int) -> tuple[str, str | None]:
        p = self.profile
        if by == "window":
            ident = win_id(int(p.windows.first_pcs()[code]))
            return ident, ident
        names = {"mnemonic": p.mnemonics, "module": p.modules, "function": p.function_names}[by]
        if code == len(names):
            return NO_KEY, None
        if by == "function":
            return names[code], fn_id(names[code], int(_first_pcs(p)[code]))
        return names[code], None

    def _category_groups(self, rows: np.ndarray | None) -> list[GroupRow]:
        if self.patterns is None:
            raise UsageError("no pattern table for this workload")
        p = self.profile
        inside = None
        if rows is not None:
            inside = np.zeros(len(p), dtype=bool)
            inside[rows] = True
        out = []
        for category in PATTERN_CATEGORIES:
            hit_rows = self.patterns.rows(category)
            if inside is not None:
                hit_rows = hit_rows[inside[hit_rows]]
            if len(hit_rows):
                out.append(GroupRow(key=category, id=None, count=len(hit_rows),
                                    samples=int(p.samples[hit_rows].sum()),
                                    share=_share(p.value[hit_rows].sum(), p.total)))  # fmt: skip
        return out

    # --- guides -----------------------------------------------------------------------

    def search_guides(self, query: str, k: int = 5) -> GuideResult:
        """Guide sections by BM25 relevance (free text; headings count double)."""
        _check_limit(k, MAX_GUIDES)
        hits = [
            GuideHit(id=m.id, doc=m.doc, heading=m.heading, line=m.line, score=m.score,
                     text=m.text[:GUIDE_EXCERPT], cut=len(m.text) > GUIDE_EXCERPT,
                     snippet=m.snippet, highlights=list(m.highlights))
            for m in self.text.search_guides(query, k)
        ]  # fmt: skip
        return GuideResult(query=query, hits=hits)

    # --- rows -> results --------------------------------------------------------------

    def top(self, rows: np.ndarray, limit: int) -> np.ndarray:
        """The ``limit`` rows with most samples (ties: lower PC), in that order."""
        samples = self.profile.samples
        if len(rows) > limit:
            # Keep everything tied with the limit-th largest, then sort exactly.
            kth = np.partition(samples[rows], len(rows) - limit)[len(rows) - limit]
            rows = rows[samples[rows] >= kth]
        order = np.lexsort((self.profile.pc[rows], -samples[rows]))
        return rows[order][:limit]

    def hits(self, rows: np.ndarray) -> list[Hit]:
        p = self.profile
        first_rows = p.windows.first_row  # one window's first PC each (not all: 56k at 1M rows)
        out = []
        for r in (int(x) for x in rows):
            f, m = int(p.function[r]), int(p.module[r])
            pc = int(p.pc[r])
            out.append(Hit(
                id=pc_id(pc), pc=hex_pc(pc), asm=p.asm(r),
                function=p.function_names[f] if f >= 0 else None,
                window=win_id(int(p.pc[first_rows[p.window[r]]])), samples=int(p.samples[r]),
                share=_share(p.value[r], p.total), module=p.modules[m] if m >= 0 else None,
            ))  # fmt: skip
        return out


def _check_limit(limit: int, most: int) -> None:
    if not 1 <= limit <= most:
        raise UsageError(f"limit must be between 1 and {most}, not {limit}")


def _share(value, total: int) -> float:
    return float(value) / total if total else 0.0


def _parse_hex(text: str) -> int:
    try:
        return int(text, 16)
    except ValueError:
        return -1


def _first_pcs(p: Profile) -> np.ndarray:
    """Lowest PC of each function (what a hidden function's ``fn:0x…`` ID names)."""
    return p.pc[p.functions.first_row].astype(np.int64) if len(p.function_names) else (
        np.zeros(0, dtype=np.int64)
    )


_COUNTED = re.compile(r"\{(\d+)(?:,(\d*))?\}")


def _contains(series: pl.Series, pattern: str, ascii_text: bool = False) -> pl.Series:
    """Rows whose text the regex matches (case-insensitively), bounded (see module doc)."""
    if len(pattern) > MAX_REGEX:
        raise UsageError(f"regex longer than {MAX_REGEX} characters")
    if not pattern:
        raise UsageError("empty regex")
    for match in _COUNTED.finditer(pattern):  # `\w{1000}` alone takes 0.4 s to compile
        if any(int(n) > MAX_REPEAT for n in match.groups() if n):
            raise UsageError(f"regex repeats more than {MAX_REPEAT} times: {match.group(0)}")
    # The text is lower case: a pattern with no capital letter needs no (?i), which
    # keeps Rust regex's fast literal search; capitals (`LDR`, `\D`, `\S`) need it,
    # unless they are only letters to match (no escape, no `(?U)` flag): then lower case.
    plain = pattern.isascii() and "\\" not in pattern and "(?" not in pattern
    regex = pattern.lower() if plain else pattern
    flags = "(?i)" if any(c.isupper() for c in regex) else ""
    if ascii_text and regex.isascii():
        try:  # ASCII \b, \w, \d: same answers on ASCII text, up to 2x faster
            return series.str.contains("(?-u)" + flags + regex).fill_null(False)
        except pl.exceptions.PolarsError:
            pass  # `.`, `\W`, `[^x]` may match non-UTF-8 bytes in ASCII mode: not allowed
    try:
        return series.str.contains(flags + regex).fill_null(False)
    except pl.exceptions.PolarsError as exc:
        lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
        reason = next((line for line in lines if line.startswith("error:")), lines[0])
        raise UsageError(f"bad regex '{pattern}': {reason.removeprefix('error: ')}") from None
