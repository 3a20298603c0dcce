"""Arm SPE perf script import: record grouping, branch and memory figures, ALP output."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pcscope.cli.main import main
from pcscope.core.errors import InputError
from pcscope.core.importers.spe import branch_flags, decode_data_src, read_spe
from pcscope.core.readers.alp import read_alp

FIX = Path(__file__).parent / "fixtures" / "import"
NEW = FIX / "spe_perf_script.txt"        # perf 6.x: time, cpu, flags, 'branch' events
OLD = FIX / "spe_perf61_script.txt"      # perf 6.1: no time, no flags, 'branch-miss'
BASE = 0xffff8e3b0000


def _by_pc(records: list[dict]) -> dict[int, dict]:
    return {int(r["pc"], 16): r for r in records}


def test_records_from_new_perf():
    result = read_spe(NEW)
    lines = [line for line in NEW.read_text().splitlines() if line.strip()]
    assert result.samples == len(lines)
    # One SPE record per distinct (time, ip): the synthesized samples are grouped back.
    assert result.spe_records == len({(line.split()[1], line.split()[-3]) for line in lines})
    recs = _by_pc(result.records)
    assert set(recs) == {BASE + off for off in (0x688, 0x694, 0x6a4, 0x6d4, 0x764)}
    load = recs[BASE + 0x688]
    # Three samples of the load: an L1 hit (5 cycles), an L2 hit (14) and a DRAM access
    # with a TLB walk miss (212).
    assert load["loop"] == "spe" and load["iterations"] == 3
    assert load["mem"] == {"kind": "load", "accesses": 3, "l1d_miss": 2, "l2_miss": 1,
                           "llc_miss": 1, "tlb_miss": 1, "avg_latency": (5 + 14 + 212) / 3}
    assert "branch" not in load
    branch = recs[BASE + 0x6a4]
    # jcc (2 cycles), jcc/miss/ (9), jcc/not_taken/ (4).
    assert branch["branch"] == {"kind": "conditional", "executed": 3, "taken": 2,
                                "mispredicted": 1}
    assert branch["spe"]["avg_latency"] == 5.0
    store = recs[BASE + 0x764]
    assert store["mem"] == {"kind": "store", "accesses": 1, "l1d_miss": 0, "tlb_miss": 0,
                            "avg_latency": 30.0}
    assert recs[BASE + 0x694] == {"loop": "spe", "pc": hex(BASE + 0x694), "iterations": 1,
                                  "spe": {"samples": 1, "avg_latency": 1.0,
                                          "module": "libhot_a64.so", "function": "hot_sum"}}


def test_records_from_perf_6_1():
    result = read_spe(OLD)
    # Without a time, a record ends where perf's event order starts again.
    assert result.spe_records == 6
    recs = _by_pc(result.records)
    load = recs[BASE + 0x688]
    assert load["iterations"] == 3
    assert load["mem"] == {"kind": "load", "accesses": 3, "l1d_miss": 1, "tlb_miss": 0,
                           "avg_latency": 9.0}
    # perf 6.1 samples branches only when they mispredict: how often the branch ran is
    # unknown, so no executed count (and no rate) is claimed.
    assert recs[BASE + 0x6a4]["branch"] == {"kind": "conditional", "mispredicted": 2}
    assert recs[BASE + 0x6a4]["spe"]["branch_kind"] == "unknown"


@pytest.mark.parametrize("value, kind, level, l1, llc, tlb", [
    (0x288080142, "load", 1, False, False, False),     # Neoverse: L1D hit
    (0x488080442, "load", 2, True, False, False),      # L2 hit
    (0x1a90081042, "load", 4, True, True, True),       # DRAM, TLB walk missed
    (0x1e88080024, "store", None, None, None, False),  # stores carry no level
    (0x88000182, "load", None, True, None, False),     # generic: L1 miss only
])
def test_data_source(value, kind, level, l1, llc, tlb):
    ds = decode_data_src(value)
    assert (ds.kind, ds.level, ds.l1_miss, ds.llc_miss, ds.tlb_miss) == (kind, level, l1, llc, tlb)


@pytest.mark.parametrize("words, expected", [
    (["jcc"], (True, "conditional", False, False)),
    (["jcc/miss/"], (True, "conditional", True, False)),
    (["jmp/miss,not_taken/"], (True, "direct", True, True)),
    (["br", "miss"], (True, None, True, False)),
    (["bom"], (True, "conditional", True, False)),
    (["call"], (True, "call", False, False)),
    ([], (False, None, False, False)),
])
def test_branch_flags(words, expected):
    f = branch_flags(words)
    assert (f.branch, f.kind, f.miss, f.not_taken) == expected


def test_alp_output_loads(tmp_path):
    out = tmp_path / "spe.jsonl.gz"
    assert main(["import", "spe", str(NEW), "-o", str(out)]) == 0
    pcs = np.array([BASE + 0x688, BASE + 0x6a4], dtype=np.uint64)
    table = read_alp(out, profile_pcs=pcs)
    assert table.stats.records == 5 and table.stats.unmatched == 3
    rec = table.get(BASE + 0x6a4)
    assert rec.matched and rec.loops == ["spe"]
    assert rec.branch.mispredict_rate == pytest.approx(1 / 3)
    assert table.get(BASE + 0x688).mem.llc_miss_rate == pytest.approx(1 / 3)


def test_not_spe(tmp_path):
    other = tmp_path / "cycles.txt"
    other.write_text("    250000 cpu-clock:  ffffffff815fd0e5 set_pte_range ([kernel.kallsyms])\n")
    with pytest.raises(InputError, match="no Arm SPE samples"):
        read_spe(other)


def test_output_is_json_lines(tmp_path, capsys):
    out = tmp_path / "spe.jsonl"
    assert main(["import", "spe", str(OLD), "-o", str(out)]) == 0
    lines = out.read_text().splitlines()
    assert [json.loads(line)["pc"] for line in lines] == sorted(
        (json.loads(line)["pc"] for line in lines), key=lambda p: int(p, 16))
    assert "15 samples = 6 SPE records at 3 PCs" in capsys.readouterr().err
