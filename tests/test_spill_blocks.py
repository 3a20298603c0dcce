"""Register spills in a hot straight-line block (pcscope.core.spill_blocks): stack slots the
block both stores and loads are spills; a block reading a stack array it does not write,
and a short block, stay quiet."""

from __future__ import annotations

from pcscope.core.backends.advice import advise
from pcscope.core.mechanism_data import builtins_of
from tests.test_mechanism_rules import mechanisms_of


def unrolled(steps: int, spill: bool) -> list[str]:
    """Per step: a load, an add, and (spilling) a value parked on the stack and fetched."""
    out = []
    for k in range(steps):
        out += [f"ldrh w{k % 8}, [x0, #{2 * k}]", f"add x9, x9, x{k % 8}"]
        out += [f"str x9, [sp, #{0x100 + 8 * k}]", f"ldr x10, [sp, #{0x100 + 8 * k}]"] \
            if spill else [f"ldr x10, [sp, #{0x100 + 8 * k}]", "add x11, x11, x10"]
    return [*out, "ret"]


def spills(tmp_path, lines, count=50_000):
    _profile, table = mechanisms_of(tmp_path, [("block", 0x1000, count, lines)])
    return [m for m in table if m.kind == "spill-block"]


def test_spilling_block_is_found(tmp_path):
    (m,) = spills(tmp_path, unrolled(60, spill=True))
    figures = {x.name: x.value for x in m.metrics}
    assert figures["block instructions"] == 241 and figures["spills and reloads"] == 120
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None and "unroll" in advice.recommendation


def test_stack_array_read_only_is_not_spilling(tmp_path):
    assert spills(tmp_path, unrolled(60, spill=False)) == []


def test_short_or_cold_block_is_quiet(tmp_path):
    assert spills(tmp_path, unrolled(20, spill=True)) == []
    assert spills(tmp_path, unrolled(60, spill=True), count=100) == []
