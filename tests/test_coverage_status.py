"""Why a hot function or mechanism has no idea, said honestly: figures are "healthy" only
where the simulator measured them; hot code that was never a candidate is not "cold"."""

from __future__ import annotations

import pytest

from pcscope.core.engine.coverage import (
    COLD,
    HEALTHY,
    IDEA,
    NO_RULE,
    NOT_CANDIDATE,
    OUT_OF_BUDGET,
    _measured,
    _status,
)


@pytest.mark.parametrize(("ranks", "examined", "left", "measured", "selected", "status"), [
    ((1,), True, False, False, True, IDEA),
    ((), True, False, True, True, HEALTHY),
    ((), True, False, False, True, NO_RULE),  # examined, nothing measured: no verdict
    ((), False, True, False, True, OUT_OF_BUDGET),
    ((), False, False, False, True, NOT_CANDIDATE),  # hot but nothing to examine
    ((), False, False, False, False, COLD),
])
def test_status(ranks, examined, left, measured, selected, status) -> None:
    assert _status(ranks, examined, left, measured, selected) == status


def test_measured_needs_a_record_at_one_of_the_pcs() -> None:
    class Alp:
        @staticmethod
        def get(pc: int):
            return object() if pc == 0x2004 else None

    assert _measured(Alp, [0x2000, 0x2004])
    assert not _measured(Alp, [0x2000])
    assert not _measured(None, [0x2004])


def test_what_decides_is_said_once_below_the_table() -> None:
    """Rows whose code says nothing specific share the measurement that decides: the
    table says what each function is, the measurement comes once below it."""
    from pcscope.core import code_character
    from pcscope.core.engine.coverage import CoverageRow
    from pcscope.core.engine.report import _coverage_md

    branchy = [("ldr w1, [x0]", 20), ("cmp w1, w2", 20), ("b.lt 0x1000", 20),
               ("add w3, w3, #1", 40)]
    store = [("str xzr, [x0], #8", 25), ("sub x1, x1, #8", 25), ("tst x1, #8", 25),
             ("b.ne 0x0", 25)]
    rows = [CoverageRow("function", f"fn:{n}", n, 0.1, NO_RULE, (),
                        (c := code_character.describe(code)).what, c.decides).to_json()
            for n, code in (("a", branchy), ("b", branchy), ("c", store))]
    text = "\n".join(_coverage_md(rows))
    assert text.count("BR_MIS_PRED_RETIRED") == 1
    assert text.count("branchy scalar integer code") == 2 and "store loop: 25%" in text
    assert not rows[2]["decides"]
