"""What a per-operation call tree's advice addresses to whom, carried typed with its mechanism.

pcscope.core.call_cohorts finds the tree, the functions outside it whose calls enter it, and
how the allocator's instructions per operation split between the create/destroy pairs'
members and the rest, which members set up a key and which are one-shot calls. The mechanism's checks say these in words for the reader; the advice
reads them here (a metric is one figure, and these are lists of named parts), so no
sentence is written to be parsed back.
"""

from __future__ import annotations

from dataclasses import dataclass

import msgspec


@dataclass(frozen=True)
class Caller:
    """A function outside the tree whose calls lead into it: where operations are entered."""

    name: str
    module: str  # its module ("" when the profile names none)
    entries: int  # its entry count (far fewer than its calls: it calls from a loop)
    calls: int  # its calls leading into the tree (exact counts)
    entered: tuple[str, ...]  # the members its calls lead to, where one call leads to one
    # its call sites through a PLT stub whose count matches several members (which one it
    # leads to is not in the profile)
    unresolved: int
    entered_modules: tuple[str, ...]  # the modules of the members its calls may lead to

    @property
    def reached(self) -> tuple[str, ...]:
        """The modules of the members it reaches, when its own and all of theirs are known
        (else none: whose module is whose cannot be said)."""
        return self.entered_modules if self.module and all(self.entered_modules) else ()

    @property
    def own_module(self) -> bool:
        """Whether it is in a module of the members it reaches (a library driving its own
        operations), as far as ``reached`` tells."""
        return self.module in self.reached


@dataclass(frozen=True)
class PairedAllocation:
    """The allocator calls (with their helpers and wrappers) the create/destroy pairs'
    members make on every entry, and where the others start."""

    # instructions per operation of the allocator members' calls made for the pairs; None
    # when the profile cannot tell (``unknown`` says why)
    instructions: float | None
    makers: tuple[str, ...]  # the pairs' members making allocator calls on every entry
    # where the other allocator calls begin: the members outside the pairs calling an
    # allocator member on every entry, and the allocator members entered by no such call
    others: tuple[str, ...]
    unknown: str = ""


@dataclass(frozen=True)
class Pair:
    """An object the tree makes and releases on every operation: members named one stem plus
    a making and a releasing suffix, entered as often as each other past a null check."""

    stem: str
    make: str
    release: str
    per_operation: int
    release_entered: int  # the releasing member's entries per operation (more: null checks)

    def text(self) -> str:
        return (f"{self.stem} ({self.make}/{self.release}, {self.per_operation}× per operation"
                + (f"; {self.release} is entered {self.release_entered}× and returns at its "
                   f"null check on the rest" if self.release_entered != self.per_operation
                   else "") + ")")


@dataclass(frozen=True)
class OneShot:
    """A member whose name, followed by Init, Update and Final, names other members too: the
    one-shot call running a whole stream on every operation."""

    name: str
    parts: tuple[str, ...]  # its streaming parts' names: init, update, final


class TreeValues(msgspec.Struct, frozen=True, tag="tree"):
    """A tree's callers (those making at least call_cohorts.CALLER_PART of its operations'
    calls, most calls first), its allocator's instructions per operation, with their
    split (None: no allocator member or no pair), its key set-up, its one-shot calls and its
    create/destroy pairs (``TreeValues()``: none)."""

    callers: tuple[Caller, ...] = ()
    allocator: float = 0.0  # instructions per operation of the allocator members (0: none)
    paired: PairedAllocation | None = None
    setup: tuple[str, ...] = ()  # the members that are vector or crypto code once per operation
    setup_callers: tuple[str, ...] = ()  # the members calling the set-up on every entry
    one_shots: tuple[OneShot, ...] = ()
    pairs: tuple[Pair, ...] = ()  # the create/destroy pairs
    # as the checks list them after their colon ("": none): the heaviest members, the
    # allocator calls, the set-up, its callers, and the callers entering the tree
    heaviest: str = ""
    allocator_calls: str = ""
    setup_listed: str = ""
    setup_callers_listed: str = ""
    entered: str = ""
    # per lookup mechanism counting its members' constant-key lookups, what its check says
    lookups: tuple[str, ...] = ()
    # the callees shared with another tree, as each check says them after its prefix
    shared: tuple[str, ...] = ()
