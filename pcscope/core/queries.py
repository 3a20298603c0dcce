"""What the workload's queries answer, and the protocol the index implements.

The core asks for search, regex, grouping and guide retrieval through ``Queries``; the
index provides the engine (pcscope.index.query.QueryEngine) and hands it to the
``Workload`` it opens, so nothing in the core imports the index.
"""

from __future__ import annotations

from typing import Literal, Protocol

from pydantic import BaseModel, ConfigDict

Field = Literal["asm", "mnemonic"]
GroupBy = Literal["mnemonic", "function", "window", "category", "module"]


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True)


class Hit(_Model):
    """One instruction (docs/formats.md §5 search hit, plus ``share`` and ``module``)."""

    id: str  # pc:0x…
    pc: str
    asm: str
    function: str | None
    window: str  # win:0x…
    samples: int
    share: float  # the row's value (cycles, else samples) / profile total
    module: str | None


class SearchResult(_Model):
    query: str
    total: int
    truncated: bool
    hits: list[Hit]
    kind: Literal["search", "regex"] = "search"
    field: str = "asm"


class GroupRow(_Model):
    key: str  # the mnemonic, function name, window ID, category or module ("(none)")
    id: str | None  # fn:… / win:… evidence ID where the key has one
    count: int  # instructions
    samples: int
    share: float  # value (cycles, else samples) / profile total


class GroupResult(_Model):
    by: str
    where: str | None
    instructions: int  # rows grouped (those `where` matched)
    total: int  # groups
    truncated: bool
    groups: list[GroupRow]


class GuideHit(_Model):
    id: str  # guide:<doc>/<section>
    doc: str
    heading: str
    line: int
    score: float
    text: str  # the section text, cut to GUIDE_EXCERPT characters
    cut: bool  # whether the text was cut
    snippet: str = ""  # the best fragment for the query
    highlights: list[tuple[int, int]] = []  # matched character spans in ``snippet``


class GuideResult(_Model):
    query: str
    hits: list[GuideHit]


class Queries(Protocol):
    """Search primitives over one workload, each with a typed, bounded result."""

    def search(self, query: str, limit: int = 20) -> SearchResult:
        """Instructions a Tantivy query matches, heaviest first."""
        ...

    def regex(self, pattern: str, field: Field = "asm", limit: int = 20,
              deadline: float | None = None) -> SearchResult:
        """Instructions (or mnemonics) a regular expression matches, heaviest first; work
        stops at ``deadline`` (time.monotonic())."""
        ...

    def group(self, by: GroupBy, where: str | None = None, limit: int = 20) -> GroupResult:
        """Instructions grouped by a key, optionally only those a query matches."""
        ...

    def search_guides(self, query: str, k: int = 5) -> GuideResult:
        """Guide sections ranked by BM25."""
        ...
