"""Compact column types: many strings stored as one UTF-8 blob plus offsets (memory-mappable)."""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

_TAKE_ROWS = 1 << 15  # rows StringColumn.take gathers at once (~1 MB of text)


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
        """The texts of some rows (an integer array), gathered with numpy a slice of rows
        at a time: the index of the bytes gathered is 8 bytes a byte (three such arrays
        at once: ~180 MB for the distinct texts of a million rows in one go)."""
        starts = self.offsets[rows].astype(np.int64)
        lengths = self.offsets[rows + 1].astype(np.int64) - starts
        offsets = np.zeros(len(rows) + 1, dtype=np.uint64)
        np.cumsum(lengths, out=offsets[1:])
        at = offsets.astype(np.int64)
        blob = np.empty(int(at[-1]), dtype=np.uint8)
        for lo in range(0, len(rows), _TAKE_ROWS):
            hi = min(lo + _TAKE_ROWS, len(rows))
            picks = np.repeat(starts[lo:hi] - at[lo:hi], lengths[lo:hi])
            picks += np.arange(at[lo], at[hi])
            blob[at[lo]:at[hi]] = self.blob[picks]
        return StringColumn(blob, offsets)

    def to_list(self) -> list[str]:
        data = self.blob.tobytes()
        offs = self.offsets.tolist()
        return [data[offs[i] : offs[i + 1]].decode("utf-8") for i in range(len(offs) - 1)]

