"""The tools that name where the time goes: hot windows, and the mechanism table as the
index holds it."""

from __future__ import annotations

import asyncio
from dataclasses import replace

import pytest
from engine_helpers import mini_workload

from pcscope.core.engine.tools import SharedMemory, ToolBox
from pcscope.core.evidence import EvidenceStore
from pcscope.core.mechanisms import Mechanism, MechanismTable, Metric, Site

LLSC = Mechanism(
    kind="llsc", category="atomic-llsc", anchor=0x3000,
    sites=(Site(0x3000, "<unknown_02>", (0x3000, 0x3004, 0x3008, 0x300C), 0.16),),
    functions=("<unknown_02>",), share=0.16,
    metrics=(Metric("retries", 1.5, "x", "ldaxr count / loop entries"),),
    checks=("ldaxr and stlxr on one address in one loop",))


@pytest.fixture(scope="module")
def workload(tmp_path_factory):
    return mini_workload(tmp_path_factory.mktemp("tools"), guides=False)


def use(workload, *requests):
    store = EvidenceStore(workload)
    box = ToolBox(store, SharedMemory(store), "w1.c1", ())

    async def go():
        return [await box.use(name, args) for name, args in requests]

    return box, asyncio.run(go())


def test_hot_windows_by_weight_until_coverage_or_top(workload):
    box, (two, covered, bad) = use(workload, ("hot_windows", {"top": 2}),
                                   ("hot_windows", {"coverage": 0.5}),
                                   ("hot_windows", {"coverage": 0}))
    # Samples: w1 2,456,000, w2 1,031,000, w3 483,000, w4 20 of 3,970,020.
    assert two.text.splitlines()[0] == "2 hot windows covering 87.833% of the samples"
    assert [w["window"] for w in two.data["windows"]] == ["win:0x1000", "win:0x2000"]
    assert two.text.splitlines()[2].startswith("win:0x2000  weight 25.970%  3 instructions  "
                                               "fn:runtime_dispatch")
    assert [w["window"] for w in covered.data["windows"]] == ["win:0x1000"]
    assert {"win:0x1000", "win:0x2000", "fn:runtime_dispatch"} <= box.allowed
    assert bad.error and bad.error.startswith("bad hot_windows request: ")


def test_mechanisms_are_what_the_table_holds(workload):
    box, (finder, at_dispatch) = use(workload, ("mechanisms", {"limit": 30}),
                                     ("mechanisms", {"pc": "0x2004"}))
    # The index's own finder: the mini workload's dispatch blr is one mechanism.
    assert "mech:indirect-call:0x2004" in finder.ids and "pc:0x2004" in box.allowed
    assert [m["id"] for m in at_dispatch.data["mechanisms"]] == ["mech:indirect-call:0x2004"]
    none = replace(workload, mechanism_loader=MechanismTable)
    _box, (empty,) = use(none, ("mechanisms", {}))
    assert (empty.text, empty.ids, empty.error) == (
        "0 mechanisms, showing 0 by own share", (), None)
    found = replace(workload, mechanism_loader=lambda: MechanismTable((LLSC,)))
    box, (listed, at_site, elsewhere) = use(found, ("mechanisms", {}),
                                            ("mechanisms", {"pc": "0x3008"}),
                                            ("mechanisms", {"pc": "0x2004"}))
    assert listed.text.splitlines() == [
        "1 mechanisms, showing 1 by own share",
        "mech:llsc:0x3000: llsc (atomic-llsc), own share 16.000% over 1 site(s), "
        "4 instruction(s)",
        "functions: <unknown_02>",
        "retries: 1.5 x (ldaxr count / loop entries)",
        "check: ldaxr and stlxr on one address in one loop",
        "site 0x3000 in <unknown_02>: 4 instruction(s), 16.000%",
        "citable sites: pc:0x3000"]
    assert listed.ids == ("mech:llsc:0x3000", "pc:0x3000")
    assert {"mech:llsc:0x3000", "pc:0x3000"} <= box.allowed
    assert at_site.data["mechanisms"][0]["id"] == "mech:llsc:0x3000"
    assert elsewhere.text == "0 mechanisms with a site at 0x2004, showing 0 by own share"
