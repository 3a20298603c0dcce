"""Per-operation call trees (pcscope.core.call_cohorts): many small functions entered
exactly as often as each other (or a whole number of times as often) are one mechanism;
the function doing the work, functions whose counts only look alike, and too few
functions stay out."""

from __future__ import annotations

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.engine.tools import _mechanism_data
from tests.test_mechanism_rules import mechanisms_of


def small(n: int) -> list[str]:
    return [f"add x{i % 8}, x{i % 8}, #1" for i in range(n - 1)] + ["ret"]


def tree(counts: list[int], size: int = 10) -> list:
    blocks = [(f"f{i}", 0x10000 * (i + 1), c, small(size)) for i, c in enumerate(counts)]
    work = ("kernel", 0x900000, counts[0], small(300))  # the operation's work: 300 per call
    return [*blocks, work, ("main", 0x800000, 1, small(4))]


def operations(tmp_path, blocks):
    profile, table = mechanisms_of(tmp_path, blocks)
    return profile, [m for m in table if m.kind == "per-operation"]


def test_small_functions_entered_once_per_operation_are_one_tree(tmp_path):
    counts = [2000] * 8 + [4000, 2001]  # one called twice per operation; one from start-up too
    profile, (m,) = operations(tmp_path, tree(counts))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["operations"] == 2000 and figures["functions per operation"] == 10
    assert figures["calls per operation"] == 11
    assert "kernel" not in m.functions  # over 256 instructions per call: the work
    assert m.share == pytest.approx(10 * sum(counts) / profile.total)
    assert m.sites[0].pc == 0x10000 * 9 + 4 * 9  # keyed on the function's ret
    advice = advise(_mechanism_data(m), "executions", None)
    assert advice is not None and advice.rule == "per-operation"
    assert "reuse the context" in advice.recommendation
    assert "allocator" not in advice.claim  # no member is one


def test_counts_that_only_look_alike_are_no_tree(tmp_path):
    _profile, found = operations(tmp_path, tree([2000 + 37 * i for i in range(10)]))
    assert found == []


def test_too_few_functions_are_no_tree(tmp_path):
    _profile, found = operations(tmp_path, tree([2000] * 7))
    assert found == []


def test_members_called_a_little_more_from_elsewhere_join_and_look_alikes_stay_out(tmp_path):
    # two more calls per operation plus 0.5 % from start-up and outside callers join (an
    # allocator); counts 5 % above a multiple belong to something else
    counts = [2000] * 8 + [4020, 2100, 4200]
    _profile, (m,) = operations(tmp_path, tree(counts))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["functions per operation"] == 9 and figures["calls per operation"] == 10
    assert "f8" in m.functions and "f9" not in m.functions and "f10" not in m.functions


def test_allocator_calls_per_operation_are_named(tmp_path):
    # malloc and free twice per operation, plus a few calls from start-up; CRYPTO_malloc wraps
    # malloc but is not the allocator itself
    blocks = tree([2000] * 8) + [("malloc", 0x700000, 4008, small(10)),
                                 ("free", 0x710000, 4006, small(12)),
                                 ("CRYPTO_malloc", 0x720000, 4008, small(5))]
    _profile, (m,) = operations(tmp_path, blocks)
    assert {"malloc", "free", "CRYPTO_malloc"} <= set(m.functions)
    advice = advise(_mechanism_data(m), "executions", None)
    assert "The C allocator per operation: 2 malloc + 2 free = 44 instructions" in advice.claim
