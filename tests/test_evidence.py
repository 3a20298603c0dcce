"""The evidence store resolves every ID kind exactly, and nothing it should not."""

from __future__ import annotations

import json

import pytest

from pcscope.core.errors import EvidenceError
from pcscope.core.evidence import Evidence, EvidenceStore
from pcscope.index.store import open_workload

PROFILE = """module,function,pc,samples,asm
app,run,0x1000,10,"ldr x1, [x0]"
app,run,0x1004,30,"ldr x2, [x1, #8]"
app,run,0x1008,20,blr x2
app,<unknown_3>,0x2000,40,"udiv x0, x1, x2"
lib,memcpy,0x2004,0,ret
"""

GUIDE = """Intro.

# Branch prediction

## Indirect branches

Indirect `blr` targets are predicted by a target buffer.
"""


@pytest.fixture()
def store(tmp_path):
    (tmp_path / "p.csv").write_text(PROFILE)
    (tmp_path / "uarch.md").write_text(GUIDE)
    (tmp_path / "mca.jsonl").write_text(
        json.dumps({"pc": "0x2000", "basis": "predicted", "latency": 12}) + "\n")
    workload = open_workload(tmp_path / "p.csv", guides=[tmp_path / "uarch.md"],
                             mca=tmp_path / "mca.jsonl", index_dir=tmp_path / "idx")
    return EvidenceStore(workload)


@pytest.mark.parametrize("evidence_id", [
    "pc:0x1004", "win:0x1000", "fn:run", "fn:0x2000", "pat:indirect-branch:0x1008",
    "pat:division:0x2000", "guide:uarch/branch-prediction/indirect-branches", "mca:0x2000",
])
def test_known_ids_resolve(store, evidence_id):
    assert store.resolve(evidence_id).id == evidence_id


@pytest.mark.parametrize("evidence_id", [
    "pc:0x1003",        # not an instruction
    "pc:0x01004",       # not the canonical spelling (leading zero)
    "pc:0X1004",        # upper-case prefix
    "win:0x1004",       # inside a window, not its first PC
    "fn:0x1000",        # a named function is addressed by name
    "fn:<unknown_3>",   # a hidden one by its lowest PC
    "pat:division:0x1008",
    "alp:0x1000",       # no ALP given
    "mca:0x1000",
    "guide:uarch/nope",
    "finding:f1",
    "bogus:1",
    "pc:",
])
def test_unknown_ids_do_not_resolve(store, evidence_id):
    assert not store.exists(evidence_id)
    with pytest.raises(EvidenceError):
        store.resolve(evidence_id)


def test_registered_evidence_resolves(store):
    store.register(Evidence("note:1", "note", "hint", "the loop at 0x1000 is a list walk"))
    assert store.resolve("note:1").text.startswith("the loop")


def test_ids_of_a_part_not_loaded_yet_do_not_resolve_now(store):
    """The explorer draws evidence on its UI thread only when resolving it loads nothing
    (the rest it resolves in a worker)."""
    now = ["pc:0x1004", "win:0x1000", "fn:run", "pat:division:0x2000", "finding:f1"]
    later = ["mca:0x2000", "guide:uarch/branch-prediction/indirect-branches",
             "mech:indirect-call:0x1008"]
    assert all(store.resolves_now(i) for i in now)
    assert not any(store.resolves_now(i) for i in later)
    for evidence_id in later:
        store.exists(evidence_id)  # loads the part its kind resolves from
    assert all(store.resolves_now(i) for i in later)


def test_asm_around_stays_in_module_and_reports_shares(store):
    view = store.asm_around(0x2000, before=2, after=2)
    assert [i.pc for i in view.instructions] == [0x1004, 0x1008, 0x2000]
    assert view.window == "win:0x2000"
    top = view.instructions[-1]
    assert top.samples == 40 and top.share == pytest.approx(0.4)
    assert "division" in top.patterns


def test_window_and_function_of_pc(store):
    assert store.window_of(0x1008).id == "win:0x1000"
    assert store.function_of(0x1008).name == "run"
    assert store.window_of(0x1009) is None
