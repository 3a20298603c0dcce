"""Compact column types: many strings stored as one UTF-8 blob plus offsets (memory-mappable)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


class StringColumn:
    """Row ``i`` is ``blob[offsets[i]:offsets[i + 1]]`` decoded. Reopens from a memory map."""

    __slots__ = ("blob", "offsets")

    def __init__(self, blob: np.ndarray, offsets: np.ndarray) -> None:
        self.blob = blob  # uint8
        self.offsets = offsets  # uint64, len = rows + 1

    @classmethod
    def from_strings(cls, values: Iterable[str]) -> StringColumn:
        encoded = [v.encode("utf-8") for v in values]
        offsets = np.zeros(len(encoded) + 1, dtype=np.uint64)
        np.cumsum([len(e) for e in encoded], out=offsets[1:])
        blob = np.frombuffer(b"".join(encoded), dtype=np.uint8)
        return cls(blob, offsets)

    @classmethod
    def from_utf8(cls, joined: bytes, lengths: np.ndarray) -> StringColumn:
        """From already-joined bytes and each row's byte length (the fast path from polars)."""
        offsets = np.zeros(len(lengths) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        return cls(np.frombuffer(joined, dtype=np.uint8), offsets)

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def __getitem__(self, row: int) -> str:
        start, end = int(self.offsets[row]), int(self.offsets[row + 1])
        return self.blob[start:end].tobytes().decode("utf-8")

    def slice(self, start: int, stop: int) -> StringColumn:
        """Rows ``start`` to ``stop - 1`` (the blob is shared, not copied)."""
        offsets = self.offsets[start : stop + 1]
        return StringColumn(self.blob[int(offsets[0]) : int(offsets[-1])], offsets - offsets[0])

    def take(self, rows: np.ndarray) -> StringColumn:
        """The texts of some rows (an integer array), gathered with numpy."""
        starts = self.offsets[rows].astype(np.int64)
        lengths = self.offsets[rows + 1].astype(np.int64) - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        picks = np.repeat(starts - offsets[:-1].astype(np.int64), lengths) + np.arange(
            int(offsets[-1]))
        return StringColumn(self.blob[picks], offsets)

    def to_list(self) -> list[str]:
        data = self.blob.tobytes()
        offs = self.offsets.tolist()
        return [data[offs[i] : offs[i + 1]].decode("utf-8") for i in range(len(offs) - 1)]

