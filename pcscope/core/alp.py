"""The aggregated ALP (Average Loop Pipeview) model: one record per PC (docs/formats.md §2).

Every figure here is unrounded; rounding to 3 significant digits happens only in
``to_json(rounded=True)``, i.e. when evidence is shown or sent to a model. Integer
counts are exact evidence and are never rounded.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import asdict, dataclass
from functools import cached_property
from typing import Protocol

import msgspec
import numpy as np

from pcscope.core.ids import alp_id, hex_pc

STAGES = ("fetch", "decode", "rename", "dispatch", "issue", "complete", "retire")
BRANCH_KINDS = ("direct", "conditional", "indirect", "call", "indirect_call", "return")
MEM_KINDS = ("load", "store", "atomic", "prefetch")
MEM_COUNTS = ("accesses", "l1d_miss", "l2_miss", "llc_miss", "tlb_miss", "store_forwarded")

SIG_DIGITS = 3


def round_sig(x: float, digits: int = SIG_DIGITS) -> float:
    """``x`` rounded to ``digits`` significant digits (12.345 -> 12.3, 0.0012345 -> 0.00123,
    123456 -> 123000.0): the float nearest to the decimal ``%g`` writes."""
    return float(f"{x:.{digits}g}")


def _ratio(num: int | None, den: int | None) -> float | None:
    if num is None or not den:
        return None
    return num / den


def _diff(later: float | None, earlier: float | None) -> float | None:
    if later is None or earlier is None:
        return None
    return later - earlier


def _shown(x: float, rounded: bool) -> float:
    return round_sig(x) if rounded else x


@dataclass(slots=True)
class BranchStats:
    """Summed branch counts of one PC. A count absent from every record is None."""

    kind: str
    executed: int | None
    taken: int | None
    mispredicted: int | None

    @property
    def mispredict_rate(self) -> float | None:
        return _ratio(self.mispredicted, self.executed)

    @property
    def taken_rate(self) -> float | None:
        return _ratio(self.taken, self.executed)

    def to_json(self, rounded: bool = True) -> dict:
        out: dict = {"kind": self.kind}
        for name in ("executed", "taken", "mispredicted"):
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        for name in ("mispredict_rate", "taken_rate"):
            value = getattr(self, name)
            if value is not None:
                out[name] = _shown(value, rounded)
        return out


@dataclass(slots=True)
class MemStats:
    """Summed memory counts of one PC: None for a count absent from every record, 0 for a
    present zero (``store_forwarded: 0`` is evidence)."""

    kind: str
    accesses: int | None
    l1d_miss: int | None
    l2_miss: int | None
    llc_miss: int | None
    tlb_miss: int | None
    store_forwarded: int | None
    avg_latency: float | None

    @property
    def l1d_miss_rate(self) -> float | None:
        return _ratio(self.l1d_miss, self.accesses)

    @property
    def l2_miss_rate(self) -> float | None:
        return _ratio(self.l2_miss, self.accesses)

    @property
    def llc_miss_rate(self) -> float | None:
        return _ratio(self.llc_miss, self.accesses)

    @property
    def tlb_miss_rate(self) -> float | None:
        return _ratio(self.tlb_miss, self.accesses)

    @property
    def store_forward_rate(self) -> float | None:
        return _ratio(self.store_forwarded, self.accesses)

    def to_json(self, rounded: bool = True) -> dict:
        out: dict = {"kind": self.kind}
        for name in MEM_COUNTS:
            value = getattr(self, name)
            if value is not None:
                out[name] = value
        if self.avg_latency is not None:
            out["avg_latency"] = _shown(self.avg_latency, rounded)
        for name in (
            "l1d_miss_rate", "l2_miss_rate", "llc_miss_rate", "tlb_miss_rate", "store_forward_rate"
        ):
            value = getattr(self, name)
            if value is not None:
                out[name] = _shown(value, rounded)
        return out


@dataclass(slots=True)
class AlpRecord:
    """One PC after aggregation across every loop that holds it."""

    pc: int
    asm: str | None
    iterations: int
    loops: list[str]                 # sorted loop labels (records without a label add none)
    stages: dict[str, float]         # weighted averages, canonical stage order first
    branch: BranchStats | None
    mem: MemStats | None
    matched: bool                    # the PC is in the profile

    @property
    def id(self) -> str:
        return alp_id(self.pc)

    @property
    def issue_wait(self) -> float | None:
        return _diff(self.stages.get("issue"), self.stages.get("dispatch"))

    @property
    def execute_latency(self) -> float | None:
        return _diff(self.stages.get("complete"), self.stages.get("issue"))

    @property
    def retire_wait(self) -> float | None:
        return _diff(self.stages.get("retire"), self.stages.get("complete"))

    def to_json(self, rounded: bool = True) -> dict:
        """Evidence rendering with a stable key order; absent blocks and stages are left out."""
        out: dict = {"id": self.id, "pc": hex_pc(self.pc)}
        if self.asm is not None:
            out["asm"] = self.asm
        out["matched"] = self.matched
        out["iterations"] = self.iterations
        out["loops"] = list(self.loops)
        if self.stages:
            out["stages"] = {k: _shown(v, rounded) for k, v in self.stages.items()}
        for name in ("issue_wait", "execute_latency", "retire_wait"):
            value = getattr(self, name)
            if value is not None:
                out[name] = _shown(value, rounded)
        if self.branch is not None:
            out["branch"] = self.branch.to_json(rounded)
        if self.mem is not None:
            out["mem"] = self.mem.to_json(rounded)
        return out


@dataclass(frozen=True, slots=True)
class AlpLoopRecord:
    """One raw per-(loop, PC) record as it stood in the file."""

    loop: str | None
    line: int          # 1-based line in the ALP file
    text: str          # the JSON line itself; decoded on demand to keep memory low

    @property
    def raw(self) -> dict:
        return msgspec.json.decode(self.text)


def row_of(pcs: np.ndarray, pc: object) -> int | None:
    """Where ``pc`` (any int type) is in the ascending uint64 array ``pcs``, or None."""
    if not isinstance(pc, int | np.integer) or not 0 <= pc < 2**64:
        return None
    i = int(np.searchsorted(pcs, np.uint64(pc)))
    return i if i < len(pcs) and int(pcs[i]) == pc else None


class TextLines(Protocol):
    """Lines of text by number (a list, or the reader's compact RawLines)."""

    def __len__(self) -> int: ...

    def __getitem__(self, i: int, /) -> str: ...


class LoopRecords(Mapping[int, list[AlpLoopRecord]]):
    """The raw records of each kept PC, in file order, made into AlpLoopRecords on access:
    the reader keeps them as columns (one line of text each), since a view shows one PC
    at a time and most are never looked at."""

    def __init__(self, pcs: np.ndarray, order: np.ndarray, starts: np.ndarray,
                 loop_labels: list[str | None], loops: np.ndarray, lines: np.ndarray,
                 texts: TextLines) -> None:
        self._pcs = pcs                    # uint64 ascending; the records of pcs[i] are
        self._order = order                # texts[order[starts[i]:starts[i + 1]]]
        self._starts = starts
        self._loop_labels = loop_labels    # loop id -> label
        self._loops = loops                # per record: loop id
        self._lines = lines                # per record: line number
        self._texts = texts

    def __getitem__(self, pc: int) -> list[AlpLoopRecord]:
        i = row_of(self._pcs, pc)
        if i is None:
            raise KeyError(pc)
        idx = self._order[self._starts[i]:self._starts[i + 1]].tolist()
        labels, loops, lines, texts = self._loop_labels, self._loops, self._lines, self._texts
        return [AlpLoopRecord(labels[loops[k]], int(lines[k]), texts[k]) for k in idx]

    def __iter__(self) -> Iterator[int]:
        return iter(self._pcs.tolist())

    def __len__(self) -> int:
        return len(self._pcs)

    def state(self) -> dict:
        """The columns as they are, for the index store (``LoopRecords(**state)`` reopens)."""
        return {"pcs": self._pcs, "order": self._order, "starts": self._starts,
                "loop_labels": self._loop_labels, "loops": self._loops, "lines": self._lines,
                "texts": self._texts}


@dataclass(frozen=True)
class AlpFileStats:
    """What reading the file found, whatever was kept."""

    records: int           # raw (loop, PC) records read
    pcs: int               # distinct PCs in the file
    unmatched: int         # distinct PCs that are not in the profile
    raw_tokens: int        # characters of the raw file / 4
    skipped_lines: int     # bad lines skipped under skip_bad_lines


@dataclass(frozen=True)
class AlpStats(AlpFileStats):
    """File figures plus the size of what was kept (docs/formats.md §5 ``"alp"`` object)."""

    trimmed_tokens: int    # characters of the kept records as compact rounded JSON / 4
    kept: int              # aggregated records kept in the table

    def to_json(self) -> dict:
        return {
            "records": self.records,
            "pcs": self.pcs,
            "unmatched": self.unmatched,
            "raw_tokens": self.raw_tokens,
            "trimmed_tokens": self.trimmed_tokens,
            "skipped_lines": self.skipped_lines,
            "kept": self.kept,
        }


def compact_json(obj: object) -> str:
    """The compact JSON text evidence is measured in (the standard library's rendering)."""
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"))


def tokens_of(records: Iterable[AlpRecord]) -> int:
    """Estimated tokens (characters / 4) of records rendered as compact rounded JSON."""
    return sum(len(compact_json(r.to_json(rounded=True))) for r in records) // 4


@dataclass
class AlpTable:
    """The aggregated ALP: kept records by PC, their raw per-loop records, and file stats.
    The reader gives read-only mappings that build records on access (alp_columns)."""

    path: str
    records: Mapping[int, AlpRecord]               # ascending PC order
    per_loop: Mapping[int, list[AlpLoopRecord]]    # raw records of each kept PC, file order
    file_stats: AlpFileStats

    @cached_property
    def stats(self) -> AlpStats:
        # Rendering every kept record to count its tokens can cost as much as reading the
        # file, so it is done on first use rather than by the reader.
        return AlpStats(**asdict(self.file_stats), trimmed_tokens=tokens_of(self.records.values()),
                        kept=len(self.records))

    def get(self, pc: int) -> AlpRecord | None:
        return self.records.get(pc)

    def trimmed(self, pcs: Iterable[int]) -> AlpTable:
        """A new table holding only the given PCs (those it has); the file stats are kept."""
        wanted = sorted({int(pc) for pc in pcs} & set(self.records))
        records = {pc: self.records[pc] for pc in wanted}
        per_loop = {pc: self.per_loop[pc] for pc in wanted}
        return AlpTable(self.path, records, per_loop, self.file_stats)

    def to_json(self, rounded: bool = True) -> dict:
        return {
            "stats": self.stats.to_json(),
            "records": [rec.to_json(rounded) for rec in self.records.values()],
        }
