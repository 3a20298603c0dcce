"""Streaming reader of a raw ALP (JSON Lines, plain or gzip) into an AlpTable (docs/formats.md §2).

Speed: a ~17M-token file holds ~250k records, so there is no Python step per line in the
usual case: lines come in blocks of bytes, a block is decoded in one typed msgspec call
and taken into numpy columns once (alp_records), in a second process ahead of the reader
(alp_blocks), and the rules between records (one record per (loop, PC), one branch and
one mem kind per PC) are checked for the whole block with numpy. Only a block that breaks
something is redone line by line, so errors name exact lines, the earliest in the file is
the one raised, and a skipped bad line leaves no trace. Sums per PC: see alp_sums.

Memory is bounded by the distinct PCs plus 16 bytes per (loop, PC) record (the
duplicate check), one block, and the raw lines of the kept PCs; never by file size.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import NoReturn

import msgspec
import numpy as np

from pcscope.core.alp import BRANCH_KINDS, MEM_KINDS, AlpFileStats, AlpTable
from pcscope.core.alp_columns import ABSENT, AlpRecords
from pcscope.core.collector import collector_paused
from pcscope.core.errors import InputError
from pcscope.core.ids import hex_pc
from pcscope.core.readers.alp_blocks import (
    DecodedBlock,
    decoded_block,
    decoded_blocks,
    pc_value,
)
from pcscope.core.readers.alp_records import RecordColumns, decode_line
from pcscope.core.readers.alp_sums import (
    Appended,
    KeptPcs,
    LineTexts,
    SumOverflow,
    distinct,
    grown,
)
from pcscope.core.textio import LineBlock, line_of_offset

_BATCH = 1 << 12            # lines per block: enough to amortise the few numpy calls per
                            # block, few enough that its decoded records stay in the caches
_PC_BITS = 32               # a (loop, PC) key is loop id << _PC_BITS | PC index
_KIND_NAMES = {"branch": BRANCH_KINDS, "mem": MEM_KINDS}


class _Batch:
    """Consecutive records, in file order, as columns."""

    __slots__ = ("lines", "texts", "cols", "extras", "pcs", "loops", "keys")

    def __init__(self, lines: np.ndarray, texts: LineTexts, cols: RecordColumns,
                 extras: dict[int, dict[str, float]], pcs: np.ndarray,
                 loops: np.ndarray) -> None:
        self.lines = lines          # 1-based line numbers
        self.texts = texts
        self.cols = cols
        self.extras = extras        # position -> extra stages, for the (rare) records with any
        self.pcs = pcs              # PC indices (see _Reader.pc_values)
        self.loops = loops          # loop ids (0 = no loop)
        self.keys = (loops << _PC_BITS) | pcs    # the (loop, PC) identity

    def __len__(self) -> int:
        return len(self.lines)

    def select(self, idx: list[int]) -> _Batch:
        """The records at ``idx`` (ascending)."""
        extras = ({j: self.extras[i] for j, i in enumerate(idx) if i in self.extras}
                  if self.extras else {})
        return _Batch(self.lines[idx], self.texts.select(idx), self.cols.select(idx), extras,
                      self.pcs[idx], self.loops[idx])

    def kinds(self, block: str) -> tuple[np.ndarray, np.ndarray]:
        """Positions of the records carrying ``block`` ("branch"/"mem") and its kind codes."""
        codes = self.cols.branch_kind if block == "branch" else self.cols.mem_kind
        idx = np.flatnonzero(codes != ABSENT)
        return idx, codes[idx]


class _KeyMap:
    """Integer keys (of one dtype), each with a positive value, 0 for a key not seen:
    sorted runs merged like a binary counter, so adding n keys costs O(n log n) in all
    and a lookup is a few binary searches. No Python step per key."""

    def __init__(self) -> None:
        self.runs: list[tuple[np.ndarray, np.ndarray]] = []

    def get(self, keys: np.ndarray) -> np.ndarray:
        out = np.zeros(len(keys), np.int64)
        for run_keys, run_values in self.runs:
            pos = np.minimum(np.searchsorted(run_keys, keys), len(run_keys) - 1)
            hit = run_keys[pos] == keys
            out[hit] = run_values[pos[hit]]
        return out

    def add(self, keys: np.ndarray, values: np.ndarray) -> None:
        """New keys (not seen before, distinct)."""
        while self.runs and len(self.runs[-1][0]) <= len(keys):
            run_keys, run_values = self.runs.pop()
            keys = np.concatenate([run_keys, keys])
            values = np.concatenate([run_values, values])
        order = np.argsort(keys)
        self.runs.append((keys[order], values[order]))


class _Registry:
    """The rules between records: one record per (loop, PC); one branch kind and one mem
    kind per PC (kinds by PC index: -1 = none yet)."""

    def __init__(self, path: str, loop_labels: list[str | None], pc_values: Appended) -> None:
        self.path = path
        self.loop_labels = loop_labels
        self.pc_values = pc_values
        self.seen = _KeyMap()    # (loop, PC) key -> its line
        self.kind = {block: np.zeros(0, np.int64) for block in _KIND_NAMES}
        self.kind_line = {block: np.zeros(0, np.int64) for block in _KIND_NAMES}

    def grow(self, pcs: int) -> None:
        for block in _KIND_NAMES:
            self.kind[block] = grown(self.kind[block], pcs, fill=-1)
            self.kind_line[block] = grown(self.kind_line[block], pcs)

    def problem(self, batch: _Batch) -> InputError | None:
        """A rule the batch breaks (for a single record: exactly its error), or None.
        Changes nothing."""
        keys = np.sort(batch.keys)
        if (keys[1:] == keys[:-1]).any() or self.seen.get(keys).any():
            return self._duplicate(batch)
        for block in _KIND_NAMES:
            idx, codes = batch.kinds(block)
            pcs = batch.pcs[idx]
            known = self.kind[block][pcs]
            pairs = distinct(pcs * len(_KIND_NAMES[block]) + codes)
            pair_pcs = pairs // len(_KIND_NAMES[block])     # ascending: a PC twice, two kinds
            if ((known >= 0) & (known != codes)).any() or (pair_pcs[1:] == pair_pcs[:-1]).any():
                return self._kind_conflict(batch, block)
        return None

    def _duplicate(self, batch: _Batch) -> InputError:
        earlier = self.seen.get(batch.keys).tolist()
        first_here: dict[int, int] = {}
        for key, line, known, pc, loop in zip(batch.keys.tolist(), batch.lines.tolist(),
                                              earlier, batch.pcs.tolist(),
                                              batch.loops.tolist(), strict=True):
            first = known or first_here.get(key)
            if first:
                label = self.loop_labels[loop]
                where = "no loop" if label is None else f"loop {label!r}"
                return InputError(self.path, line, f"second record for {where}, pc "
                                  f"{self._hex_pc(pc)} (first at line {first})")
            first_here[key] = line
        raise AssertionError("no duplicate in the batch")

    def _kind_conflict(self, batch: _Batch, block: str) -> InputError:
        names = _KIND_NAMES[block]
        first_here: dict[int, tuple[int, int]] = {}
        idx, codes = batch.kinds(block)
        for i, code in zip(idx.tolist(), codes.tolist(), strict=True):
            pc, line = int(batch.pcs[i]), int(batch.lines[i])
            if self.kind[block][pc] >= 0:
                first = (int(self.kind[block][pc]), int(self.kind_line[block][pc]))
            else:
                first = first_here.setdefault(pc, (code, line))
            if first[0] != code:
                return InputError(self.path, line, f"{block} kind {names[code]!r} for pc "
                                  f"{self._hex_pc(pc)} differs from "
                                  f"{names[first[0]]!r} at line {first[1]}")
        raise AssertionError("no kind conflict in the batch")

    def _hex_pc(self, pc: int) -> str:
        return hex_pc(int(self.pc_values.values()[pc]))

    def register(self, batch: _Batch) -> None:
        self.seen.add(batch.keys, batch.lines)
        for block in _KIND_NAMES:
            idx, codes = batch.kinds(block)
            pcs = batch.pcs[idx]
            new = self.kind[block][pcs] < 0
            if new.any():
                fresh, first = np.unique(pcs[new], return_index=True)
                self.kind[block][fresh] = codes[new][first]
                self.kind_line[block][fresh] = batch.lines[idx][new][first]


def _isin(keys: np.ndarray, sorted_pcs: np.ndarray) -> np.ndarray:
    """Which of ``keys`` (uint64) are in the ascending array: binary searches, since
    np.isin would sort the whole (maybe million-PC) array again for every batch."""
    if not len(sorted_pcs):
        return np.zeros(len(keys), bool)
    pos = np.minimum(np.searchsorted(sorted_pcs, keys), len(sorted_pcs) - 1)
    return sorted_pcs[pos] == keys


def _sorted_uint64(pcs: np.ndarray | None) -> np.ndarray | None:
    if pcs is None:
        return None
    arr = np.asarray(pcs, dtype=np.uint64)
    return arr if np.all(arr[:-1] < arr[1:]) else distinct(arr)


class _Reader:
    """One pass over one file: lines -> batches -> rules -> kept sums."""

    def __init__(self, path: str, profile_pcs: np.ndarray | None, keep_pcs: np.ndarray | None,
                 skip_bad_lines: bool) -> None:
        self.path = path
        self.profile_pcs = _sorted_uint64(profile_pcs)
        self.keep_pcs = _sorted_uint64(keep_pcs)
        self.skip_bad_lines = skip_bad_lines
        self.pc_index = _KeyMap()                    # PC value (uint64) -> PC index + 1
        self.pc_values = Appended(np.uint64)         # PC index -> PC value
        self.kept_slot = np.zeros(0, np.int64)       # PC index -> kept slot; -1 not kept,
                                                     # -2 not decided yet (new PC)
        self.kept_index = Appended(np.int64)         # kept slot -> PC index
        self.loop_id: dict[str | None, int] = {None: 0}
        self.loop_labels: list[str | None] = [None]
        self.registry = _Registry(path, self.loop_labels, self.pc_values)
        self.kept = KeptPcs(self.loop_labels)
        self.records = 0
        self.skipped = 0
        self.chars = 0

    def pc_indices(self, values: np.ndarray) -> np.ndarray:
        """The PC index of each PC value (uint64); a new value gets the next free index
        (``0x2004``, ``0X2004`` and ``8196`` share one)."""
        index = self.pc_index.get(values) - 1
        new = index < 0
        if new.any():
            fresh, first, inverse = np.unique(values[new], return_index=True,
                                              return_inverse=True)
            by_first = np.argsort(first)        # in order of appearance
            number = np.empty(len(fresh), np.int64)
            number[by_first] = np.arange(len(self.pc_values), len(self.pc_values) + len(fresh))
            index[new] = number[inverse]
            self.pc_values.extend(fresh[by_first])
            self.pc_index.add(fresh, number + 1)
        return index

    def loop(self, name: str | None) -> int:
        loop = self.loop_id.get(name)
        if loop is None:
            loop = self.loop_id[name] = len(self.loop_labels)
            self.loop_labels.append(name)
        return loop

    def add_block(self, block: LineBlock, decoded: DecodedBlock | None) -> None:
        """The block's lines; ``decoded``: decoded_block's result for it."""
        data = block.data
        try:
            self.chars += len(data) if data.isascii() else len(data.decode())
        except UnicodeDecodeError as exc:
            self._bad_utf8(block, exc.start)
        batch = (self._decoded_carefully(block) if decoded is None
                 else self._batch(block, decoded))
        self._grow()
        if self.registry.problem(batch) is not None:
            batch = self._replay(batch)
        else:
            self.registry.register(batch)
        self._keep(batch)

    def _bad_utf8(self, block: LineBlock, offset: int) -> NoReturn:
        """Raise the invalid UTF-8 at ``offset`` as its line's error, after reading the
        lines before it (an error among them comes first)."""
        line = line_of_offset(block.data, offset)     # in the block, from 1
        if line > 1:
            end = int(block.ends[line - 2]) + 1
            before = LineBlock(block.first, block.data[:end], block.ends[:line - 1])
            self.add_block(before, decoded_block(before))
        raise InputError(self.path, block.first + line - 1,
                         f"invalid UTF-8 (byte 0x{block.data[offset]:02x})")

    def _batch(self, block: LineBlock, decoded: DecodedBlock) -> _Batch:
        loops = np.array(list(map(self.loop, decoded.loop_names)), np.int64)[decoded.loop_codes]
        pcs = self.pc_indices(decoded.pcs)
        ends = block.ends
        starts = np.concatenate([[0], ends[:-1] + 1])
        return _Batch(np.arange(block.first, block.first + len(block)),
                      LineTexts(block.data, starts, ends), decoded.cols, {}, pcs, loops)

    def _decoded_carefully(self, block: LineBlock) -> _Batch:
        """Line by line: blank lines dropped, bad ones raised in file order (or skipped)."""
        data = block.data
        starts = [0, *(block.ends[:-1] + 1).tolist()]
        kept: tuple[list, ...] = ([], [], [], [], [], [])  # line, start, end, rec, PC, loop
        extras: dict[int, dict[str, float]] = {}
        errors = []
        for line, start, end in zip(range(block.first, block.first + len(block)), starts,
                                    block.ends.tolist(), strict=True):
            text = data[start:end]
            if text.endswith(b"\r"):         # a CRLF line end
                self.chars -= len(text)
                text = text.rstrip(b"\r")
                self.chars += len(text)
                end = start + len(text)
            try:
                rec, extra = decode_line(text)
                value = pc_value(rec.pc)
            except (msgspec.DecodeError, ValueError) as exc:
                if not text.decode().isspace() and text:
                    errors.append(InputError(self.path, line, f"bad ALP record: {exc}"))
                continue
            if extra:
                extras[len(kept[0])] = extra
            for column, item in zip(kept, (line, start, end, rec, value, self.loop(rec.loop)),
                                    strict=True):
                column.append(item)
        lines, text_starts, text_ends, recs, values, loops = kept
        batch = _Batch(np.array(lines, dtype=np.int64),
                       LineTexts(data, np.array(text_starts, dtype=np.int64),
                                 np.array(text_ends, dtype=np.int64)),
                       RecordColumns.of(recs), extras,
                       self.pc_indices(np.array(values, dtype=np.uint64)),
                       np.array(loops, dtype=np.int64))
        if errors and not self.skip_bad_lines:
            # A rule broken by an earlier line of the block is the error to report.
            self._grow()
            self._replay(batch.select([i for i, line in enumerate(lines)
                                       if line < errors[0].line]))
            raise errors[0]
        self.skipped += len(errors)
        return batch

    def _grow(self) -> None:
        """Room in the by-PC-index arrays for every PC index handed out so far."""
        n = len(self.pc_values)
        self.registry.grow(n)
        self.kept_slot = grown(self.kept_slot, n, fill=-2)    # -2: not decided yet

    def _replay(self, batch: _Batch) -> _Batch:
        """In effect record by record, in line order: raise (or skip) each bad one
        exactly. A part without a problem is taken whole, so a few bad records in a large
        block cost a few dozen checks."""
        return batch.select(self._good(batch, 0, len(batch)))

    def _good(self, batch: _Batch, lo: int, hi: int) -> list[int]:
        """The positions from ``lo`` to ``hi`` whose records are taken (registered)."""
        if lo == hi:
            return []
        positions = list(range(lo, hi))
        part = batch.select(positions)
        error = self.registry.problem(part)
        if error is None:
            self.registry.register(part)
            return positions
        if hi - lo == 1:
            if not self.skip_bad_lines:
                raise error
            self.skipped += 1
            return []
        mid = (lo + hi) // 2
        return self._good(batch, lo, mid) + self._good(batch, mid, hi)

    def _keep(self, batch: _Batch) -> None:
        self.records += len(batch)
        slots = self.kept_slot[batch.pcs]
        if (slots == -2).any():
            new = distinct(batch.pcs[slots == -2])
            if self.keep_pcs is not None:
                new_kept = new[_isin(self.pc_values.values()[new], self.keep_pcs)]
            else:
                new_kept = new
            self.kept_slot[new] = -1
            self.kept_slot[new_kept] = self.kept.new_slots(self.pc_values.values()[new_kept])
            self.kept_index.extend(new_kept)
            slots = self.kept_slot[batch.pcs]
        if not (slots >= 0).all():
            batch = batch.select(np.flatnonzero(slots >= 0).tolist())
            slots = slots[slots >= 0]
        if len(batch):
            try:
                self.kept.add(slots, batch.cols, batch.extras, batch.loops, batch.lines,
                              batch.texts)
            except SumOverflow as exc:
                raise InputError(self.path, int(batch.lines[exc.position]),
                                 f"the {exc.what} of pc {hex_pc(int(self.kept.pcs.values()[exc.slot]))} add "
                                 "up past 2^63-1 here (sums overflow int64)") from None

    def table(self) -> AlpTable:
        """The result; the reader is done after this. Its bookkeeping is let go before the
        columns are built, which lowers the peak memory for ~200k PCs by tens of MB."""
        kept = self.kept
        index = self.kept_index.values()
        if self.profile_pcs is None:
            matched = np.ones(len(kept.pcs), bool)
            unmatched = 0
        else:
            matched = _isin(kept.pcs.values(), self.profile_pcs)
            unmatched = int(np.count_nonzero(~_isin(self.pc_values.values(), self.profile_pcs)))
        branch_kind = self.registry.kind["branch"][index]
        mem_kind = self.registry.kind["mem"][index]
        stats = AlpFileStats(records=self.records, pcs=len(self.pc_values), unmatched=unmatched,
                             raw_tokens=self.chars // 4, skipped_lines=self.skipped)
        del self.registry, self.pc_index, self.kept_slot, self.kept_index
        columns, per_loop = kept.finish(matched, branch_kind, mem_kind)
        return AlpTable(self.path, AlpRecords(columns), per_loop, stats)


def read_alp(
    path: str | os.PathLike,
    *,
    profile_pcs: np.ndarray | None,
    keep_pcs: np.ndarray | None = None,
    skip_bad_lines: bool = False,
    progress: Callable[[int], None] | None = None,
) -> AlpTable:
    """Aggregate a raw ALP to one record per PC.

    ``profile_pcs``: the profile's PCs (uint64); a PC outside it is kept but flagged
    ``matched=False`` (None: no profile, every PC counts as matched). ``keep_pcs``: the
    PCs whose records are stored (None: every PC); the others are still validated and
    counted in the stats. ``skip_bad_lines``: skip and count a bad line (malformed JSON or
    fields, a duplicate (loop, PC), a branch/mem kind that contradicts an earlier record)
    instead of raising InputError. Blank lines are ignored. ``progress`` is called with
    the number of characters (~bytes of uncompressed text) read so far, after each block
    of lines.
    """
    reader = _Reader(str(path), profile_pcs, keep_pcs, skip_bad_lines)
    # The reader makes no garbage cycles, only what lives to its end: automatic passes
    # would walk the kept lines and PCs again and again and free nothing.
    with collector_paused():
        for block, decoded in decoded_blocks(path, _BATCH):
            reader.add_block(block, decoded)
            if progress is not None:
                progress(reader.chars)
        return reader.table()
