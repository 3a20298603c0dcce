"""`:` in the explorer (and anything else that takes a place in the code) reads addresses
and symbols the way perf annotate shows them."""

from __future__ import annotations

import pytest
from tui_data import write_inputs

from pcscope.core.locate import locate
from pcscope.index.store import open_workload


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    folder = tmp_path_factory.mktemp("locate")
    inputs = write_inputs(folder / "inputs")
    return open_workload(inputs.profile, index_dir=folder / "idx").profile


def test_addresses_in_every_spelling(profile) -> None:
    assert locate(profile, "0x2004") == 0x2004
    assert locate(profile, "pc:0x2004") == 0x2004
    assert locate(profile, "2004") == 0x2004  # bare digits are hex, as on screen
    assert locate(profile, " 0X2004 ") == 0x2004


def test_symbols_and_offsets(profile) -> None:
    first = profile.functions[profile.functions.index_of("runtime_dispatch")].first_pc
    assert locate(profile, "runtime_dispatch") == first
    assert locate(profile, "fn:runtime_dispatch") == first
    assert locate(profile, "runtime_dispatch+0x4") == first + 4
    assert locate(profile, "runtime_dispatch+8") == first + 8


def test_what_is_not_understood_says_so(profile) -> None:
    with pytest.raises(ValueError, match="no function named 'nosuch'"):
        locate(profile, "nosuch+0x4")
    with pytest.raises(ValueError, match="no function named 'zz'"):
        locate(profile, "zz")
    with pytest.raises(ValueError, match="bad address"):
        locate(profile, "0xg1")
    with pytest.raises(ValueError, match="give an address"):
        locate(profile, "  ")
