"""gem5 O3PipeView import: exact syntax, out-of-order records, squashes, micro-ops, ':' in
disassembly, tick conversion, the line-by-line fallback and its errors, streaming."""

from __future__ import annotations

import gzip
import io
import sys
from pathlib import Path

import numpy as np
import pytest

from pcscope.cli.main import main
from pcscope.core.errors import InputError, UsageError
from pcscope.core.importers.gem5 import read_gem5
from pcscope.core.importers.o3pipeview import _parse_numbers, parse_fast
from pcscope.core.readers.alp import read_alp

FIX = Path(__file__).parent / "fixtures" / "import"
A64 = FIX / "o3pipeview_aarch64.txt"
X86 = FIX / "o3pipeview_x86.txt"

# Worked out by hand from o3pipeview_aarch64.txt (500 ticks per cycle): records 1-8 are two
# iterations of a 4-instruction loop, 9-10 the squashed wrong path (printed before 5-8),
# 11 a store retiring at +6 cycles whose data is written at +8.
EXPECTED_A64 = {
    0x400580: (2, 1, {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                      "issue": 4.0, "complete": 8.5, "retire": 9.5}),
    0x400584: (2, 1, {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                      "issue": 8.5, "complete": 9.5, "retire": 10.5}),
    0x400588: (2, 0, {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                      "issue": 4.0, "complete": 5.0, "retire": 10.5}),
    0x40058c: (2, 0, {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                      "issue": 5.0, "complete": 6.0, "retire": 10.5}),
    0x400590: (1, 0, {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                      "issue": 4.0, "complete": 5.0, "retire": 6.0, "store": 8.0}),
}


def _check_a64(result) -> None:
    got = {int(r["pc"], 16): (r["iterations"], r["squashed"], r.get("stages"))
           for r in result.records}
    assert got == EXPECTED_A64


def test_aarch64_trace():
    result = read_gem5(A64)
    _check_a64(result)
    counts = (result.micro_ops, result.instructions, result.committed, result.squashed)
    assert counts == (11, 11, 9, 2)
    assert result.ticks_per_cycle == 500 and result.inferred
    assert result.late == 0 and result.incomplete is None
    assert [r["asm"] for r in result.records][:2] == ["ldr x1, [x0], #8", "add x2, x2, x1"]
    assert all(r["loop"] == "gem5" for r in result.records)


def test_given_ticks_per_cycle():
    result = read_gem5(A64, ticks_per_cycle=250)
    stages = {int(r["pc"], 16): r["stages"] for r in result.records}
    assert stages[0x400590]["store"] == 16.0
    assert not result.inferred
    with pytest.raises(UsageError):
        read_gem5(A64, ticks_per_cycle=0)


def test_micro_ops_merge_and_colons_in_disassembly():
    result = read_gem5(X86)
    recs = {int(r["pc"], 16): r for r in result.records}
    assert result.micro_ops == 4 and result.instructions == 2
    assert recs[0x401000]["asm"] == "MOV_R_M : ld rax, DS:[rdi + 0x8]"
    add = recs[0x401004]
    # Three micro-ops printed out of order (seq 23 before 22): one instruction, named by
    # micro-op 0, reaching each stage when its last micro-op does.
    assert add["asm"] == "ADD_M_R : ldst t1, DS:[rsi]"
    assert add["iterations"] == 1
    assert add["stages"] == {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0,
                             "issue": 9.0, "complete": 10.0, "retire": 11.0, "store": 13.0}


def test_small_chunks_and_late_records():
    # One record per chunk: sequence order is restored across chunks.
    _check_a64(read_gem5(A64, chunk_size=64))
    # With a window of 1 the squashed records 9-10 release 1-8 early... and 5-8 come late,
    # each counted as an instruction of its own: the sums do not change.
    late = read_gem5(A64, chunk_size=64, window=1)
    assert late.late == 4
    _check_a64(late)


