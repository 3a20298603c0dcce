"""Full-text search of instructions and guide sections.

Instructions (pcscope.index.instructions answers them from arrays beside the index): the
query is Tantivy's syntax, parsed by Tantivy against this schema, whose fields are

- ``asm``: the text in lower-case words of letters and digits (``ldr``, ``x17``, ``0xe10``;
  ``b.eq`` is the phrase ``b eq``), positions kept for phrase queries. ``operands:`` in a
  query is read as ``asm:``;
- ``mnemonic``: the canonical mnemonic (``b.cs`` and ``b.hs`` are both ``b.hs``, ``movz``
  is ``mov``; queries are canonicalised the same way), exact;
- ``base``: the memory operand's base register (``x16`` also for ``w16``); a query term
  ``[x16`` means ``base:x16``;
- ``function`` (name): exact, case-insensitive (pcscope.index.query resolves ``fn:`` IDs
  to names first);
- ``row`` and ``rank`` (numbers: the row in the profile, and its place in
  samples-descending, PC-ascending order, so a top-N search is exact and deterministic).

``samples``, ``window`` and ``module`` are no fields, they are rewritten before parsing:
samples fall as rank rises, so ``samples:>1000`` is the range of ranks below the count of
rows with more than 1000 samples (``SampleRanks``, from the samples of the rows kept
beside the index); a window (``win:`` ID, exact) and a module (name, case-insensitive) are
runs of consecutive rows, so ``module:libc.so.6`` is a union of ``row`` ranges
(``ValueRows``, kept beside the index). PCs are not searchable terms: PC lookup is exact
through the profile arrays.

Guide sections live in a Tantivy index (``id``, ``doc``, ``heading``, ``text`` with English
stemming; all stored), searched by BM25 with snippets.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import time
import weakref
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
import tantivy

from pcscope.core import isa
from pcscope.core.errors import UsageError
from pcscope.core.ids import win_id
from pcscope.core.profile import Profile
from pcscope.core.readers.guides import GuideSection
from pcscope.index.arrays import mapped
from pcscope.index.instructions import FIELDS, InstructionIndex
from pcscope.index.parsed_query import Node, UnknownQuery, read_parsed

FORMAT = 4  # 4: rows per text counted at rank bounds (3: instructions answered from arrays;
            # 2: Tantivy documents per row)
META = "text.json"
SAMPLES = "samples_by_rank.npy"  # every row's samples, ascending (= rank order reversed)
ROWS = "{}_rows.npz"  # per window / module: its value's row runs
DEFAULT_FIELDS = ("asm", "function")
EXACT_FIELDS = ("mnemonic", "base", "function")
ROW_FIELDS = ("window", "module")  # answered as row ranges
NUMERIC_FIELDS = ("samples", "row", "rank")
FIELD_ALIASES = {"operands": "asm"}
GUIDE_FIELDS = ("heading", "text")
SNIPPET_CHARS = 160  # characters of the best fragment shown per guide match

Progress = Callable[[str], None]


def _analyzers() -> dict[str, tantivy.TextAnalyzer]:
    exact = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw())
    return {"exact_lower": exact.filter(tantivy.Filter.lowercase()).build()}


def _register(index: tantivy.Index) -> tantivy.Index:
    for name, analyzer in _analyzers().items():  # analyzers are not persisted: every open
        index.register_tokenizer(name, analyzer)
    return index


def _instruction_schema() -> tantivy.Schema:
    """The fields queries are parsed against (their analyzers tokenise query values)."""
    b = tantivy.SchemaBuilder()
    for name in FIELDS:  # in pcscope.index.instructions' order: parsed fields are numbers
        if name == "asm":  # Tantivy's "default" analyzer, positions for phrases
            b.add_text_field(name, tokenizer_name="default", index_option="position")
        elif name in EXACT_FIELDS:
            b.add_text_field(name, tokenizer_name="exact_lower", index_option="basic")
        else:
            b.add_unsigned_field(name, fast=True)
    return b.build()


def _guide_schema() -> tantivy.Schema:
    b = tantivy.SchemaBuilder()
    b.add_text_field("id", stored=True, tokenizer_name="raw", index_option="basic")
    b.add_text_field("doc", stored=True, tokenizer_name="raw", index_option="basic")
    for name in GUIDE_FIELDS:
        b.add_text_field(name, stored=True, tokenizer_name="en_stem")
    b.add_unsigned_field("line", stored=True)
    return b.build()


@dataclass(frozen=True)
class GuideMatch:
    id: str
    doc: str
    heading: str
    line: int
    score: float
    text: str  # the whole section text (callers bound it)
    snippet: str = ""  # the best fragment of the text for the query
    highlights: tuple[tuple[int, int], ...] = ()  # matched spans in ``snippet``


def _stored(doc: tantivy.Document, name: str) -> Any:
    value = doc.get_first(name)
    if value is None:
        raise UsageError(f"guide index document without {name!r}: rebuild the index")
    return value


@dataclass(frozen=True)
class BuildStats:
    instructions: int
    guides: int
    seconds: float
    instructions_seconds: float  # the arrays of pcscope.index.instructions
    guides_seconds: float  # the Tantivy guide index


class TextIndex:
    """Open with ``TextIndex.open(dir)``; make with ``TextIndex.build(dir, profile, guides)``."""

    def __init__(self, directory: Path, instructions: InstructionIndex,
                 guides: tantivy.Index, meta: dict) -> None:  # fmt: skip
        self.directory = directory
        self.meta = meta
        self.rows = int(meta["instructions"])
        self._instructions = instructions
        self._parser = _register(tantivy.Index(_instruction_schema()))  # in memory, no documents
        self._samples = SampleRanks(mapped(directory / SAMPLES))
        self._rows: dict[str, ValueRows] = {}  # read on first use (windows: ~2 MB at 1M rows)
        self.guides = GuideIndex(guides, int(meta["guides"]))

    # --- building ---------------------------------------------------------------------

    @classmethod
    def build(
        cls,
        directory: str | Path,
        profile: Profile,
        guides: Sequence[GuideSection] = (),
        *,
        progress: Progress | None = None,
    ) -> TextIndex:
        """Index into ``directory`` (created if missing; must hold no other index)."""
        say = progress or (lambda _msg: None)
        directory = Path(directory)
        started = time.perf_counter()
        directory.mkdir(parents=True, exist_ok=True)
        say("indexing instructions")
        InstructionIndex.build(directory / "instructions", profile)
        np.save(directory / SAMPLES, np.sort(profile.samples), allow_pickle=False)
        for field, rows in ValueRows.of(profile).items():
            rows.save(directory / ROWS.format(field))
        t1 = time.perf_counter()
        say("indexing guides")
        (directory / "guides").mkdir()
        GuideIndex.build(guides, directory / "guides")
        t2 = time.perf_counter()
        stats = BuildStats(len(profile), len(guides), t2 - started, t1 - started, t2 - t1)
        meta = {"format": FORMAT, "instructions": len(profile), "total": profile.total,
                "guides": len(guides), "build": stats.__dict__}  # fmt: skip
        (directory / META).write_text(json.dumps(meta, indent=1), encoding="utf-8")
        return cls.open(directory)

    @staticmethod
    def current(directory: str | Path) -> bool:
        """Whether ``directory`` holds a text index of this format (else: build anew)."""
        try:
            meta = json.loads((Path(directory) / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return False
        return isinstance(meta, dict) and meta.get("format") == FORMAT

    @classmethod
    def open(cls, directory: str | Path) -> TextIndex:
        directory = Path(directory)
        try:
            meta = json.loads((directory / META).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise FileNotFoundError(f"no complete text index in {directory}") from None
        if meta.get("format") != FORMAT:
            raise FileNotFoundError(f"text index in {directory} has another format")
        readable = directory
        if not os.access(directory / "guides", os.W_OK):
            readable = _linked_copy(directory)
        guides = _register(tantivy.Index.open(str(readable / "guides")))
        index = cls(directory, InstructionIndex.open(directory / "instructions"), guides, meta)
        if readable != directory:   # the links go when the index does
            weakref.finalize(index, _remove_links, readable)
        return index

    @property
    def build_stats(self) -> BuildStats:
        return BuildStats(**self.meta["build"])

    # --- instructions -------------------------------------------------------------------

    def parse(self, query: str) -> Node:
        """A query in Tantivy syntax (terms AND-ed, ``field:value``, ``"phrases"``, ``OR``,
        ``-term``, ``samples:>N``), after ``normalize_query``, as Tantivy parses it;
        UsageError if malformed."""
        if len(query) > MAX_QUERY:
            raise UsageError(f"bad query: longer than {MAX_QUERY} characters")
        outside_phrases = re.sub(r'"[^"]*"', "", query)
        if outside_phrases.count("(") != outside_phrases.count(")"):
            raise UsageError(f"bad query {query!r}: unbalanced parentheses")
        text = normalize_query(query)
        if not text.strip():
            raise UsageError("empty query")
        text = " ".join(self._rewrite(token, query) for token in QUERY_TOKEN.findall(text))
        try:
            parsed = self._parser.parse_query(
                text, list(DEFAULT_FIELDS), conjunction_by_default=True
            )
        except ValueError as exc:
            raise UsageError(f"bad query {query!r}: {exc}") from None
        with _answering(query):
            return read_parsed(repr(parsed))

    def _rewrite(self, token: str, query: str) -> str:
        """A normalized ``samples:``, ``window:`` or ``module:`` term as the fields that
        answer it (see the module doc); any other token as it is."""
        match = _FIELD_VALUE.match(token)
        if not match:
            return token
        sign, field, value = match.groups()
        if field == "samples":
            return sign + self._samples.as_ranks(value, query)
        if field in ROW_FIELDS:
            return sign + self._value_rows(field).as_ranges(_unquote(value, query))
        return token

    def _value_rows(self, field: str) -> ValueRows:
        if field not in self._rows:
            self._rows[field] = ValueRows.read(self.directory / ROWS.format(field))
        return self._rows[field]

    def search(self, query: str, limit: int) -> tuple[np.ndarray, int]:
        """Rows of the ``limit`` best hits (samples descending, then PC) and the total."""
        parsed = self.parse(query)
        with _answering(query):
            return self._instructions.top(parsed, limit)

    def matching_rows(self, query: str) -> np.ndarray:
        """Every row the query matches, ascending."""
        parsed = self.parse(query)
        with _answering(query):
            return self._instructions.matching_rows(parsed)

    # --- guides -------------------------------------------------------------------------

    def search_guides(self, query: str, k: int) -> list[GuideMatch]:
        return self.guides.search(query, k)


class GuideIndex:
    """BM25 over guide sections: beside a profile's instructions, or in memory for the
    guides alone (``pcscope guide``)."""

    def __init__(self, index: tantivy.Index, sections: int) -> None:
        self._index = index
        self._searcher = index.searcher()
        self.sections = sections

    @classmethod
    def build(cls, sections: Sequence[GuideSection],
              directory: Path | None = None) -> GuideIndex:  # fmt: skip
        schema = _guide_schema()
        index = tantivy.Index(schema, path=str(directory)) if directory else tantivy.Index(schema)
        writer = index.writer(heap_size=50_000_000, num_threads=1)
        for s in sections:
            writer.add_document(tantivy.Document.from_dict(
                {"id": s.id, "doc": s.doc, "heading": s.heading, "text": s.text,
                 "line": s.line},
                index.schema,
            ))  # fmt: skip
        writer.commit()
        writer.wait_merging_threads()
        index.reload()
        return cls(index, len(sections))

    def search(self, query: str, k: int) -> list[GuideMatch]:
        """Headings weigh double; free text is fine, and so are "phrases". Each match
        carries its best fragment of the text with the matched spans."""
        if not query.strip() or self.sections == 0:
            return []
        parsed, _errors = self._index.parse_query_lenient(
            query, list(GUIDE_FIELDS), field_boosts={"heading": 2.0}
        )
        result = self._searcher.search(parsed, k)
        snippets = tantivy.SnippetGenerator.create(self._searcher, parsed, self._index.schema,
                                                   "text")
        snippets.set_max_num_chars(SNIPPET_CHARS)
        out = []
        for score, address in result.hits:
            doc = self._searcher.doc(address)
            snippet = snippets.snippet_from_doc(doc)
            fragment = snippet.fragment()
            spans = _char_spans(fragment, [(r.start, r.end) for r in snippet.highlighted()])
            out.append(GuideMatch(_stored(doc, "id"), _stored(doc, "doc"),
                                  _stored(doc, "heading"), int(_stored(doc, "line")),
                                  float(score), _stored(doc, "text"), fragment,
                                  spans))  # fmt: skip
        return out


def _char_spans(text: str, byte_spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    """Tantivy gives UTF-8 byte offsets; Python strings count characters."""
    raw = text.encode("utf-8")

    def chars(at: int) -> int:
        return len(raw[:at].decode("utf-8", errors="ignore"))

    return tuple((chars(start), chars(end)) for start, end in byte_spans)


# --- query text ------------------------------------------------------------------------


_FIELDS = {"asm"} | set(EXACT_FIELDS) | set(ROW_FIELDS) | set(NUMERIC_FIELDS) | set(FIELD_ALIASES)
MAX_QUERY = 1000  # characters in a query
QUERY_TOKEN = re.compile(r'[+-]?[a-z_]+:[\[{][^\]}]*[\]}]|"[^"]*"|\S+')  # a range is one token
_FIELD_VALUE = re.compile(r"^([+-]?)([a-z_]+):(.+)$", re.S)
_CONDITIONAL = re.compile(r"^bc?\.[a-z]+$", re.IGNORECASE)
_SPECIAL = re.compile(r'([\[\]{}()!^~:"\\*?<>=+/])')


_QUOTED = re.compile(r'^"((?:[^"\\]|\\.)*)"$', re.S)
_SAMPLES_COMPARE = re.compile(r"^(>=|<=|>|<)?(\d+)$")
_SAMPLES_RANGE = re.compile(r"^([\[{])\s*(\*|\d+)\s+TO\s+(\*|\d+)\s*([\]}])$")
_MAX_U64 = (1 << 64) - 1


@dataclass(frozen=True)
class SampleRanks:
    """Samples conditions as rank ranges: rank order is samples descending, so the rows
    with more than N samples are exactly the ranks below their count."""

    ascending: np.ndarray  # every row's samples, sorted

    def as_ranks(self, value: str, query: str) -> str:
        """The ``rank:`` range of the rows a ``samples:`` value selects."""
        bounds = self._bounds(value)
        if bounds is None:
            raise UsageError(f"bad query {query!r}: samples takes a whole number, "
                             f"a comparison (>N, <=N) or a range [N TO M]")
        low, high = bounds
        return f"rank:[{low} TO {high}}}"

    def _bounds(self, value: str) -> tuple[int, int] | None:
        """The ranks [low, high) whose samples meet ``value``, or None if malformed."""
        n = len(self.ascending)
        if value == "*":
            return 0, n
        compare = _SAMPLES_COMPARE.match(value)
        if compare:
            op, number = compare.group(1) or "=", int(compare.group(2))
            if number > _MAX_U64:  # what Tantivy's u64 field refused
                return None
            return {">": (0, self._above(number)), ">=": (0, self._at_least(number)),
                    "<": (self._at_least(number), n), "<=": (self._above(number), n),
                    "=": (self._above(number), self._at_least(number))}[op]  # fmt: skip
        span = _SAMPLES_RANGE.match(value)
        if not span:
            return None
        opening, low, high, closing = span.groups()
        if any(v != "*" and int(v) > _MAX_U64 for v in (low, high)):
            return None
        # the most samples bound the first rank; the fewest, the end
        first = 0 if high == "*" else (
            self._above(int(high)) if closing == "]" else self._at_least(int(high)))
        end = n if low == "*" else (
            self._at_least(int(low)) if opening == "[" else self._above(int(low)))
        return first, end

    def _above(self, number: int) -> int:
        """Rows with more than ``number`` samples."""
        return self._count(number, "right")

    def _at_least(self, number: int) -> int:
        return self._count(number, "left")

    def _count(self, number: int, side: str) -> int:
        n = len(self.ascending)
        if n == 0 or number > int(self.ascending[-1]):
            return 0  # also keeps a number past the array's integer type out of numpy
        return n - int(np.searchsorted(self.ascending, number, side))  # type: ignore[call-overload]


@dataclass(frozen=True)
class ValueRows:
    """The rows of each value of a per-row field, as runs of consecutive rows: windows
    and modules are a run or a few each, so a term is a short union of ``row`` ranges."""

    names: list[str]  # per code, lower case (matched case-insensitively)
    codes: np.ndarray  # per run of rows: its code, ascending
    starts: np.ndarray  # per run: first row (ascending within a code)
    ends: np.ndarray  # per run: end row

    @classmethod
    def of(cls, profile: Profile) -> dict[str, ValueRows]:
        window_ids = [win_id(pc) for pc in profile.windows.first_pcs().tolist()]
        return {"window": cls.from_codes(profile.window, window_ids),
                "module": cls.from_codes(profile.module, profile.modules)}  # fmt: skip

    @classmethod
    def from_codes(cls, codes: np.ndarray, names: Sequence[str]) -> ValueRows:
        starts = np.flatnonzero(np.diff(codes, prepend=np.int64(-2)))
        ends = np.append(starts[1:], len(codes))
        run_codes = codes[starts]
        valued = run_codes >= 0  # rows without a value have no term
        order = np.lexsort((starts[valued], run_codes[valued]))
        return cls([n.lower() for n in names], run_codes[valued][order].astype(np.int64),
                   starts[valued][order].astype(np.int64), ends[valued][order].astype(np.int64))

    def save(self, path: Path) -> None:
        with path.open("wb") as f:
            np.savez(f, codes=self.codes, starts=self.starts, ends=self.ends,
                     names=np.array(json.dumps(self.names)))  # fmt: skip

    @classmethod
    def read(cls, path: Path) -> ValueRows:
        with np.load(path) as saved:
            return cls(json.loads(str(saved["names"])), saved["codes"], saved["starts"],
                       saved["ends"])  # fmt: skip

    @cached_property
    def _codes_of(self) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for code, name in enumerate(self.names):
            out.setdefault(name, []).append(code)
        return out

    def as_ranges(self, value: str) -> str:
        """The rows holding ``value`` (case-insensitive) as ``row`` ranges."""
        spans = sorted(
            (int(self.starts[i]), int(self.ends[i]))
            for code in self._codes_of.get(value.lower(), ())
            for i in range(*np.searchsorted(self.codes, [code, code + 1]).tolist())
        )
        ranges = [f"row:[{start} TO {end}}}" for start, end in spans]
        if not ranges:
            return "row:[0 TO 0}"  # matches nothing
        return ranges[0] if len(ranges) == 1 else f"({' OR '.join(ranges)})"


def _unquote(value: str, query: str) -> str:
    """A term's value as Tantivy reads it: bare, or in quotes with ``\\`` escapes."""
    if not value.startswith('"'):
        return value
    quoted = _QUOTED.match(value)
    if not quoted:
        raise UsageError(f"bad query {query!r}: unterminated quotes")
    return re.sub(r"\\(.)", r"\1", quoted.group(1))


