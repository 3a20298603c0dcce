"""Saving the aggregated ALP as the reader's own columns, and reopening them mapped.

The reader keeps the per-PC aggregate as numpy columns (``AlpColumns``) and the raw
per-loop lines as text plus index arrays (``LoopRecords``); both go to disk as they are,
so a reopen builds no record objects until one is looked at.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import msgspec
import numpy as np

from pcscope.core.alp import AlpFileStats, AlpTable, LoopRecords
from pcscope.core.alp_columns import AlpColumns, AlpRecords
from pcscope.index.arrays import mapped

_COLUMN_LISTS = ("asm", "extra_stages", "loop_names")
_LOOP_ARRAYS = ("pcs", "order", "starts", "loops", "lines")


class _Lists(msgspec.Struct):
    asm: list[str | None]
    extra_stages: dict[int, dict[str, float]]
    loop_names: list[str]
    loop_labels: list[str | None]
    texts: list[str]


def save_alp(table: AlpTable, folder: Path) -> None:
    folder.mkdir()
    records, loops = table.records, table.per_loop
    assert isinstance(records, AlpRecords) and isinstance(loops, LoopRecords)  # the reader's
    columns = records.columns
    for f in dataclasses.fields(columns):
        if f.name not in _COLUMN_LISTS:
            np.save(folder / f"col.{f.name}.npy", getattr(columns, f.name), allow_pickle=False)
    state = loops.state()
    for name in _LOOP_ARRAYS:
        np.save(folder / f"loop.{name}.npy", state[name], allow_pickle=False)
    lists = _Lists(columns.asm, columns.extra_stages, columns.loop_names,
                   state["loop_labels"], list(state["texts"]))
    (folder / "lists.msgpack").write_bytes(msgspec.msgpack.encode(lists))
    meta = {"path": table.path, "file_stats": dataclasses.asdict(table.file_stats)}
    (folder / "meta.json").write_text(json.dumps(meta), encoding="utf-8")


def load_alp(folder: Path) -> AlpTable:
    meta = json.loads((folder / "meta.json").read_text(encoding="utf-8"))
    lists = msgspec.msgpack.decode((folder / "lists.msgpack").read_bytes(), type=_Lists)

    def array(name: str) -> np.ndarray:
        return mapped(folder / f"{name}.npy")

    arrays = {f.name: array(f"col.{f.name}") for f in dataclasses.fields(AlpColumns)
              if f.name not in _COLUMN_LISTS}
    columns = AlpColumns(**arrays, asm=lists.asm, extra_stages=lists.extra_stages,
                         loop_names=lists.loop_names)
    loop = {name: array(f"loop.{name}") for name in _LOOP_ARRAYS}
    per_loop = LoopRecords(loop["pcs"], loop["order"], loop["starts"], lists.loop_labels,
                           loop["loops"], loop["lines"], lists.texts)
    return AlpTable(meta["path"], AlpRecords(columns), per_loop,
                    AlpFileStats(**meta["file_stats"]))
