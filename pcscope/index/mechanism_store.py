"""Mechanisms in an index: the table (msgpack) and, beside it, which mechanisms hold each
PC (arrays), so a reopen names the mechanisms at a PC without decoding the table."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pcscope.core.collector import collector_paused
from pcscope.core.mechanisms import Mechanism, MechanismSites, MechanismTable

TABLE = "mechanisms.msgpack"
_PC, _POSITION, _IDS = "mechanisms.pc.npy", "mechanisms.position.npy", "mechanisms.ids.npy"


def save_mechanisms(table: MechanismTable, build: Path) -> None:
    import msgspec

    (build / TABLE).write_bytes(msgspec.msgpack.encode(table.mechanisms))
    sites = table.sites
    np.save(build / _PC, sites.pc, allow_pickle=False)
    np.save(build / _POSITION, sites.position, allow_pickle=False)
    np.save(build / _IDS, np.array(sites.ids, dtype=np.str_), allow_pickle=False)


def load_mechanisms(folder: Path) -> MechanismTable:
    # Every file is read now: a workload opened from a fresh build keeps working after a
    # later open moves that build folder (the planner reads mechanisms of every run).
    raw = (folder / TABLE).read_bytes()
    sites = MechanismSites(
        tuple(np.load(folder / _IDS, allow_pickle=False).tolist()),
        np.load(folder / _PC, allow_pickle=False),
        np.load(folder / _POSITION, allow_pickle=False),
    )

    def decode() -> tuple[Mechanism, ...]:
        import msgspec  # only a command that reads the mechanisms themselves needs it

        import pcscope.core.mechanism_values  # noqa: F401  (the values' types, by name)

        with collector_paused():  # what it makes lives as long as the workload
            return msgspec.msgpack.decode(raw, type=tuple[Mechanism, ...])

    return MechanismTable(sites=sites, decode=decode)
