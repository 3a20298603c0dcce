"""Tantivy's parsed instruction query as typed nodes.

Tantivy's query parser decides what a query means (precedence of ``AND``/``OR``, ``+``/``-``,
how each field's analyzer splits a value into terms); pcscope.index.instructions then
answers the nodes from arrays. tantivy-py exposes a parsed query only through its Rust
``Debug`` form (``repr``), so that form is read here: a ``BooleanQuery`` of occurs and
subqueries, ``TermQuery``, ``PhraseQuery`` (slop is always 0: pcscope.index.text keeps ``~``
out of the parser), ``RangeQuery`` and ``EmptyQuery``. Any other form is an error naming
it, never a silent wrong answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Occur = Literal["Must", "Should", "MustNot"]


@dataclass(frozen=True)
class Term:
    field: int  # the field's number in the schema
    value: str | int  # the analyzed term (Str) or number (U64)


@dataclass(frozen=True)
class TermNode:
    term: Term


@dataclass(frozen=True)
class PhraseNode:
    field: int
    terms: tuple[tuple[int, str], ...]  # (position offset, term)


@dataclass(frozen=True)
class Bound:
    term: Term | None  # None: unbounded
    included: bool


@dataclass(frozen=True)
class RangeNode:
    field: int
    lower: Bound
    upper: Bound


@dataclass(frozen=True)
class BoolNode:
    clauses: tuple[tuple[Occur, Node], ...]
    minimum_should: int


@dataclass(frozen=True)
class EmptyNode:
    pass


Leaf = TermNode | PhraseNode | RangeNode
Node = Leaf | BoolNode | EmptyNode


class UnknownQuery(ValueError):
    """A parsed form this reader does not know (a newer Tantivy may print others)."""


def read_parsed(text: str) -> Node:
    """The node tree of ``repr(parsed_query)``."""
    reader = _Reader(text)
    reader.expect("Query")
    reader.expect("(")
    node = reader.node()
    reader.expect(")")
    reader.end()
    return node


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|\S', re.S)
_ESCAPE = re.compile(r"\\(u\{[0-9a-fA-F]+\}|.)", re.S)
_ESCAPES = {"n": "\n", "r": "\r", "t": "\t", "0": "\0", "\\": "\\", '"': '"', "'": "'"}


def _unescape(literal: str) -> str:
    """A Rust ``Debug`` string literal's text."""

    def one(match: re.Match[str]) -> str:
        code = match.group(1)
        if code.startswith("u{"):
            return chr(int(code[2:-1], 16))
        if code not in _ESCAPES:
            raise UnknownQuery(f"escape \\{code}")
        return _ESCAPES[code]

    return _ESCAPE.sub(one, literal[1:-1])


class _Reader:
    def __init__(self, text: str) -> None:
        self.tokens = _TOKEN.findall(text)  # any other character is a token of its own
        self.at = 0

    def peek(self) -> str:
        return self.tokens[self.at] if self.at < len(self.tokens) else ""

    def take(self) -> str:
        token = self.peek()
        if not token:
            raise UnknownQuery("end of text")
        self.at += 1
        return token

    def expect(self, *tokens: str) -> None:
        for token in tokens:
            got = self.take()
            if got != token:
                raise UnknownQuery(f"{got!r} where {token!r} was due")

    def end(self) -> None:
        if self.at != len(self.tokens):
            raise UnknownQuery(f"{self.peek()!r} after the query")

    def number(self) -> int:
        token = self.take()
        if not re.fullmatch(r"\d+", token):
            raise UnknownQuery(f"{token!r} where a number was due")
        return int(token)

    def node(self) -> Node:
        kind = self.take()
        if kind == "EmptyQuery":
            return EmptyNode()
        if kind == "TermQuery":
            self.expect("(")
            term = self.term()
            self.expect(")")
            return TermNode(term)
        if kind == "BooleanQuery":
            self.expect("{", "subqueries", ":", "[")
            clauses: list[tuple[Occur, Node]] = []
            while self.peek() != "]":
                self.expect("(")
                occur = self.take()
                if occur not in ("Must", "Should", "MustNot"):
                    raise UnknownQuery(f"occur {occur!r}")
                self.expect(",")
                clauses.append((occur, self.node()))  # type: ignore[arg-type]
                self.expect(")")
                if self.peek() == ",":
                    self.take()
            self.expect("]", ",", "minimum_number_should_match", ":")
            minimum = self.number()
            self.expect("}")
            return BoolNode(tuple(clauses), minimum)
        if kind == "PhraseQuery":
            self.expect("{", "field", ":", "Field", "(")
            field = self.number()
            self.expect(")", ",", "phrase_terms", ":", "[")
            terms = []
            while self.peek() != "]":
                self.expect("(")
                offset = self.number()
                self.expect(",")
                term = self.term()
                self.expect(")")
                if not isinstance(term.value, str):
                    raise UnknownQuery("a phrase of numbers")
                terms.append((offset, term.value))
                if self.peek() == ",":
                    self.take()
            self.expect("]", ",", "slop", ":")
            if self.number() != 0:
                raise UnknownQuery("a phrase with slop")
            self.expect("}")
            return PhraseNode(field, tuple(terms))
        if kind == "RangeQuery":
            self.expect("{", "bounds", ":", "BoundsRange", "{", "lower_bound", ":")
            lower = self.bound()
            self.expect(",", "upper_bound", ":")
            upper = self.bound()
            self.expect("}", "}")
            fields = {b.term.field for b in (lower, upper) if b.term is not None}
            if len(fields) != 1:
                raise UnknownQuery("a range without a field")
            return RangeNode(fields.pop(), lower, upper)
        raise UnknownQuery(kind)

    def bound(self) -> Bound:
        kind = self.take()
        if kind == "Unbounded":
            return Bound(None, False)
        if kind not in ("Included", "Excluded"):
            raise UnknownQuery(f"bound {kind!r}")
        self.expect("(")
        term = self.term()
        self.expect(")")
        return Bound(term, kind == "Included")

    def term(self) -> Term:
        self.expect("Term", "(", "field", "=")
        field = self.number()
        self.expect(",", "type", "=")
        kind = self.take()
        self.expect(",")
        raw = self.take()
        self.expect(")")
        if kind == "Str" and raw.startswith('"'):
            return Term(field, _unescape(raw))
        if kind == "U64" and raw.isdigit():
            return Term(field, int(raw))
        raise UnknownQuery(f"term of type {kind}")
