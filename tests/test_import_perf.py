"""perf script (+ objdump) import: a real x86 capture, an AArch64 shared object, bases."""

from __future__ import annotations

import io
import re
import sys
from collections import Counter
from pathlib import Path

import pytest

from pcscope.cli.main import main
from pcscope.core.errors import UsageError
from pcscope.core.importers.common import NO_ASM
from pcscope.core.importers.objdump import parse_objdump
from pcscope.core.importers.perf import build_profile, parse_bases, read_perf_script
from pcscope.core.importers.perf_script import parse_mmap, parse_sample
from pcscope.core.readers.profile_csv import read_profile

FIX = Path(__file__).parent / "fixtures" / "import"
SCRIPT = FIX / "perf_script.txt"              # -F ip,sym,dso,period
SCRIPT_EVENT = FIX / "perf_script_event.txt"  # -F event,ip,sym,symoff,dso,period
SCRIPT_MMAP = FIX / "perf_script_mmap.txt"    # --show-mmap-events -F ip,sym,dso,period
X86 = FIX / "libhot_x86.objdump.txt"
A64_SCRIPT = FIX / "a64_perf_script.txt"
A64 = FIX / "libhot_a64.objdump.txt"
A64_BASE = 0xffff8e3b0000


def _periods_by_ip(path: Path, event: str | None = None) -> Counter:
    """Sum of periods per ip, read with plain splitting (lines: period [event:] ip sym (dso))."""
    out: Counter = Counter()
    for line in path.read_text().splitlines():
        tokens = line.split()
        if not tokens or "PERF_RECORD" in line:
            continue
        if tokens[1].endswith(":"):
            if event is not None and tokens[1] != event + ":":
                continue
            out[int(tokens[2], 16)] += int(tokens[0])
        else:
            out[int(tokens[1], 16)] += int(tokens[0])
    return out


def _libhot_base() -> int:
    """Where libhot.so's file offset 0 was mapped, from the MMAP2 record."""
    for line in SCRIPT_MMAP.read_text().splitlines():
        m = re.search(r"\[0x([0-9a-f]+)\(0x[0-9a-f]+\) @ 0x([0-9a-f]+) .*r-xp \S*/libhot\.so$",
                      line)
        if m:
            return int(m.group(1), 16) - int(m.group(2), 16)
    raise AssertionError("no libhot.so mapping in the fixture")


@pytest.mark.parametrize("line, ip, sym, off, dso, period, event", [
    ("         python3  4548   261.878731:     250000 cpu-clock:  ffffffff815fd0e5 "
     "set_pte_range+0xf5 ([kernel.kallsyms])",
     0xffffffff815fd0e5, "set_pte_range", 0xf5, "[kernel.kallsyms]", 250000, "cpu-clock"),
    ("    250000      7f9e22d241a5 hot_count (/tmp/fx/libhot.so)",
     0x7f9e22d241a5, "hot_count", None, "/tmp/fx/libhot.so", 250000, None),
    (" ffffffff815fd0e5 ([kernel.kallsyms])",
     0xffffffff815fd0e5, None, None, "[kernel.kallsyms]", None, None),
    ("   1000213       cycles:      ffff8e3b0688 [unknown] (/usr/lib/libx.so)",
     0xffff8e3b0688, None, None, "/usr/lib/libx.so", 1000213, "cycles"),
    ("      1000 cycles:u:  aaaab0001234 std::vector<int, std::allocator<int> >::push_back"
     "(int const&)+0x14 (/usr/bin/app)",
     0xaaaab0001234, "std::vector<int, std::allocator<int> >::push_back(int const&)", 0x14,
     "/usr/bin/app", 1000, "cycles:u"),
])
def test_sample_lines(line, ip, sym, off, dso, period, event):
    s = parse_sample(line)
    assert (s.ip, s.sym, s.symoff, s.dso, s.period, s.event) == (ip, sym, off, dso, period, event)


