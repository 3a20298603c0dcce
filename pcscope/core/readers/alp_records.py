"""Decoding raw ALP lines (docs/formats.md §2) into typed records, and records into columns.

Types, kinds and signs are checked in C by typed msgspec decoders. A block of lines is
decoded in one call, as the JSON array its lines make when each newline becomes a comma:
that array is valid, with one element per line, exactly when every line is one JSON
value, so a block that decodes with as many records as lines holds only well-formed
records (a blank line, two values on a line or one value over two lines fail it). The
rules between fields of a record (stage order, parts at most their totals) are checked on
the columns, a few numpy calls per block. Anything else goes line by line: ``decode_line``
gives each line's exact record or error.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import chain, compress, repeat
from operator import attrgetter, is_not, itemgetter
from typing import Annotated, Literal

import msgspec
import numpy as np

from pcscope.core.alp import BRANCH_KINDS, MEM_COUNTS, MEM_KINDS, STAGES
from pcscope.core.alp_columns import ABSENT

_MAX_COUNT = 2**53          # sums stay exact in int64 and as float64 weights
_NAN = float("nan")         # a stage or latency the record does not carry (JSON has no NaN)
_MAX_DEPTH = 1000           # msgspec's recursion limit: deeper JSON raises RecursionError

_Count = Annotated[int, msgspec.Meta(ge=0, le=_MAX_COUNT)]
_Pc = Annotated[int, msgspec.Meta(ge=0)]   # msgspec bounds must fit int64: upper checked later


# gc=False: decoded records hold no cycles, and tracking ~300k of them slows the collector.
# kw_only lets the required `kind` come first. Field order is column order (astuple).
class _Branch(msgspec.Struct, gc=False, kw_only=True):
    kind: Literal["direct", "conditional", "indirect", "call", "indirect_call", "return"]
    executed: _Count = ABSENT
    taken: _Count = ABSENT
    mispredicted: _Count = ABSENT


class _Mem(msgspec.Struct, gc=False, kw_only=True):
    kind: Literal["load", "store", "atomic", "prefetch"]
    accesses: _Count = ABSENT
    l1d_miss: _Count = ABSENT
    l2_miss: _Count = ABSENT
    llc_miss: _Count = ABSENT
    tlb_miss: _Count = ABSENT
    store_forwarded: _Count = ABSENT
    avg_latency: Annotated[float, msgspec.Meta(ge=0)] = _NAN


class _Stages(msgspec.Struct, gc=False, forbid_unknown_fields=True):
    """The canonical stages, in STAGES order; another name fails the fast decoder."""

    fetch: float = _NAN
    decode: float = _NAN
    rename: float = _NAN
    dispatch: float = _NAN
    issue: float = _NAN
    complete: float = _NAN
    retire: float = _NAN


class _Record(msgspec.Struct, gc=False):
    pc: str | _Pc
    iterations: _Count
    loop: str | None = None
    asm: str | None = None
    branch: _Branch | None = None
    mem: _Mem | None = None


class Line(_Record, gc=False):
    """One decoded line: a record with the canonical stages only."""

    stages: _Stages = msgspec.field(default_factory=_Stages)


class _LooseLine(_Record, gc=False):
    stages: dict[str, float] = msgspec.field(default_factory=dict)


assert tuple(_Stages.__struct_fields__) == STAGES
assert _Mem.__struct_fields__[1:-1] == MEM_COUNTS

_DECODER = msgspec.json.Decoder(Line)
_BLOCK_DECODER = msgspec.json.Decoder(list[Line])
_LOOSE_DECODER = msgspec.json.Decoder(_LooseLine)
_STAGE_SET = frozenset(STAGES)
BRANCH_CODES = {k: i for i, k in enumerate(BRANCH_KINDS)}
MEM_CODES = {k: i for i, k in enumerate(MEM_KINDS)}


def decode_block(data: bytes, lines: int) -> list[Line] | None:
    """The records of ``lines`` newline-terminated lines, when every line is a well-formed
    record with canonical stage names; else None (then go line by line)."""
    try:
        recs = _BLOCK_DECODER.decode(b"[" + data[:-1].replace(b"\n", b",") + b"]")
    except (msgspec.DecodeError, RecursionError):
        return None
    return recs if len(recs) == lines else None


def decode_line(text: bytes) -> tuple[Line, dict[str, float] | None]:
    """The record of one line and its extra (non-canonical) stages. Raises
    msgspec.DecodeError or ValueError (a value the types allow but the spec does not)."""
    try:
        rec, extra = _DECODER.decode(text), None
    except RecursionError:
        raise ValueError(f"JSON nested too deep (more than {_MAX_DEPTH} levels)") from None
    except msgspec.ValidationError:
        loose = _LOOSE_DECODER.decode(text)   # the same rules but any stage name
        stages = loose.stages
        extra = {k: v for k, v in stages.items() if k not in _STAGE_SET}
        if not extra:
            raise
        fields = msgspec.structs.asdict(loose)
        fields["stages"] = _Stages(**{k: v for k, v in stages.items() if k in _STAGE_SET})
        rec = Line(**fields)
    for name, value in (extra or {}).items():
        if not value >= 0:
            raise ValueError(f"stage {name!r} is {value}: want a non-negative time")
    problem = what_is_wrong(rec)
    if problem is not None:
        raise ValueError(problem)
    return rec, extra


_MISSES = MEM_COUNTS[1:]


def what_is_wrong(rec: Line) -> str | None:
    """How the record breaks docs/formats.md §2's rules between fields, or None: stage
    times non-negative and non-decreasing in pipeline order, mispredicted and taken at
    most executed, every miss count at most accesses."""
    times = [(name, t) for name, t in zip(STAGES, msgspec.structs.astuple(rec.stages),
                                          strict=True) if t == t]
    for name, t in times:
        if t < 0:
            return f"stage {name!r} is {t:g}: want a non-negative time"
    for (early, t0), (late, t1) in zip(times, times[1:], strict=False):
        if t1 < t0:
            return f"stage {late!r} at {t1:g} comes before {early!r} at {t0:g}"
    b = rec.branch
    if b is not None:
        for name in ("taken", "mispredicted"):
            if getattr(b, name) > b.executed != ABSENT:
                return f"branch {name} {getattr(b, name)} exceeds executed {b.executed}"
    m = rec.mem
    if m is not None:
        for name in _MISSES:
            if getattr(m, name) > m.accesses != ABSENT:
                return f"mem {name} {getattr(m, name)} exceeds accesses {m.accesses}"
    return None


@dataclass(frozen=True, slots=True)
class RecordColumns:
    """The figures of consecutive records, one row each: what the rules and the sums
    read, taken from the structs once."""

    iterations: np.ndarray    # int64
    stages: np.ndarray        # float64 (n, len(STAGES)); NaN = absent
    branch_kind: np.ndarray   # int64: index into BRANCH_KINDS; ABSENT = no branch block
    branch: np.ndarray        # int64 (n, 3): executed, taken, mispredicted; ABSENT = absent
    mem_kind: np.ndarray      # int64: index into MEM_KINDS; ABSENT = no mem block
    mem: np.ndarray           # int64 (n, len(MEM_COUNTS)); ABSENT = absent
    latency: np.ndarray       # float64: avg_latency; NaN = absent
    asm: np.ndarray           # object: str or None

    @classmethod
    def of(cls, recs: list[Line]) -> RecordColumns:
        """No Python loop per record: maps of C-level getters feed numpy."""
        n = len(recs)
        stages = np.fromiter(chain.from_iterable(map(msgspec.structs.astuple,
                                                     map(_STAGES_OF, recs))),
                             np.float64, count=len(STAGES) * n).reshape(n, len(STAGES))
        branch_kind, branch, _, _ = _blocks(list(map(_BRANCH_OF, recs)), BRANCH_CODES, 3)
        mem_kind, mem, have, rows = _blocks(list(map(_MEM_OF, recs)), MEM_CODES,
                                            len(MEM_COUNTS))
        latency = np.full(n, _NAN)
        latency[have] = np.fromiter(map(_LATENCY_OF, rows), np.float64, count=len(rows))
        return cls(np.fromiter(map(_ITERATIONS_OF, recs), np.int64, count=n), stages,
                   branch_kind, branch, mem_kind, mem, latency,
                   np.array(list(map(_ASM_OF, recs)), dtype=object))

    def select(self, idx: np.ndarray | list[int]) -> RecordColumns:
        return RecordColumns(self.iterations[idx], self.stages[idx], self.branch_kind[idx],
                             self.branch[idx], self.mem_kind[idx], self.mem[idx],
                             self.latency[idx], self.asm[idx])

    def broken(self) -> bool:
        """Whether some record breaks a rule between fields (what_is_wrong says which)."""
        with np.errstate(invalid="ignore"):
            reached = np.fmax.accumulate(self.stages, axis=1)      # latest stage so far
            if (self.stages < 0).any() or (self.stages[:, 1:] < reached[:, :-1]).any():
                return True
        for total, parts in ((self.branch[:, :1], self.branch[:, 1:]),
                             (self.mem[:, :1], self.mem[:, 1:])):
            if ((total != ABSENT) & (parts > total)).any():
                return True
        return False


_STAGES_OF = attrgetter("stages")
_BRANCH_OF = attrgetter("branch")
_MEM_OF = attrgetter("mem")
_ITERATIONS_OF = attrgetter("iterations")
_ASM_OF = attrgetter("asm")
_KIND_OF = itemgetter(0)
_LATENCY_OF = itemgetter(len(MEM_COUNTS) + 1)   # after kind and the counts


def _blocks(blocks: list, codes: dict[str, int],
            width: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, list[tuple]]:
    """Kind codes and counts of a branch or mem block per record (ABSENT where the record
    has none), which records have one, and those blocks as tuples (field order)."""
    n = len(blocks)
    have = np.fromiter(map(is_not, blocks, repeat(None)), bool, count=n)
    rows = list(map(msgspec.structs.astuple, compress(blocks, have)))
    kind = np.full(n, ABSENT, np.int64)
    counts = np.full((n, width), ABSENT, np.int64)
    if rows:
        kind[have] = np.fromiter(map(codes.__getitem__, map(_KIND_OF, rows)), np.int64,
                                 count=len(rows))
        counts[have] = np.fromiter(chain.from_iterable(map(itemgetter(*range(1, width + 1)),
                                                           rows)),
                                   np.int64, count=width * len(rows)).reshape(-1, width)
    return kind, counts, have, rows
