"""Tantivy's parsed query read from its Debug form: every form the parser gives, escapes,
and an unknown form refused rather than misread."""

import pytest
import tantivy

from pcscope.index.parsed_query import (
    BoolNode,
    Bound,
    EmptyNode,
    PhraseNode,
    RangeNode,
    Term,
    TermNode,
    UnknownQuery,
    read_parsed,
)
from pcscope.index.text import _instruction_schema, _register


@pytest.fixture(scope="module")
def parser():
    return _register(tantivy.Index(_instruction_schema()))


def parse(parser, text):
    return read_parsed(repr(parser.parse_query(text, ["asm", "function"],
                                               conjunction_by_default=True)))  # fmt: skip


def test_boolean_of_terms_and_phrases(parser):
    either = BoolNode((("Should", PhraseNode(0, ((0, "ldr"), (1, "x0")))),
                       ("Should", TermNode(Term(3, "ldr x0")))), 1)  # fmt: skip
    assert parse(parser, '"ldr x0" -mnemonic:STR') == BoolNode(
        (("Must", either), ("MustNot", TermNode(Term(1, "str")))), 0)


def test_ranges_and_empty(parser):
    assert parse(parser, "rank:[3 TO 9}") == RangeNode(
        5, Bound(Term(5, 3), True), Bound(Term(5, 9), False))
    assert parse(parser, "rank:>4") == RangeNode(5, Bound(Term(5, 4), False), Bound(None, False))
    assert parse(parser, "asm:[a TO *]") == RangeNode(
        0, Bound(Term(0, "a"), True), Bound(None, False))
    assert parse(parser, 'asm:"*"') == EmptyNode()


@pytest.mark.parametrize(
    ("value", "expected"),
    [('a\\"b', 'a"b'), ("back\\\\slash", "back\\slash"), ("t\\tab", "t\tab"),
     ("\\u{1b}x", "\x1bx"), ("\\u{7f}", "\x7f"), ("ünï", "ünï")],
)
def test_string_escapes(value, expected):
    text = f'Query(TermQuery(Term(field=3, type=Str, "{value}")))'
    assert read_parsed(text) == TermNode(Term(3, expected))


def test_function_values_round_trip(parser):
    for name in ['a"b', "tab\there", "\x01ctl", "<unknown_03>", "Ünï"]:
        quoted = name.replace("\\", "\\\\").replace('"', '\\"')
        node = parse(parser, f'function:"{quoted}"')
        assert node == TermNode(Term(3, name.lower()))


@pytest.mark.parametrize(
    "text",
    ["Query(FuzzyTermQuery { term: Term(field=0, type=Str, \"x\") })",
     "Query(TermQuery(Term(field=0, type=I64, 5)))",
     'Query(PhraseQuery { field: Field(0), phrase_terms: [(0, Term(field=0, type=Str, "a"))], slop: 2 })',
     "Query(EmptyQuery) trailing", "Query(TermQuery(Term(field=0, type=Str, \"a\\q\")))"],
)
def test_unknown_forms_are_refused(text):
    with pytest.raises(UnknownQuery):
        read_parsed(text)
