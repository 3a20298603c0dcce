"""Everything indexed about one set of inputs, as the engine, CLI and TUI see it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pcscope.core.errors import UsageError
from pcscope.core.profile import HotSelection, Profile

if TYPE_CHECKING:
    from pcscope.core.alp import AlpTable
    from pcscope.core.mechanisms import MechanismTable
    from pcscope.core.pattern_table import PatternTable
    from pcscope.core.queries import Queries
    from pcscope.core.readers.guides import GuideSection


@dataclass
class Workload:
    """The profile is memory-mapped; the guides, ALP and text index load on first use."""

    profile: Profile
    patterns: PatternTable
    guide_loader: Callable[[], list[GuideSection]] = field(repr=False)
    folder: Path
    alp_loader: Callable[[], AlpTable | None] = field(repr=False)
    text_loader: Callable[[], Any] = field(repr=False)
    mca_loader: Callable[[], dict[int, dict]] = field(repr=False, default=dict)
    mechanism_loader: Callable[[], MechanismTable] | None = field(repr=False, default=None)
    # The index provides the query engine (core/queries.py holds the protocol it meets).
    query_loader: Callable[[Workload], Queries] | None = field(repr=False, default=None)
    alp_path: Path | None = None
    guide_paths: tuple[Path, ...] = ()

    @cached_property
    def guides(self) -> list[GuideSection]:
        return self.guide_loader()

    @cached_property
    def alp(self) -> AlpTable | None:
        return self.alp_loader()

    @cached_property
    def mca(self) -> dict[int, dict]:
        """Static llvm-mca predictions by PC (evidence ``mca:0x…``, basis *predicted*)."""
        return self.mca_loader()

    @cached_property
    def mechanisms(self) -> MechanismTable:
        """Pattern sites grouped into mechanisms (evidence ``mech:<kind>:0x…``)."""
        from pcscope.core.mechanisms import MechanismTable

        return self.mechanism_loader() if self.mechanism_loader else MechanismTable()

    @cached_property
    def text(self) -> Any:
        """The Tantivy index (pcscope.index.text.TextIndex), built on first use if needed."""
        return self.text_loader()

    @cached_property
    def queries(self) -> Queries:
        """Search, regex, grouping and guide retrieval over this workload's index."""
        if self.query_loader is None:
            raise UsageError("no query engine for this workload")
        return self.query_loader(self)

    @property
    def text_ready(self) -> bool:
        """Whether the text index is open already (a first use would open or build it)."""
        return self.loaded("text")

    def loaded(self, part: str) -> bool:
        """Whether ``part`` (alp, guides, mca, mechanisms, text) has loaded: a first use
        would read, decode or build it. Asking never waits for a load under way."""
        return part in self.__dict__

    def hot(self, top: int | None = None, coverage: float = 0.90) -> HotSelection:
        return self.profile.hot_windows(top=top, coverage=coverage)
