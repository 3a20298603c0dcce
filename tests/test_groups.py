"""Groups.from_codes: rows grouped by code, in row order, whichever way it sorts them
(runs of one code, or rows one by one when the runs are short)."""

import numpy as np
import pytest

from pcscope.core.profile import Groups


def _expected(codes: np.ndarray, groups: int) -> tuple[list[list[int]], list[int]]:
    members = [[r for r, c in enumerate(codes.tolist()) if c == g] for g in range(groups)]
    return members, [len(m) for m in members]


def _members(grouped: Groups) -> list[list[int]]:
    return [grouped.members(g).tolist() for g in range(len(grouped))]


@pytest.mark.parametrize("codes", [
    [],
    [-1, -1],
    [2, 2, 2, 0, 0, 1, 1, 1, 1, 2, 2, -1, -1, 0],  # runs, a code seen in two runs
    [0, 1, 0, 1, -1, 1, 0, 2, 2, 0],  # short runs
    [3, 3, 3, 3, 3, 3, 3, 3],  # one run; groups 0..2 empty
])
def test_groups_hold_each_codes_rows_in_row_order(codes: list[int]) -> None:
    array = np.array(codes, dtype=np.int32)
    grouped = Groups.from_codes(array, 4)
    members, sizes = _expected(array, 4)
    assert _members(grouped) == members
    assert grouped.sizes().tolist() == sizes
    assert grouped.rows.dtype == np.int64


def test_runs_and_rows_agree_on_random_codes() -> None:
    rng = np.random.default_rng(7)
    for trial in range(200):
        codes = rng.integers(-1, 6, int(rng.integers(0, 80))).astype(np.int32)
        if trial % 2:  # long runs: the run path
            codes = np.repeat(codes[:8], 10)
        grouped = Groups.from_codes(codes, 6)
        assert _members(grouped) == _expected(codes, 6)[0]