def test_not_samples():
    assert parse_sample("\t    7f0012345678 main (/usr/bin/app)") is None      # callchain frame
    assert parse_sample("") is None
    line = ("prog 6096 433.960182: PERF_RECORD_MMAP2 6096/6096: [0x7f9e22d24000(0x1000) @ "
            "0x1000 fe:00 2146737 3628991580]: r-xp /tmp/fx/libhot.so")
    assert parse_sample(line) is None
    m = parse_mmap(line)
    assert (m.dso, m.base) == ("/tmp/fx/libhot.so", 0x7f9e22d23000)
    assert parse_mmap(line.replace("r-xp", "r--p")) is None      # not code


def test_real_x86_capture_counts_per_pc():
    samples = read_perf_script(SCRIPT)
    result = build_profile(samples.select(None), parse_objdump(X86),
                           mappings=samples.mappings, weighted=samples.weighted)
    expected = _periods_by_ip(SCRIPT)
    got = {r.pc: r.samples for r in result.rows if r.samples}
    assert got == dict(expected)
    assert result.weighted
    assert [r.pc for r in result.rows] == sorted({r.pc for r in result.rows})


@pytest.mark.parametrize("script, how", [(SCRIPT_EVENT, "symoff"), (SCRIPT_MMAP, "mmap"),
                                         (SCRIPT, "symbols")])
def test_load_base_found_three_ways(script, how):
    samples = read_perf_script(script)
    result = build_profile(samples.select(None), parse_objdump(X86), mappings=samples.mappings)
    [report] = [m for m in result.modules if m.module == "libhot.so"]
    assert report.base.how == how
    assert report.base.base == _libhot_base()
    assert report.unmatched == 0


def test_x86_rows_carry_the_disassembly_and_fill_windows():
    samples = read_perf_script(SCRIPT_EVENT)
    [dis] = parse_objdump(X86)
    rows = build_profile(samples.select(None), [dis]).rows
    base = _libhot_base()
    objdump_text = {}
    for line in X86.read_text().splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and re.match(r"^\s*[0-9a-f]+:$", parts[0]):
            objdump_text[int(parts[0].strip()[:-1], 16)] = parts[2].split()[0]
    lib = [r for r in rows if r.module == "libhot.so"]
    assert lib
    for row in lib:
        assert row.asm.split()[0] == objdump_text[row.pc - base]
        assert row.function in ("hot_sum", "hot_div", "hot_count")
    # Zero-sample rows lie inside a window: between two consecutive sampled rows of their
    # function at most 64 bytes apart.
    sampled = sorted(r.pc for r in lib if r.samples)
    zero = [r for r in lib if not r.samples]
    assert zero
    by_pc = {r.pc: r for r in lib}
    for row in zero:
        lower = max(p for p in sampled if p < row.pc)
        upper = min(p for p in sampled if p > row.pc)
        assert upper - lower <= 64
        assert by_pc[lower].function == by_pc[upper].function == row.function
    # Branch targets are run-time addresses.
    jumps = [r for r in lib if r.asm.startswith("j")]
    assert jumps and all(int(r.asm.split()[-1], 16) > base for r in jumps)


def test_aarch64_shared_object_join():
    samples = read_perf_script(A64_SCRIPT)
    with pytest.raises(UsageError, match="several events.*--event"):
        samples.select(None)
    result = build_profile(samples.select("cycles"), parse_objdump(A64))
    rows = {r.pc: r for r in result.rows}
    expected = _periods_by_ip(A64_SCRIPT, event="cycles")
    assert {pc: r.samples for pc, r in rows.items() if r.samples} == dict(expected)
    b = A64_BASE
    assert rows[b + 0x688].asm == "ldr w1, [x2], #4"
    assert rows[b + 0x688].function == "hot_sum"
    assert rows[b + 0x6a4].asm == f"b.ne 0x{b + 0x688:x}"
    assert rows[b + 0x75c].asm == "ldaxr x0, [x1]"
    # Inside the hot_sum window the unsampled instructions are there with 0 samples.
    for off in (0x694, 0x698, 0x6a0):
        assert rows[b + off].samples == 0
        assert rows[b + off].function == "hot_sum"
    assert b + 0x670 not in rows           # before the first sampled PC: not in a window
    assert rows[b + 0x760].asm == "add x17, x0, x16"
    kernel = rows[0xffffc0081a2b3c4d]
    assert (kernel.asm, kernel.function, kernel.module) == (
        NO_ASM, "el0_svc_common.constprop.0", "[kernel.kallsyms]")
    [lib] = [m for m in result.modules if m.module == "libhot_a64.so"]
    assert (lib.base.base, lib.base.how) == (A64_BASE, "symoff")
    only = build_profile(read_perf_script(A64_SCRIPT).select("instructions"), [])
    assert {r.pc: r.samples for r in only.rows} == {b + 0x688: 2000000, b + 0x6d4: 2000000}


