"""Instruction search answered from arrays beside the index.

A big profile repeats its instruction texts (256k distinct texts in 1M rows), and every
searchable field but ``function`` is a property of the text: the words of ``asm``, the
canonical ``mnemonic``, the memory ``base``. So the terms index the distinct texts, and a
text set becomes rows through the text code of each row:

- per field, the sorted terms and, per term, its items (``Postings``): the token positions
  of ``asm`` (for phrases), the texts of ``mnemonic`` and ``base``, the rows of ``function``;
- the rows in rank order (samples descending, then PC) with each one's text, and per text
  its rank positions, so the first hits in rank order are the best and a hit count is a sum
  over texts;
- per text, its rows ranked before each of a few evenly spaced rank positions
  (``block_counts``), so a hit count within a rank range (``samples:>1000 ldr``) is a sum
  over the term's texts plus a scan of the rank positions between an end of the range and
  the nearest of those positions, whatever the range's size.

A query planned the way a database would: a conjunction of text terms and a rank range
starts from the cheaper side by estimated size, listing the texts' rank positions when
they are few, scanning the range in rank order when hits are dense.

Tantivy parses the query (pcscope.index.parsed_query) and tokenises its values with the
fields' analyzers; the texts are tokenised the way Tantivy's ``default`` analyzer does
(runs of letters and digits, lower case, tokens of 40 bytes or more dropped but counted
in positions): vectorised for ASCII texts, by Tantivy itself for the others. Answering
from arrays is what makes a 200k-hit term a millisecond: tantivy-py hands hits back one
Python object each (~2 µs).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal, cast

import numpy as np
import polars as pl
import tantivy

from pcscope.core import isa
from pcscope.core.asmtext import AsmScan, asm_series
from pcscope.core.profile import Profile
from pcscope.index.arrays import mapped
from pcscope.index.parsed_query import (
    BoolNode,
    Bound,
    EmptyNode,
    Leaf,
    Node,
    Occur,
    PhraseNode,
    RangeNode,
    TermNode,
    UnknownQuery,
)

FIELDS = ("asm", "mnemonic", "base", "function", "row", "rank")  # schema order = field number
TEXT_FIELDS = ("asm", "mnemonic", "base")  # properties of the instruction text
LONG_TOKEN = 40  # bytes: Tantivy's default analyzer drops longer tokens
SMALL = 1 << 17  # rank positions worth listing to narrow where a query is evaluated
_SCAN = 4096  # rank positions looked at first when the best hits are searched in order
_BLOCKS = 16  # rank positions counted per text: a few MB per 256k texts, at most a
              # sixteenth of the rows scanned at each end of a range
_REGISTER_NAMES = [f"x{n}" for n in range(31)] + ["sp"]  # by asmtext.register_code


def tantivy_lower(values: list[str]) -> list[str]:
    """Lower case as Tantivy's LowerCaser (ASCII as Python; other text by Tantivy: it
    lower-cases each character alone, without Python's final-sigma rule)."""
    lower = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.raw()).filter(
        tantivy.Filter.lowercase()).build()  # fmt: skip
    return [v.lower() if v.isascii() else "".join(lower.analyze(v)) for v in values]


