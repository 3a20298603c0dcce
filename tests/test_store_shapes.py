"""Stores written the long way, each with a look-alike that must stay quiet: a byte-swapping
store spelled as shifts and byte stores (review item 11)."""

from __future__ import annotations

import pytest
from test_mechanism_rules import mechanisms_of

from pcscope.core.backends.advice import advise
from pcscope.core.mechanism_data import builtins_of

# SHA-256's digest output: each state word stored most significant byte first
BIG_ENDIAN = ["ldr w0, [x20], #4", "add x19, x19, #4", "lsr w3, w0, #0x18",
              "lsr w2, w0, #0x10", "lsr w1, w0, #8", "sturb w3, [x19, #-4]",
              "sturb w2, [x19, #-3]", "sturb w1, [x19, #-2]", "sturb w0, [x19, #-1]",
              "cmp x19, x4", "b.ne #0x1000"]


def as_dict(m) -> dict:
    """The mechanism as the advice gets it (its typed values too)."""
    return builtins_of(m)


def test_big_endian_byte_stores_are_one_rev_and_str(tmp_path):
    """The loop that only stores the words (load, pointer step, compare, branch) is the
    swap's own: its whole body is the site, and `rev` + `str` leave 6 of its 11 rows."""
    profile, table = mechanisms_of(tmp_path, [("final", 0x1000, 1000, BIG_ENDIAN)])
    (m,) = [m for m in table if m.kind == "byte-swap-store"]
    assert m.sites[0].pcs == tuple(0x1000 + 4 * i for i in range(11))
    assert m.share == pytest.approx(11 * 1000 / profile.total)
    figures = {x.name: x.value for x in m.metrics}
    assert figures["words stored"] == 1000 and figures["instructions per word"] == 7
    assert figures["loop instructions per word"] == 4
    advice = advise(as_dict(m), "executions", None)
    assert "`rev w`" in advice.recommendation and "rev32 v.16b" in advice.recommendation
    assert "4 more per word" in advice.claim
    assert advice.removes == round(5 / 11, 3)


def test_a_loop_doing_other_work_is_not_the_swaps(tmp_path):
    """The swap inside a loop with work of its own: only the shifts and byte stores are
    the site; the loop's other rows belong to whatever that work is."""
    work = ["add x5, x5, x6", "eor x6, x6, x5", "mul x7, x5, x6", "add x8, x7, #3",
            "madd x9, x8, x7, x6", "sub x10, x9, x5"]
    loop = [*BIG_ENDIAN[:-2], *work, *BIG_ENDIAN[-2:]]
    profile, table = mechanisms_of(tmp_path, [("final", 0x1000, 1000, loop)])
    (m,) = [m for m in table if m.kind == "byte-swap-store"]
    assert m.sites[0].pcs == tuple(0x1000 + 4 * i for i in range(2, 9))
    assert m.share == pytest.approx(7 * 1000 / profile.total)
    advice = advise(as_dict(m), "executions", None)
    assert advice.removes == round(5 / 7, 3)


def test_a_doubleword_stored_big_endian_is_one_rev_x(tmp_path):
    shifts = [f"lsr x{9 - k}, x0, #{8 * k}" for k in range(7, 0, -1)]
    stores = [f"strb w{9 - k}, [x1, #{7 - k}]" for k in range(7, 0, -1)] + ["strb w0, [x1, #7]"]
    _profile, table = mechanisms_of(tmp_path, [("put64", 0x1000, 1000, [*shifts, *stores,
                                                                         "ret"])])
    (m,) = [m for m in table if m.kind == "byte-swap-store"]
    assert len(m.sites[0].pcs) == 15
    advice = advise(as_dict(m), "executions", None)
    assert advice.removes == round(13 / 15, 3) and advice.title.endswith("put64")


@pytest.mark.parametrize("lines", [
    # little-endian order: the bytes land where one `str` would put them — not a swap
    ["ldr w0, [x20], #4", "lsr w3, w0, #0x18", "lsr w2, w0, #0x10", "lsr w1, w0, #8",
     "strb w0, [x19]", "strb w1, [x19, #1]", "strb w2, [x19, #2]", "strb w3, [x19, #3]", "ret"],
    # bytes of four different values (a byte-wise copy), not one register's
    ["ldrb w3, [x0]", "ldrb w2, [x0, #1]", "ldrb w1, [x0, #2]", "ldrb w5, [x0, #3]",
     "strb w3, [x19]", "strb w2, [x19, #1]", "strb w1, [x19, #2]", "strb w5, [x19, #3]", "ret"],
    # a gap in the addresses: four separate fields, not one word
    ["lsr w3, w0, #0x18", "lsr w2, w0, #0x10", "lsr w1, w0, #8", "strb w3, [x19]",
     "strb w2, [x19, #1]", "strb w1, [x19, #4]", "strb w0, [x19, #5]", "ret"],
])
def test_look_alikes_are_not_byte_swaps(tmp_path, lines):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, 1000, lines)])
    assert not [m for m in table if m.kind == "byte-swap-store"]


def test_a_hot_narrow_clear_loop_is_an_idea(tmp_path):
    """`str xzr` 8 bytes at a time (OPENSSL_cleanse's shape): a store-loop mechanism whose
    advice halves the iterations with `stp`; the upside is that half."""
    loop = ["str xzr, [x0], #8", "sub x1, x1, #8", "tst x1, #0xfffffffffffffff8",
            "b.ne #0x1000"]
    profile, table = mechanisms_of(tmp_path, [
        ("clear", 0x1000, 10000, loop), ("work", 0x2000, 1000, ["add x0, x0, #1"] * 8)])
    (m,) = [m for m in table if m.kind == "store-loop"]
    assert m.share == pytest.approx(4 * 10000 / profile.total)
    figures = {x.name: x.value for x in m.metrics}
    assert figures["store width"] == 8 and figures["iterations"] == 10000
    advice = advise(as_dict(m), "executions", None)
    assert "`stp xzr, xzr`" in advice.recommendation and advice.removes == 0.5


@pytest.mark.parametrize("loop", [
    # a copy: as many loads as stores
    ["ldr x2, [x1], #8", "str x2, [x0], #8", "subs x3, x3, #1", "b.ne #0x1000"],
    # a byte-swapping store loop: stores what it loads (the byte-swap idea's)
    BIG_ENDIAN,
    # already 16 bytes per store: nothing wider to advise
    ["stp xzr, xzr, [x0], #16", "subs x1, x1, #16", "b.ne #0x1000"],
])
def test_copies_and_wide_fills_are_not_store_loop_ideas(tmp_path, loop):
    _profile, table = mechanisms_of(tmp_path, [("f", 0x1000, 10000, loop)])
    assert not [m for m in table if m.kind == "store-loop"]


def test_a_c_library_fill_is_left_to_its_routine(tmp_path):
    loop = ["strb w1, [x0], #1", "subs x2, x2, #1", "b.ne #0x1000"]
    _profile, table = mechanisms_of(tmp_path, [("memset", 0x1000, 10000, loop)])
    assert not [m for m in table if m.kind == "store-loop"]
