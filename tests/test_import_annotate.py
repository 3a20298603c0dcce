"""perf annotate --stdio import, with (-n) and without sample counts."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pcscope.cli.main import main
from pcscope.core.errors import UsageError
from pcscope.core.importers.annotate import read_annotate
from pcscope.core.readers.profile_csv import read_profile

FIX = Path(__file__).parent / "fixtures" / "import"
COUNTS = FIX / "perf_annotate_n.txt"
PERCENT = FIX / "perf_annotate.txt"

_HEADER = re.compile(r"Disassembly of (\S+) for \S+ \((\d+) samples")
_LINE = re.compile(r"^\s*([0-9.]+) :\s+([0-9a-f]+):\s+(\S+)")


def _table(path: Path) -> tuple[dict[int, tuple[float, str]], dict[str, int]]:
    """{addr: (value, mnemonic)} and the sample total of each symbol block, by regex."""
    rows, totals, block = {}, {}, 0
    for line in path.read_text().splitlines():
        m = _HEADER.search(line)
        if m:
            block += 1
            totals[block] = int(m.group(2))
            continue
        m = _LINE.match(line)
        if m:
            rows[int(m.group(2), 16)] = (float(m.group(1)), m.group(3), block)
    return rows, totals


def test_counts_from_samples_column():
    expected, totals = _table(COUNTS)
    result = read_annotate(COUNTS)
    assert result.events == ["cpu-clock"]
    assert result.symbols == len(totals)
    got = {r.pc: r for r in result.rows}
    assert set(got) == set(expected)
    for pc, (value, mnemonic, _) in expected.items():
        assert got[pc].samples == int(value)
        assert got[pc].asm.split()[0] == mnemonic
        assert got[pc].module == "libhot.so"
    # Every symbol's rows add up to the sample count in its header.
    for block, total in totals.items():
        assert sum(got[pc].samples for pc, v in expected.items() if v[2] == block) == total
    assert {r.function for r in result.rows} == {"hot_sum", "hot_div", "hot_count"}


def test_percentages_become_counts_of_the_symbol():
    counts = {r.pc: r.samples for r in read_annotate(COUNTS).rows}
    percent = read_annotate(PERCENT)
    expected, totals = _table(PERCENT)
    for row in percent.rows:
        pct, _, block = expected[row.pc]
        assert row.samples == round(pct * totals[block] / 100)
        # Two decimals of a percentage of at most a few hundred samples: exact counts.
        assert row.samples == counts[row.pc]


def test_base_relocates_addresses_and_targets():
    base = 0x7f0000000000
    plain = {r.pc: r for r in read_annotate(COUNTS).rows}
    moved = {r.pc: r for r in read_annotate(COUNTS, bases={"libhot.so": base}).rows}
    assert set(moved) == {pc + base for pc in plain}
    jump = next(r for r in plain.values() if r.asm.startswith("jne"))
    target = int(jump.asm.split()[-1], 16)
    assert moved[jump.pc + base].asm == f"jne 0x{target + base:x}"


def test_event_choice(tmp_path):
    two = tmp_path / "two.txt"
    text = COUNTS.read_text()
    two.write_text(text + text.replace("for cpu-clock", "for task-clock"))
    with pytest.raises(UsageError, match="several events"):
        read_annotate(two)
    assert len(read_annotate(two, event="task-clock").rows) == len(read_annotate(COUNTS).rows)
    with pytest.raises(UsageError, match="not in"):
        read_annotate(two, event="cycles")


def test_cli_output_loads(tmp_path):
    out = tmp_path / "annotate.csv.gz"
    assert main(["import", "annotate", str(COUNTS), "-o", str(out)]) == 0
    profile = read_profile(out)
    _, totals = _table(COUNTS)
    assert profile.total == sum(totals.values())
    assert set(profile.modules) == {"libhot.so"}
