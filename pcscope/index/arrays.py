"""Saving and memory-mapping the profile's arrays (the columnar half of the index)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from pcscope.core.columns import StringColumn
from pcscope.core.profile import FunctionTable, Profile, WindowTable

_COLUMNS = ("pc", "samples", "asm_code", "mnemonic", "function", "window", "module", "line",
            "window_label_code")


def _save(folder: Path, name: str, array: np.ndarray) -> None:
    np.save(folder / f"{name}.npy", np.ascontiguousarray(array), allow_pickle=False)


def mapped(path: Path) -> np.ndarray:
    """A saved array, memory-mapped read-only, as a plain array: every slice of numpy's
    memmap class runs its ``__array_finalize__`` (~40 µs a call), which a reopened index's
    readers (the mechanism finder: ~500k slices at 1M rows) would pay on every access."""
    return np.asarray(np.load(path, mmap_mode="r", allow_pickle=False))


def _load(folder: Path, name: str) -> np.ndarray:
    return mapped(folder / f"{name}.npy")


def _save_strings(folder: Path, name: str, column: StringColumn) -> None:
    _save(folder, f"{name}.blob", column.blob)
    _save(folder, f"{name}.offsets", column.offsets)


def _load_strings(folder: Path, name: str) -> StringColumn:
    return StringColumn(_load(folder, f"{name}.blob"), _load(folder, f"{name}.offsets"))


def save_profile(profile: Profile, folder: Path) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    for name in _COLUMNS:
        _save(folder, name, getattr(profile, name))
    if profile.cycles is not None:
        _save(folder, "cycles", profile.cycles)
    _save_strings(folder, "asm", profile.asm_column)
    extras = sorted(profile.extras)
    for i, name in enumerate(extras):   # by number: a column name is no safe file name
        _save_strings(folder, f"extra.{i}", profile.extras[name])
    for name, array in profile.windows.arrays().items():
        _save(folder, f"windows.{name}", array)
    _save(folder, "windows.by_weight", profile.windows_by_weight())
    for name, array in profile.functions.arrays().items():
        _save(folder, f"functions.{name}", array)
    tables = {
        "path": profile.path,
        "mnemonics": profile.mnemonics,
        "function_names": profile.function_names,
        "window_labels": profile.window_labels,
        "modules": profile.modules,
        "extras": extras,
        "cycles": profile.cycles is not None,
    }
    (folder / "tables.json").write_text(json.dumps(tables), encoding="utf-8")


def load_profile(folder: Path) -> Profile:
    tables = json.loads((folder / "tables.json").read_text(encoding="utf-8"))
    arrays = {name: _load(folder, name) for name in _COLUMNS}
    return Profile(
        path=tables["path"],
        pc=arrays["pc"],
        samples=arrays["samples"],
        cycles=_load(folder, "cycles") if tables["cycles"] else None,
        asm_column=_load_strings(folder, "asm"),
        asm_code=arrays["asm_code"],
        mnemonic=arrays["mnemonic"],
        mnemonics=tables["mnemonics"],
        function=arrays["function"],
        function_names=tables["function_names"],
        window=arrays["window"],
        window_labels=tables["window_labels"],
        window_label_code=arrays["window_label_code"],
        module=arrays["module"],
        modules=tables["modules"],
        line=arrays["line"],
        extras={name: _load_strings(folder, f"extra.{i}")
                for i, name in enumerate(tables["extras"])},
        window_state={
            name: _load(folder, f"windows.{name}") for name in WindowTable.STATE
        },
        function_state={
            name: _load(folder, f"functions.{name}") for name in FunctionTable.STATE
        },
        by_weight=_load(folder, "windows.by_weight"),
    )