@contextmanager
def _answering(query: str) -> Iterator[None]:
    """A parsed form pcscope cannot answer, as the user's error (never a wrong answer)."""
    try:
        yield
    except UnknownQuery as exc:
        raise UsageError(f"bad query {query!r}: cannot answer Tantivy's {exc}") from None


def _linked_copy(directory: Path) -> Path:
    """Tantivy takes a lock file beside the index even to read it, so an index in a folder
    this user cannot write is opened through a private folder of symlinks to its files."""
    links = Path(tempfile.mkdtemp(prefix="pcscope-text-"))
    (links / "guides").mkdir()
    for f in (directory / "guides").iterdir():
        if not f.name.startswith(".tantivy-"):   # lock files are made anew
            os.symlink(f.resolve(), links / "guides" / f.name)
    return links


def _remove_links(links: Path) -> None:
    for f in (links / "guides").iterdir():
        f.unlink()
    (links / "guides").rmdir()
    links.rmdir()


def normalize_query(query: str) -> str:
    """Make asm-flavoured input valid Tantivy syntax without changing what it asks:

    - ``[x16`` / ``[w16,`` (a memory operand) -> ``base:x16``; ``base:w16`` -> ``base:x16``;
    - ``b.cs`` (a conditional branch) -> ``mnemonic:b.hs`` (one term: fast and exact);
    - ``mnemonic:b.cs`` -> ``mnemonic:b.hs`` (every row also carries its canonical
      mnemonic, so any spelling of an instruction finds every spelling of it);
    - ``function:<unknown_03>``, ``window:win:0x10`` -> quoted values (not ranges);
    - evidence IDs ``win:0x10`` / ``fn:name`` -> ``window:"win:0x10"`` / ``function:name``;
    - ``operands:`` -> ``asm:``;
    - other characters Tantivy reserves are escaped in plain terms (``#8]`` stays a term)."""
    return " ".join(_normalize_token(token) for token in QUERY_TOKEN.findall(query))


