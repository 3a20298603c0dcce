"""The real AArch64 profile indexes, and its figures match facts.json computed apart."""

from __future__ import annotations

import pytest

from pcscope.index.store import open_workload


@pytest.fixture(scope="module")
def workload(bzip2, tmp_path_factory):
    return open_workload(bzip2.profile, index_dir=tmp_path_factory.mktemp("idx"))


@pytest.fixture(scope="module")
def facts(bzip2):
    return bzip2.facts()


def sig6(x: float) -> float:
    return float(f"{x:.6g}")


def test_rows_and_total(workload, facts):
    assert len(workload.profile) == facts["rows"]
    assert workload.profile.total == facts["total"]


def test_top_functions(workload, facts):
    top = sorted(workload.profile.functions, key=lambda f: -f.value)[:10]
    assert [(f.name, sig6(f.weight)) for f in top] == [(n, s) for n, s in facts["top_functions"]]


def _top_hits(workload, categories, n):
    profile = workload.profile
    hits = {h.pc for c in categories for h in workload.patterns.hits(c)}
    ranked = sorted(hits, key=lambda pc: (-profile.share(profile.row_of(pc)), pc))[:n]
    return [[f"0x{pc:x}", profile.asm(profile.row_of(pc)), sig6(profile.share(profile.row_of(pc)))]
            for pc in ranked]


def test_hot_indirect_branches(workload, facts):
    expected = facts["hot_indirect_branches"]
    assert _top_hits(workload, ["indirect-branch"], len(expected)) == expected


def test_hot_atomics(workload, facts):
    expected = facts["hot_atomics"]
    got = _top_hits(workload, ["atomic-llsc", "atomic-lse", "acquire-release"], len(expected))
    assert got == expected


def test_hot_barriers(workload, facts):
    expected = facts["hot_barriers"]
    assert _top_hits(workload, ["barrier"], len(expected)) == expected
