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