def _normalize_token(token: str) -> str:
    if token.startswith('"') or token in ("AND", "OR", "NOT", "(", ")"):
        return token  # phrases and operators are Tantivy's own syntax
    sign = token[0] if token[0] in "+-" and len(token) > 1 else ""
    if _CONDITIONAL.match(token[len(sign) :]):  # one exact term, not the phrase "b ne"
        return f"{sign}mnemonic:{isa.normalize_mnemonic(token[len(sign) :])}"
    if token.startswith("["):
        reg = isa.parse_register(token.strip("[],!"))
        if reg is not None:
            return f"base:{reg}"
    match = _FIELD_VALUE.match(token)
    if match:
        sign, field, value = match.groups()
        if field == "win":
            return f'{sign}window:"win:{_quote(value)}"'
        if field == "fn":
            return sign + _field_term("function", value)
        if field == "pc":
            raise UsageError("PCs are not searchable terms: look a PC up with `pcscope show`")
        if field in _FIELDS:
            return sign + _field_term(FIELD_ALIASES.get(field, field), value)
        raise UsageError(f"bad query: unknown field {field!r} (fields: "
                         f"{', '.join(sorted(_FIELDS))}, win, fn)")
    return sign + _SPECIAL.sub(r"\\\1", token[len(sign) :])


def _field_term(field: str, value: str) -> str:
    if field in NUMERIC_FIELDS or value.startswith('"') or " " in value:
        return f"{field}:{value}"
    if field == "base":
        value = isa.parse_register(value) or value
    elif field == "mnemonic":
        value = isa.normalize_mnemonic(value)
    return f'{field}:"{_quote(value)}"' if _SPECIAL.search(value) else f"{field}:{value}"


def _quote(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')