@dataclass(frozen=True)
class Postings:
    """One field's sorted terms (UTF-8 bytes) and each term's items, ascending:
    term ``i`` owns ``items[offsets[i]:offsets[i + 1]]``."""

    terms: np.ndarray  # bytes (S), sorted
    offsets: np.ndarray
    items: np.ndarray

    @classmethod
    def of_codes(cls, codes: np.ndarray, names: list[str]) -> Postings:
        """Items (indices into ``codes``) by the term of their code (-1 or out of range:
        none); ``names`` are the terms as indexed."""
        vocab = sorted(set(names))
        term_of_name = np.searchsorted(np.array(vocab, dtype=object), np.array(names, dtype=object))
        known = (codes >= 0) & (codes < len(names))
        items = np.flatnonzero(known)
        return cls.of_ids(vocab, term_of_name[codes[items]], items)

    @classmethod
    def of_ids(cls, vocab: list[str], ids: np.ndarray, items: np.ndarray) -> Postings:
        order = np.argsort(ids, kind="stable")
        offsets = np.zeros(len(vocab) + 1, dtype=np.int64)
        np.cumsum(np.bincount(ids, minlength=len(vocab)), out=offsets[1:])
        terms = pl.Series(vocab, dtype=pl.String).cast(pl.Binary).to_numpy().astype(bytes)
        return cls(terms, offsets, items[order].astype(np.int32))

    def save(self, directory: Path, name: str) -> None:
        for part in ("terms", "offsets", "items"):
            np.save(directory / f"{name}_{part}.npy", getattr(self, part), allow_pickle=False)

    @classmethod
    def load(cls, directory: Path, name: str) -> Postings:
        return cls(*(mapped(directory / f"{name}_{part}.npy")
                     for part in ("terms", "offsets", "items")))  # fmt: skip

    def span(self, term: str) -> tuple[int, int]:
        """The term ids equal to ``term`` (none or one)."""
        key = term.encode()
        return (int(np.searchsorted(self.terms, key, "left")),
                int(np.searchsorted(self.terms, key, "right")))  # fmt: skip

    def range_span(self, lower: Bound, upper: Bound) -> tuple[int, int]:
        """The term ids between the bounds (Tantivy orders terms by their bytes)."""
        low = 0 if lower.term is None else int(np.searchsorted(
            self.terms, str(lower.term.value).encode(), "left" if lower.included else "right"))
        high = len(self.terms) if upper.term is None else int(np.searchsorted(
            self.terms, str(upper.term.value).encode(), "right" if upper.included else "left"))
        return low, max(low, high)

    def items_of(self, span: tuple[int, int]) -> np.ndarray:
        return self.items[self.offsets[span[0]] : self.offsets[span[1]]]


@dataclass(frozen=True)
class _RowLeaf:
    """A leaf that is a property of rows, not of texts."""

    kind: Literal["rows", "row_range", "rank_range"]
    low: int = 0
    high: int = 0
    rows: np.ndarray | None = None  # "rows": sorted


@dataclass(frozen=True)
class _Where:
    """Rank positions a query is evaluated over: a run [low, high) or listed ones."""

    low: int
    high: int
    listed: np.ndarray | None = None  # ascending

    @classmethod
    def of(cls, positions: np.ndarray) -> _Where:
        return cls(0, 0, positions.astype(np.int64))

    def __len__(self) -> int:
        return self.high - self.low if self.listed is None else len(self.listed)

    def take(self, per_rank: np.ndarray) -> np.ndarray:
        return per_rank[self.low : self.high] if self.listed is None else np.take(per_rank, self.listed)

    def ranks(self) -> np.ndarray:
        return np.arange(self.low, self.high) if self.listed is None else self.listed

    def within(self, low: int, high: int) -> np.ndarray:
        if self.listed is not None:
            return (self.listed >= low) & (self.listed < high)
        out = np.zeros(len(self), dtype=bool)
        out[max(low - self.low, 0) : max(min(high, self.high) - self.low, 0)] = True
        return out

    def first(self, hit: np.ndarray, limit: int) -> np.ndarray:
        """The first ``limit`` positions that ``hit`` marks (looked for a chunk at a time)."""
        found: list[np.ndarray] = []
        start, size = 0, _SCAN
        while limit > 0 and start < len(hit):
            found.append(self.select(hit[start : start + size], start)[:limit])
            limit -= len(found[-1])
            start += size
            size *= 2
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)

    def select(self, hit: np.ndarray, start: int = 0) -> np.ndarray:
        """The positions ``hit`` marks (``hit`` starting at the ``start``-th position)."""
        if self.listed is None:
            return np.flatnonzero(hit) + self.low + start
        return self.listed[start : start + len(hit)][hit]


