"""Table-driven CRC (pcscope.core.table_crc): byte-indexed table loads combined with the CRC
shifted by one byte, in a loop, without crc32* in the function. AES T-table look-alikes
(byte-indexed table loads xored with each other and a round key) and code that already
uses crc32* stay quiet."""

from __future__ import annotations

import tempfile

import pytest

from pcscope.core.backends.advice import advise
from pcscope.core.engine.candidates import OUTSIDE_SHARE, candidates
from pcscope.core.mechanism_data import builtins_of
from pcscope.index.store import open_workload
from tests.test_mechanism_rules import mechanisms_of
from tests.test_real_corpus import REAL

AT = 0x1000
REFLECTED = ["ldrb w3, [x1], #1", "eor w4, w0, w3", "and x4, x4, #0xff",
             "ldr w4, [x2, x4, lsl #2]", "eor w0, w4, w0, lsr #8", "subs x5, x5, #1",
             f"b.ne {hex(AT)}", "ret"]
MSB_FIRST = ["ldrb w3, [x1], #1", "eor w4, w3, w0, lsr #24", "ldr w4, [x2, x4, lsl #2]",
             "eor w0, w4, w0, lsl #8", "subs x5, x5, #1", f"b.ne {hex(AT)}", "ret"]
# one AES T-table column: bytes of the state index four tables, xored with the round key
T_TABLE = ["ubfx x6, x0, #8, #8", "and x7, x1, #0xff", "lsr w8, w2, #0x18",
           "ldr w6, [x10, x6, lsl #2]", "ldr w7, [x11, x7, lsl #2]", "ldr w8, [x12, x8, lsl #2]",
           "ldr w9, [x13], #4", "eor w6, w6, w7", "eor w6, w6, w8", "eor w3, w6, w9",
           "subs x5, x5, #1", f"b.ne {hex(AT)}", "ret"]


def crcs(tmp_path, lines):
    profile, table = mechanisms_of(tmp_path, [("crc", AT, 1000, lines),
                                              ("main", 0x9000, 1, ["ret"])])
    return profile, [m for m in table if m.kind == "table-crc"]


@pytest.mark.parametrize(("lines", "form"), [(REFLECTED, "reflected (low byte"),
                                             (MSB_FIRST, "MSB-first (top byte")])
def test_table_crc_loop_is_found_with_its_form(tmp_path, lines, form):
    profile, (m,) = crcs(tmp_path, lines)
    assert {x.name: x.value for x in m.metrics}["table lookups"] == 1000
    assert any(form in c for c in m.checks)
    # the lookup, its index and the eor consuming it; not the loop counter
    asm = {profile.asm(profile.row_of(pc)) for pc in m.pcs}
    assert "subs x5, x5, #1" not in asm and lines[2 if lines is MSB_FIRST else 3] in asm
    advice = advise(builtins_of(m), "executions", None)
    assert advice is not None and "crc32x" in advice.recommendation
    assert ("rbit" in advice.recommendation) == (lines is MSB_FIRST)
    # the polynomial note names CRCs of the detected form only
    assert ("zlib" in advice.recommendation) == (lines is REFLECTED)
    assert ("on bit-reversed data" in advice.recommendation) == (lines is MSB_FIRST)


def test_aes_t_table_round_is_not_a_crc(tmp_path):
    _profile, found = crcs(tmp_path, T_TABLE)
    assert found == []


def test_code_already_using_crc32_is_left_alone(tmp_path):
    _profile, found = crcs(tmp_path, [*REFLECTED[:-1], "crc32x w0, w0, x3", "ret"])
    assert found == []


def test_a_mechanism_just_outside_the_hot_selection_is_still_planned():
    """pigz's crc32_z (2.5 %) is the fourth function, after three windows that already hold
    90 % of the run: a mechanism of at least 1 % own share is a candidate anyway."""
    if not (REAL / "pigz").is_dir():
        pytest.skip("the real corpus (../shared/corpus/real) is not here")
    with tempfile.TemporaryDirectory() as tmp:
        workload = open_workload(REAL / "pigz" / "profile.csv.gz", index_dir=tmp,
                                 counts="executions")
        selection = workload.profile.hot_windows(coverage=0.90)
        crc = next(m for m in workload.mechanisms if m.kind == "table-crc")
        assert crc.share >= OUTSIDE_SHARE
        assert not {s.pc for s in crc.sites} & {int(workload.profile.pc[r]) for w in
                                                  selection.windows
                                                  for r in workload.profile.window_rows(w)}
        assert crc.id in {c.id for c in candidates(workload, selection)}
