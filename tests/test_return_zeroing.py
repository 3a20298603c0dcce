"""Registers cleared on return (pcscope.core.return_zeroing): runs of mov/movz #0 before
`ret` in several functions are one mechanism; a function returning 0 in x0, and one
function alone, stay quiet."""

from __future__ import annotations

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.mechanism_data import builtins_of
from tests.test_mechanism_rules import mechanisms_of

CLEARS = ["add x0, x0, x1", "movz x1, #0", "movz x2, #0", "movz x16, #0", "ret"]
RETURNS_ZERO = ["add x2, x0, x1", "str x2, [x3]", "mov w0, #0", "ret"]


def zeroing(tmp_path, functions):
    blocks = [(f"f{i}", 0x1000 * (i + 1), 1000, lines) for i, lines in enumerate(functions)]
    profile, table = mechanisms_of(tmp_path, blocks)
    return profile, [m for m in table if m.kind == "return-zeroing"]


def test_runs_before_returns_in_many_functions_are_one_mechanism(tmp_path):
    profile, (m,) = zeroing(tmp_path, [CLEARS] * 3 + [RETURNS_ZERO])
    figures = {x.name: x.value for x in m.metrics}
    assert figures["functions"] == 3 and figures["registers cleared per return"] == 2
    assert m.share == pytest.approx(3 * 3 * 1000 / profile.total)  # the moves, x1 included
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None and "zero_call_used_regs" in advice.recommendation


def test_returning_zero_is_not_clearing(tmp_path):
    _profile, found = zeroing(tmp_path, [RETURNS_ZERO] * 4)
    assert found == []


def test_one_function_alone_is_no_flag(tmp_path):
    _profile, found = zeroing(tmp_path, [CLEARS, RETURNS_ZERO, RETURNS_ZERO])
    assert found == []


def test_upside_counts_the_runs_of_the_small_functions_the_advice_exempts(tmp_path):
    # three small functions and one of 100 instructions per call, each clearing 3 registers:
    # exempting the small ones deletes three quarters of the runs
    long = [*(["add x0, x0, x1"] * 96), *CLEARS[1:]]
    _profile, (m,) = zeroing(tmp_path, [CLEARS] * 3 + [long])
    advice = advise(builtins_of(m), "executions", None)
    assert advice.removes == 0.75
    assert "75% of the runs' executions are in small functions" in advice.claim