class InstructionIndex:
    """Write with ``InstructionIndex.build(dir, profile)``; read with ``open(dir)``."""

    ARRAYS = ("rank_rows", "row_ranks", "rank_texts", "text_ranks", "text_offsets",
              "block_counts", "flat_tokens", "flat_texts")  # fmt: skip

    def __init__(self, arrays: dict[str, np.ndarray], postings: dict[str, Postings]) -> None:
        self.rank_rows = arrays["rank_rows"]  # the row at each rank position
        self.row_ranks = arrays["row_ranks"]  # the rank position of each row
        self.rank_texts = arrays["rank_texts"]  # the text code at each rank position
        self.text_ranks = arrays["text_ranks"]  # rank positions by text, ascending in each
        self.text_offsets = arrays["text_offsets"]
        self.text_rows = np.diff(self.text_offsets)
        self.block_counts = arrays["block_counts"]  # [b, text]: its rows ranked < b * block
        self.flat_tokens = arrays["flat_tokens"]  # asm term id at each token position (-1: long)
        self.flat_texts = arrays["flat_texts"]  # the text of each token position
        self.postings = postings
        self.rows = len(self.rank_rows)
        self.texts = len(self.text_rows)
        self.block = _block_size(self.rows)

    # --- building ---------------------------------------------------------------------

    @classmethod
    def build(cls, directory: Path, profile: Profile) -> None:
        directory.mkdir(parents=True)
        n = len(profile)
        rank_rows = np.lexsort((profile.pc, -profile.samples)).astype(np.int32)
        row_ranks = np.empty(n, dtype=np.int32)
        row_ranks[rank_rows] = np.arange(n, dtype=np.int32)
        texts, codes, first = _distinct_texts(profile)
        rank_texts = codes[rank_rows].astype(np.int32)
        text_offsets = np.zeros(len(texts) + 1, dtype=np.int64)
        np.cumsum(np.bincount(codes, minlength=len(texts)), out=text_offsets[1:])
        flat_tokens, flat_texts, asm = _tokens(texts)
        mnemonics = tantivy_lower([isa.normalize_mnemonic(m) for m in profile.mnemonics])
        bases = AsmScan(profile.asm_column.take(first)).memory_bases().astype(np.int64)
        arrays: dict[str, np.ndarray] = {"rank_rows": rank_rows, "row_ranks": row_ranks, "rank_texts": rank_texts,
                  "text_ranks": np.argsort(rank_texts, kind="stable").astype(np.int32),
                  "text_offsets": text_offsets,
                  "block_counts": _block_counts(rank_texts, len(texts)),
                  "flat_tokens": flat_tokens, "flat_texts": flat_texts}  # fmt: skip
        postings = {
            "asm": asm,
            "mnemonic": Postings.of_codes(profile.mnemonic[first], mnemonics),
            "base": Postings.of_codes(bases, _REGISTER_NAMES),
            "function": Postings.of_codes(profile.function, tantivy_lower(profile.function_names)),
        }
        for name, array in arrays.items():
            np.save(directory / f"{name}.npy", array, allow_pickle=False)
        for name, field in postings.items():
            field.save(directory, name)

    @classmethod
    def open(cls, directory: Path) -> InstructionIndex:
        arrays = {name: mapped(directory / f"{name}.npy") for name in cls.ARRAYS}
        postings = {name: Postings.load(directory, name) for name in (*TEXT_FIELDS, "function")}
        return cls(arrays, postings)

    # --- answers ----------------------------------------------------------------------

    def top(self, node: Node, limit: int) -> tuple[np.ndarray, int]:
        """The rows of the first ``limit`` matches in rank order, and how many match."""
        query = _Evaluation(self, node)
        ranged = query.ranged(node)
        if ranged is not None:
            ranks, count = self._top_ranged(ranged, limit)
            return self.rank_rows[ranks].astype(np.int64), count
        where, hit = query.matching()
        return self.rank_rows[where.first(hit, limit)].astype(np.int64), int(np.count_nonzero(hit))

    def _top_ranged(self, ranged: _Ranged, limit: int) -> tuple[np.ndarray, int]:
        """The first ``limit`` rank positions of a text set within a rank range, and how
        many there are: listed from the texts when they hold few rows for the range's
        density of hits, else looked for in rank order from the range's start."""
        low, high = ranged.low, ranged.high
        if ranged.texts is None:
            return np.arange(low, min(high, low + limit)), high - low
        texts = np.flatnonzero(ranged.texts)
        count = self.count_between(ranged.texts, texts, low, high)
        if count == 0:
            return np.zeros(0, dtype=np.int64), 0
        listed = int(self.text_rows[texts].sum())  # rank positions to list from the texts
        if listed * count <= limit * (high - low):  # fewer than a scan would look at
            ranks = self.expand(texts)
            return ranks[(ranks >= low) & (ranks < high)][:limit], count
        return self._first(ranged.texts, limit, count, low, high), count

    def count_between(self, mask: np.ndarray, texts: np.ndarray, low: int, high: int) -> int:
        """The rows of ``texts`` (the texts in ``mask``) ranked in [low, high)."""
        if low == 0 and high == self.rows:
            return int(self.text_rows[texts].sum())
        return self._ranked_before(mask, texts, high) - self._ranked_before(mask, texts, low)

    def _ranked_before(self, mask: np.ndarray, texts: np.ndarray, rank: int) -> int:
        """The rows of ``texts`` ranked before ``rank``: the counts at the nearest block
        bound, corrected by a scan of the rank positions between it and ``rank``."""
        b = min((rank + self.block // 2) // self.block, len(self.block_counts) - 1)
        bound = min(b * self.block, self.rows)
        at_bound = int(self.block_counts[b][texts].sum())
        scanned = self.rank_texts[min(bound, rank) : max(bound, rank)]
        between = int(np.count_nonzero(np.take(mask, scanned)))
        return at_bound + between if bound <= rank else at_bound - between

    def matching_rows(self, node: Node) -> np.ndarray:
        """Every row the query matches, ascending."""
        query = _Evaluation(self, node)
        if query.text_level(node):
            mask = query.text_mask(node)
            return np.flatnonzero(mask[self.rank_texts[self.row_ranks]]).astype(np.int64)
        where, hit = query.matching()
        return np.sort(self.rank_rows[where.select(hit)]).astype(np.int64)

    def count(self, mask: np.ndarray) -> int:
        """The rows of the texts in ``mask``."""
        return int(self.text_rows[np.flatnonzero(mask)].sum())

    def expand(self, texts: np.ndarray) -> np.ndarray:
        """The rank positions of every row of ``texts``, ascending."""
        starts = self.text_offsets[texts]
        sizes = self.text_offsets[texts + 1] - starts
        total = int(sizes.sum())
        step = np.repeat(starts - (np.cumsum(sizes) - sizes), sizes)
        return np.sort(self.text_ranks[step + np.arange(total)])

    def _first(self, mask: np.ndarray, limit: int, count: int, low: int,
               high: int) -> np.ndarray:  # fmt: skip
        """The first ``limit`` rank positions in [low, high) whose text is in ``mask`` (of
        ``count`` there)."""
        found: list[np.ndarray] = []
        need, start = min(limit, count), low
        size = max(_SCAN, 2 * limit * (high - low) // max(count, 1))
        while need > 0 and start < high:
            stop = min(start + size, high)
            hits = np.flatnonzero(np.take(mask, self.rank_texts[start:stop]))[:need] + start
            found.append(hits)
            need -= len(hits)
            start = stop
            size *= 2
        return np.concatenate(found) if found else np.zeros(0, dtype=np.int64)


@dataclass(frozen=True)
class _Ranged:
    """A query that is a set of texts within a run of rank positions [low, high)."""

    texts: np.ndarray | None  # mask over the texts; None: every text
    low: int
    high: int


class _Evaluation:
    """One query's nodes answered: text-level subtrees as masks over the distinct texts,
    the rest over the rank positions that can match (a superset from the query's own
    narrow conditions: a function's rows, a samples range, a rare term)."""

    def __init__(self, index: InstructionIndex, root: Node) -> None:
        self.index = index
        self.root = root
        self._masks: dict[int, np.ndarray] = {}  # by id of node (the tree outlives both)
        self._leaves: dict[int, _RowLeaf] = {}

    def text_level(self, node: Node) -> bool:
        """Whether the node is a property of texts: of text fields only, or of rows that
        are none or all (an unqualified term is also a function name, mostly no name)."""
        if isinstance(node, BoolNode):
            return all(self.text_level(child) for _, child in node.clauses)
        if isinstance(node, EmptyNode) or FIELDS[_field(node)] in TEXT_FIELDS:
            return True
        return self._row_count(node) in (0, self.index.rows)

    def _row_count(self, node: Leaf) -> int:
        leaf = self.row_leaf(node)
        return len(leaf.rows) if leaf.rows is not None else leaf.high - leaf.low

    def ranged(self, node: Node) -> _Ranged | None:
        """The node as texts within a rank range, if it is one: a text-level node (over
        every rank), a rank range (of every text), or a conjunction of those, less
        text-level exclusions (Tantivy: Shoulds beside a Must count only with a minimum)."""
        if self.text_level(node):
            return _Ranged(self.text_mask(node), 0, self.index.rows)
        if isinstance(node, RangeNode) and FIELDS[node.field] == "rank":
            leaf = self.row_leaf(node)
            return _Ranged(None, leaf.low, leaf.high)
        if not isinstance(node, BoolNode) or node.minimum_should:
            return None
        parts = [self.ranged(c) for o, c in node.clauses if o == "Must"]
        excluded = [c for o, c in node.clauses if o == "MustNot"]
        if not parts or None in parts or not all(self.text_level(c) for c in excluded):
            return None
        ranges = cast(list[_Ranged], parts)
        masks = [p.texts for p in ranges if p.texts is not None]
        masks += [~self.text_mask(c) for c in excluded]
        low = max(p.low for p in ranges)
        high = max(low, min(p.high for p in ranges))
        return _Ranged(np.logical_and.reduce(masks) if masks else None, low, high)

    def text_mask(self, node: Node) -> np.ndarray:
        """The texts a text-level node matches."""
        key = id(node)
        if key not in self._masks:
            self._masks[key] = self._text_mask(node)
        return self._masks[key]

    def _text_mask(self, node: Node) -> np.ndarray:
        ix = self.index
        if isinstance(node, BoolNode):
            return _combine([(o, self.text_mask(c)) for o, c in node.clauses],
                            node.minimum_should, ix.texts)  # fmt: skip
        mask = np.zeros(ix.texts, dtype=bool)
        if isinstance(node, EmptyNode):
            return mask
        if FIELDS[_field(node)] not in TEXT_FIELDS:  # rows: none or all
            mask[:] = self._row_count(node) > 0
            return mask
        if isinstance(node, PhraseNode):
            mask[self._phrase_texts(node)] = True
            return mask
        field = FIELDS[_field(node)]
        postings = ix.postings[field]
        span = (postings.span(str(node.term.value)) if isinstance(node, TermNode)
                else postings.range_span(node.lower, node.upper))  # fmt: skip
        items = postings.items_of(span)
        mask[np.take(ix.flat_texts, items) if field == "asm" else items] = True
        return mask

    def _phrase_texts(self, node: PhraseNode) -> np.ndarray:
        ix = self.index
        if FIELDS[node.field] != "asm":
            raise UnknownQuery("a phrase outside asm")
        asm = ix.postings["asm"]
        spans = [(offset, asm.span(term)) for offset, term in node.terms]
        if any(low == high for _, (low, high) in spans):
            return np.zeros(0, dtype=np.int64)
        # the rarest term's positions, checked for the others at their offsets
        anchor_offset, anchor = min(spans, key=lambda s: int(asm.offsets[s[1][1]] - asm.offsets[s[1][0]]))
        at = np.asarray(asm.items_of(anchor), dtype=np.int64)
        text = ix.flat_texts[at]
        keep = np.ones(len(at), dtype=bool)
        for offset, (term_id, _) in spans:
            other = at + (offset - anchor_offset)
            inside = (other >= 0) & (other < len(ix.flat_tokens))
            other = np.where(inside, other, 0)
            keep &= inside & (ix.flat_tokens[other] == term_id) & (ix.flat_texts[other] == text)
        return text[keep]

    # --- row-level queries --------------------------------------------------------------

    def matching(self) -> tuple[_Where, np.ndarray]:
        """The rank positions the query was evaluated over, and which of them match."""
        where = self.superset(self.root) or _Where(0, self.index.rows)
        return where, self.over(self.root, where)

    def superset(self, node: Node) -> _Where | None:
        """Rank positions holding every match of ``node``, or None (any may)."""
        ix = self.index
        if isinstance(node, EmptyNode) or self.text_level(node):
            mask = self.text_mask(node)
            if ix.count(mask) > SMALL:
                return None
            return _Where.of(ix.expand(np.flatnonzero(mask)))
        if isinstance(node, BoolNode):
            return self._bool_superset(node)
        leaf = self.row_leaf(node)
        if leaf.kind == "rank_range":
            return _Where(leaf.low, leaf.high)
        rows = leaf.rows if leaf.rows is not None else np.arange(leaf.low, leaf.high)
        if len(rows) > SMALL:
            return None
        return _Where.of(np.sort(ix.row_ranks[rows]))

    def _bool_superset(self, node: BoolNode) -> _Where | None:
        if any(o == "Must" for o, _ in node.clauses):
            known = [s for s in (self.superset(c) for o, c in node.clauses if o == "Must") if s]
            return min(known, key=len) if known else None
        should = [self.superset(c) for o, c in node.clauses if o == "Should"]
        if any(s is None for s in should):
            return None
        return _Where.of(np.unique(np.concatenate(
            [s.ranks() for s in should if s is not None] or [np.zeros(0, dtype=np.int64)])))

    def over(self, node: Node, where: _Where) -> np.ndarray:
        """Which of the rank positions ``where`` the node matches."""
        ix = self.index
        if isinstance(node, EmptyNode) or self.text_level(node):
            return np.take(self.text_mask(node), where.take(ix.rank_texts))
        if isinstance(node, BoolNode):
            return _combine([(o, self.over(c, where)) for o, c in node.clauses],
                            node.minimum_should, len(where))  # fmt: skip
        leaf = self.row_leaf(node)
        if leaf.kind == "rank_range":
            return where.within(leaf.low, leaf.high)
        rows = where.take(ix.rank_rows)
        if leaf.kind == "row_range":
            return (rows >= leaf.low) & (rows < leaf.high)
        assert leaf.rows is not None
        if not len(leaf.rows):
            return np.zeros(len(where), dtype=bool)
        at = np.minimum(np.searchsorted(leaf.rows, rows), len(leaf.rows) - 1)
        return leaf.rows[at] == rows

    def row_leaf(self, node: Leaf) -> _RowLeaf:
        key = id(node)
        if key not in self._leaves:
            self._leaves[key] = self._row_leaf(node)
        return self._leaves[key]

    def _row_leaf(self, node: Leaf) -> _RowLeaf:
        ix = self.index
        field = FIELDS[_field(node)]
        if field == "function":
            postings = ix.postings["function"]
            if isinstance(node, TermNode):
                span = postings.span(str(node.term.value))
            elif isinstance(node, RangeNode):
                span = postings.range_span(node.lower, node.upper)
            else:
                raise UnknownQuery("a phrase in function")
            return _RowLeaf("rows", rows=np.sort(postings.items_of(span)))
        if not isinstance(node, RangeNode):
            raise UnknownQuery(f"a term in {field}")
        size = ix.rows
        low = 0 if node.lower.term is None else int(node.lower.term.value) + (not node.lower.included)
        high = size if node.upper.term is None else int(node.upper.term.value) + node.upper.included
        low, high = min(low, size), min(high, size)
        return _RowLeaf("row_range" if field == "row" else "rank_range", low, max(low, high))


def _block_size(rows: int) -> int:
    return max(1, -(-rows // _BLOCKS))


def _block_counts(rank_texts: np.ndarray, texts: int) -> np.ndarray:
    """Per block bound b (0 to _BLOCKS, each ``_block_size`` rank positions on), the rows
    of each text ranked before it."""
    block = _block_size(len(rank_texts))
    bounds = np.minimum(np.arange(_BLOCKS + 1) * block, len(rank_texts))
    counts = np.zeros((_BLOCKS + 1, texts), dtype=np.int32)
    for b in range(1, _BLOCKS + 1):
        counts[b] = counts[b - 1] + np.bincount(rank_texts[bounds[b - 1] : bounds[b]],
                                                minlength=texts)  # fmt: skip
    return counts


def _field(node: Leaf) -> int:
    field = node.term.field if isinstance(node, TermNode) else node.field
    if not 0 <= field < len(FIELDS):
        raise UnknownQuery(f"field {field}")
    return field


def _combine(clauses: list[tuple[Occur, np.ndarray]], minimum: int, size: int) -> np.ndarray:
    """Tantivy's boolean query: every Must, none of MustNot; Shoulds count only when there
    is no Must (then at least one) or a minimum is set; no Must nor Should: nothing."""
    must = [v for o, v in clauses if o == "Must"]
    should = [v for o, v in clauses if o == "Should"]
    if must:
        out = np.logical_and.reduce(must) if len(must) > 1 else must[0].copy()
        if minimum > 0:
            out &= _at_least(should, minimum, size)
    elif should:
        out = _at_least(should, max(1, minimum), size)
    else:
        return np.zeros(size, dtype=bool)
    for excluded in (v for o, v in clauses if o == "MustNot"):
        out &= ~excluded
    return out


def _at_least(masks: list[np.ndarray], minimum: int, size: int) -> np.ndarray:
    if not masks:
        return np.zeros(size, dtype=bool)
    if minimum == 1:
        return np.logical_or.reduce(masks) if len(masks) > 1 else masks[0].copy()
    return np.asarray(np.sum(masks, axis=0, dtype=np.int32) >= minimum)


def _distinct_texts(profile: Profile) -> tuple[pl.Series, np.ndarray, np.ndarray]:
    """The distinct instruction texts (Profile.asm_code), each row's code among them and
    each one's first row."""
    first = profile.asm_firsts()
    return asm_series(profile.asm_distinct), profile.asm_code.astype(np.int64), first


def _tokens(texts: pl.Series) -> tuple[np.ndarray, np.ndarray, Postings]:
    """Each text's tokens as Tantivy's ``default`` analyzer makes them, flattened: the
    term id at each position (-1 for a dropped long token), its text, and the postings."""
    tokens = texts.str.to_lowercase().str.extract_all(r"[a-z0-9]+")
    other = np.flatnonzero(~texts.str.contains(r"^[\x00-\x7f]*$").to_numpy())
    if len(other):  # Unicode letters and digits: Tantivy's own tokenizer
        analyzer = tantivy.TextAnalyzerBuilder(tantivy.Tokenizer.simple()).filter(
            tantivy.Filter.lowercase()).build()  # fmt: skip
        lists = tokens.to_list()
        for i in other.tolist():
            lists[i] = analyzer.analyze(texts[i])
        tokens = pl.Series(lists, dtype=pl.List(pl.String))
    sizes = tokens.list.len().fill_null(0).to_numpy()
    flat = tokens.explode().drop_nulls()
    flat_texts = np.repeat(np.arange(len(texts), dtype=np.int32), sizes)
    kept = (flat.str.len_bytes() < LONG_TOKEN).to_numpy()
    vocab = flat.filter(pl.Series(kept)).unique().sort()
    ids = np.full(len(flat), -1, dtype=np.int32)
    ids[kept] = vocab.search_sorted(flat.filter(pl.Series(kept))).to_numpy()
    positions = np.flatnonzero(kept)
    postings = Postings.of_ids(vocab.to_list(), ids[positions], positions)
    return ids, flat_texts, postings