def test_unweighted_counts_lines():
    samples = read_perf_script(A64_SCRIPT, weighted=False)
    rows = {r.pc: r.samples for r in build_profile(samples.select("cycles"), []).rows}
    assert rows[A64_BASE + 0x688] == 3
    assert rows[A64_BASE + 0x6d4] == 2


def test_base_that_cannot_be_inferred(tmp_path):
    script = tmp_path / "s.txt"
    script.write_text("    1000   ffff8e3b0688 [unknown] (/usr/lib/libhot_a64.so)\n")
    samples = read_perf_script(script)
    with pytest.raises(UsageError, match="--base libhot_a64.so=ADDR"):
        build_profile(samples.select(None), parse_objdump(A64))
    rows = build_profile(samples.select(None), parse_objdump(A64),
                         bases=parse_bases([f"/usr/lib/libhot_a64.so=0x{A64_BASE:x}"])).rows
    assert rows[0].asm == "ldr w1, [x2], #4"
    with pytest.raises(UsageError, match="DSO=ADDR"):
        parse_bases(["libhot_a64.so"])


def test_cli_writes_a_profile_the_reader_loads(tmp_path, capsys):
    out = tmp_path / "profile.csv.gz"
    code = main(["import", "perf", "--script", str(A64_SCRIPT), "--objdump", str(A64),
                 "--event", "cycles", "-o", str(out)])
    assert code == 0
    profile = read_profile(out)
    expected = _periods_by_ip(A64_SCRIPT, event="cycles")
    assert profile.total == sum(expected.values())
    row = profile.row_of(A64_BASE + 0x6d4)
    assert profile.asm(row) == "sdiv x0, x0, x3"
    assert int(profile.samples[row]) == expected[A64_BASE + 0x6d4]
    # The derived window of the hot loop runs from its first to its last sampled PC.
    w = profile.window[profile.row_of(A64_BASE + 0x690)]
    pcs = profile.pc[profile.window_rows(int(w))]
    assert (int(pcs[0]), int(pcs[-1])) == (A64_BASE + 0x688, A64_BASE + 0x6a4)
    assert "libhot_a64.so: " in capsys.readouterr().err


def test_cli_reads_stdin_and_reports_errors(tmp_path, monkeypatch, capsys):
    data = A64_SCRIPT.read_bytes()
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BufferedReader(io.BytesIO(data))))
    out = tmp_path / "p.csv"
    assert main(["import", "perf", "--script", "-", "--event", "instructions",
                 "-o", str(out)]) == 0
    assert len(read_profile(out)) == 2
    empty = tmp_path / "empty.txt"
    empty.write_text("\n")
    assert main(["import", "perf", "--script", str(empty), "-o", str(out)]) == 2
    assert "empty.txt: no samples" in capsys.readouterr().err


def test_call_graph_output_takes_the_first_frame():
    script = FIX / "perf_script_callchain.txt"
    expected: Counter = Counter()
    lines = script.read_text().splitlines()
    for i, line in enumerate(lines):
        if line and not line.startswith("\t"):
            period = int(line.split()[0])
            expected[int(lines[i + 1].split()[0], 16)] += period
    samples = read_perf_script(script)
    rows = build_profile(samples.select(None), parse_objdump(X86)).rows
    assert {r.pc: r.samples for r in rows if r.samples} == dict(expected)
    # perf prints a shared object's frames at file addresses: no relocation needed.
    hot = [r for r in rows if r.module == "libhot.so"]
    assert hot and all(r.asm != NO_ASM for r in hot)
