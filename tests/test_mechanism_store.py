"""Mechanisms in the index: which of them hold each PC is stored beside the table, so a
reopen names them (``ids_at``) without decoding it, and says what the decoded table says."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from test_mechanism_rules import walk

from pcscope.core.mechanisms import MechanismSites, MechanismTable
from pcscope.index.store import open_workload


def walks(folder: Path) -> Path:
    """A profile of two copies of a list walk (one mechanism, two sites) and a walk of
    another field (a second mechanism)."""
    path = folder / "walks.csv"
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for function, at, count, lines in [
            ("find", 0x1000, 3000, walk(0x1000)),
            ("skip", 0x2000, 1000, walk(0x2000, swap=True, r=(4, 11, 7, 12))),
            ("other", 0x3000, 500, walk(0x3000, next_offset=16)),
        ]:
            for i, asm in enumerate(lines):
                out.writerow([function, function, hex(at + 4 * i), count, asm])
    return path


@pytest.fixture()
def workload(tmp_path):
    return open_workload(walks(tmp_path), index_dir=tmp_path / "idx")


def test_reopened_table_names_the_mechanisms_at_each_pc_as_the_decoded_one(workload):
    table = workload.mechanisms
    pcs = [int(pc) for pc in workload.profile.pc] + [0, 0x1002, (1 << 64) - 1, -1]
    named = {pc: table.ids_at(pc) for pc in pcs}
    assert table._mechanisms is None  # nothing decoded so far
    assert len(table) == 2
    decoded = MechanismTable(table.mechanisms)
    assert {pc: [m.id for m in decoded.at(pc)] for pc in pcs} == named
    assert {pc: [m.id for m in table.at(pc)] for pc in pcs} == named
    both = [pc for pc in pcs if named[pc]]
    assert len(both) == 27 and all(len(named[pc]) == 1 for pc in both)  # the three walks
    assert table.get(named[0x1000][0]) == decoded.mechanisms[decoded.sites.ids.index(
        named[0x1000][0])]
    assert table.get("mech:pointer-chase:0x9999") is None


def test_sites_list_a_pc_once_per_mechanism_heaviest_first():
    from pcscope.core.mechanisms import Mechanism, Site

    light = Mechanism("llsc", "atomic-llsc", 0x20, (Site(0x20, "f", (0x20, 0x24), 0.1),),
                      ("f",), 0.1)
    heavy = Mechanism("plt", "call-overhead", 0x24,
                      (Site(0x24, "f", (0x24,), 0.2), Site(0x28, "g", (0x24, 0x28), 0.3)),
                      ("f", "g"), 0.5)
    sites = MechanismSites.of((heavy, light))
    assert sites.ids == (heavy.id, light.id)
    assert sites.pc.tolist() == [0x20, 0x24, 0x24, 0x28]
    assert sites.positions(0x24) == [0, 1] and sites.positions(0x2c) == []

    def fail():
        raise AssertionError("decoded")

    stored = MechanismTable(sites=sites, decode=fail)
    assert stored.ids_at(0x24) == [heavy.id, light.id] and len(stored) == 2
    assert np.array_equal(stored.sites.position, [1, 0, 1, 0])


# -- the part built on first use ------------------------------------------------------------
def _no_grouping(*_args, **_kwargs):
    raise AssertionError("the mechanisms were grouped again")


def test_the_build_leaves_the_mechanisms_to_their_first_use(tmp_path, monkeypatch):
    monkeypatch.setattr("pcscope.core.mechanism_finder.find_mechanisms", _no_grouping)
    workload = open_workload(walks(tmp_path), index_dir=tmp_path / "idx")
    assert not (workload.folder / "mechanisms").exists()


def test_the_first_use_stores_them_and_a_reopen_reads_them(tmp_path, monkeypatch):
    profile, idx = walks(tmp_path), tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    ids = [m.id for m in first.mechanisms]
    assert len(ids) == 2 and (first.folder / "mechanisms" / "done.json").exists()
    monkeypatch.setattr("pcscope.core.mechanism_finder.find_mechanisms", _no_grouping)
    again = open_workload(profile, index_dir=idx)
    assert again.folder == first.folder
    assert [m.id for m in again.mechanisms] == ids


def test_a_damaged_part_is_grouped_again(tmp_path):
    profile, idx = walks(tmp_path), tmp_path / "idx"
    first = open_workload(profile, index_dir=idx)
    ids = [m.id for m in first.mechanisms]
    table = first.folder / "mechanisms" / "mechanisms.msgpack"
    table.write_bytes(table.read_bytes()[:-5])
    again = open_workload(profile, index_dir=idx)
    assert [m.id for m in again.mechanisms] == ids
    assert not list(first.folder.glob(".mechanisms-*"))  # nothing half-made is left


def test_a_folder_that_cannot_take_them_gets_them_in_memory(tmp_path, monkeypatch):
    profile, idx = walks(tmp_path), tmp_path / "idx"
    stored = [m.id for m in open_workload(profile, index_dir=idx / "a").mechanisms]
    workload = open_workload(profile, index_dir=idx / "b")
    monkeypatch.setattr("pcscope.index.parts.os.access", lambda *_args: False)
    assert [m.id for m in workload.mechanisms] == stored
    assert not (workload.folder / "mechanisms").exists()
