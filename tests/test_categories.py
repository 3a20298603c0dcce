"""Each mechanism's category says what the mechanism is (review 11, item 1): an engineer
filters and sorts ideas by category, so spills, loop state kept in memory, a C-library string
routine, registers cleared by a hardening flag, a byte-wise big-endian store and a constant-trip
loop each get the category true of them, not `store-forwarding` or `other`. The categories are
the output contract: every one of them is in docs/formats.md §4 and nowhere else."""

from __future__ import annotations

import re
from pathlib import Path
from typing import get_args

from pcscope.core.contract.categories import CATEGORIES
from pcscope.core.contract.findings import Finding
from tests.test_loop_shapes import mechanisms_of as counted_mechanisms_of
from tests.test_loop_shapes import of_kind, price_loop
from tests.test_mechanism_rules import STRCMP, STUB, lookup, mechanisms_of
from tests.test_memory_state import AT, stream_loop
from tests.test_return_zeroing import CLEARS
from tests.test_spill_blocks import unrolled
from tests.test_store_shapes import BIG_ENDIAN

FORMATS = Path(__file__).resolve().parents[1] / "docs" / "formats.md"


def category(tmp_path, blocks, kind: str) -> str:
    _profile, table = mechanisms_of(tmp_path, blocks)
    (m,) = [m for m in table if m.kind == kind]
    return m.category


def test_spills_are_register_pressure_not_failed_forwarding(tmp_path):
    """Even a reload right after its spill: same slot, same width, so it forwards; what
    costs is the spill and the reload a register would not need."""
    assert category(tmp_path, [("block", 0x1000, 50_000, unrolled(60, spill=True))],
                    "spill-block") == "register-spill"


def test_loop_state_in_memory_is_its_own_category(tmp_path):
    assert category(tmp_path, [("copy", AT, 1000, stream_loop())],
                    "memory-state") == "state-in-memory"


def test_a_string_routine_is_not_other(tmp_path):
    assert category(tmp_path, [("lookup", 0x1000, 1000, lookup(0x1000)),
                               ("plt", 0x4000, 1000, STUB), ("strcmp", 0x5000, 1000, STRCMP)],
                    "libc-routine") == "string-routine"


def test_registers_cleared_on_return_are_hardening(tmp_path):
    blocks = [(f"f{i}", 0x1000 * (i + 1), 1000, CLEARS) for i in range(3)]
    assert category(tmp_path, blocks, "return-zeroing") == "hardening"


def test_a_byte_wise_big_endian_store_is_a_narrow_access(tmp_path):
    assert category(tmp_path, [("final", 0x1000, 1000, BIG_ENDIAN)],
                    "byte-swap-store") == "narrow-access"


def test_a_constant_trip_loop_is_loop_overhead(tmp_path):
    _profile, table = counted_mechanisms_of(tmp_path, [("literal_price", 0x1000, price_loop())])
    (m,) = of_kind(table, "fixed-trip-sum")
    assert m.category == "loop-overhead"


def test_every_category_is_documented_and_accepted():
    """docs/formats.md §4's table lists exactly CATEGORIES, and an idea may carry each."""
    table = FORMATS.read_text(encoding="utf-8").split("### Categories", 1)[1].split("\n## ", 1)[0]
    documented = re.findall(r"^\| `([a-z-]+)` \|", table, flags=re.M)
    assert documented == list(CATEGORIES)
    assert get_args(Finding.model_fields["category"].annotation) == CATEGORIES