def test_fast_and_line_parsers_agree(tmp_path):
    noisy = tmp_path / "noisy.txt"
    lines = A64.read_text().splitlines()
    # Other debug output between records and a prefix in the middle of a line force the
    # line-by-line parser; the result is the same.
    lines.insert(7, "info: Entering event queue @ 0.  Starting simulation...")
    lines.insert(15, "1000: system.cpu: O3PipeView:" + lines.pop(15).split("O3PipeView:", 1)[1])
    noisy.write_text("\n".join(lines) + "\n")
    _check_a64(read_gem5(noisy))
    assert parse_fast(noisy.read_bytes(), set(), "noisy", 0) is None
    plain = parse_fast(A64.read_bytes(), set(), "plain", 0)
    assert plain is not None and len(plain) == 11
    assert plain.asm[0x40058c] == "b.ne 0x400580"


def test_gzip_and_stdin(tmp_path, monkeypatch):
    packed = tmp_path / "trace.gz"
    packed.write_bytes(gzip.compress(A64.read_bytes()))
    _check_a64(read_gem5(packed))
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(
        io.BytesIO(packed.read_bytes()))))
    _check_a64(read_gem5("-"))


@pytest.mark.parametrize("mutate, line, what", [
    (lambda ls: ls.__setitem__(3, "O3PipeView:dispatch:x25"), 4, "malformed O3PipeView line"),
    (lambda ls: ls.__delitem__(6), 7, "fetch line before the retire line of the record that "
     "starts at line 1"),
    (lambda ls: ls.__setitem__(2, "O3PipeView:rinse:2000"), 3, "unknown O3PipeView stage"),
    (lambda ls: ls.__delitem__(0), 1, "decode line without a fetch line"),
    (lambda ls: ls.__delitem__(slice(0, 6)), 1, "retire line without a fetch line"),
])
def test_errors_name_the_line(tmp_path, mutate, line, what):
    bad = tmp_path / "bad.txt"
    lines = A64.read_text().splitlines()
    mutate(lines)
    bad.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError) as err:
        read_gem5(bad)
    assert err.value.line == line
    assert what in err.value.what


def test_truncated_trace_keeps_whole_records(tmp_path, capsys):
    cut = tmp_path / "cut.txt"
    lines = A64.read_text().splitlines()
    cut.write_text("\n".join(lines[:-3]) + "\n")
    result = read_gem5(cut)
    assert result.incomplete == len(lines) - 6
    assert 0x400590 not in {int(r["pc"], 16) for r in result.records}
    out = tmp_path / "alp.jsonl"
    assert main(["import", "gem5", str(cut), "-o", str(out)]) == 0
    assert f"ends inside the record at line {len(lines) - 6}" in capsys.readouterr().err


def test_truncated_gzip(tmp_path):
    packed = gzip.compress(A64.read_bytes() * 50)
    cut = tmp_path / "cut.gz"
    cut.write_bytes(packed[: len(packed) // 2])
    with pytest.raises(InputError, match="truncated or corrupt gzip"):
        read_gem5(cut)


def test_not_a_trace(tmp_path):
    empty = tmp_path / "m5out.txt"
    empty.write_text("gem5 Simulator System.\n")
    with pytest.raises(InputError, match="no O3PipeView records"):
        read_gem5(empty)


def test_number_columns():
    a = np.frombuffer(b"12:0x00400580:7:ff:", dtype=np.uint8)
    starts, ends = np.array([0, 5, 14]), np.array([2, 13, 15])
    assert _parse_numbers(a, starts, ends).tolist() == [12, 400580, 7]
    assert _parse_numbers(a, np.array([5]), np.array([13]), base=16).tolist() == [0x400580]
    assert _parse_numbers(a, np.array([16]), np.array([18])) is None      # 'ff' not decimal
    assert _parse_numbers(a, np.array([2]), np.array([2])) is None        # empty field


def test_cli_writes_an_alp_the_reader_loads(tmp_path, capsys):
    out = tmp_path / "gem5.jsonl.gz"
    assert main(["import", "gem5", str(A64), "-o", str(out)]) == 0
    assert "9 committed, 2 squashed; 500 ticks/cycle (inferred)" in capsys.readouterr().err
    table = read_alp(out, profile_pcs=None)
    rec = table.get(0x400584)
    assert rec.iterations == 2 and rec.loops == ["gem5"]
    assert rec.issue_wait == pytest.approx(5.5)
    assert rec.execute_latency == pytest.approx(1.0)
    assert table.stats.records == 5
