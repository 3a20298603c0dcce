"""llvm-mca evidence: input preparation, JSON/text parsing, the LLVM 14 model fallback,
records, and the real tool when it is installed."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from pcscope.cli.main import main
from pcscope.core.errors import InputError
from pcscope.core.importers.mca import (
    McaTool,
    fallback_note,
    find_llvm_mca,
    parse_bottleneck,
    parse_mca_json,
    prepare,
    read_mca,
    window_records,
)
from pcscope.core.importers.objdump import parse_objdump

FIX = Path(__file__).parent / "fixtures" / "import"
SOURCE = FIX / "mca_hot_sum.s"
JSON19 = FIX / "mca19_hot_sum.json"
TEXT19 = FIX / "mca19_hot_sum.txt"
JSON14 = FIX / "mca14_hot_sum.json"
A64 = FIX / "libhot_a64.objdump.txt"
A64_SCRIPT = FIX / "a64_perf_script.txt"
TOOL19 = McaTool("/usr/bin/llvm-mca-19", "llvm-mca-19", "19.1.7")
TOOL14 = McaTool("/usr/bin/llvm-mca-14", "llvm-mca-14", "14.0.6")


def _function_rows(name: str) -> list[tuple[int, str]]:
    [dis] = parse_objdump(A64)
    start = dis.symbols[name]
    return [(i.addr, i.asm()) for i in dis.between(start, dis.symbol_end(name) - 1)]


def _info_table(text: str) -> list[tuple[int, float, float]]:
    """(uops, latency, rthroughput) per instruction from llvm-mca's text 'Instruction Info'."""
    rows, inside = [], False
    for line in text.splitlines():
        if line.startswith("[1]    [2]"):
            inside = True
            continue
        if inside:
            if not line.strip():
                break
            uops, latency, rthroughput = line.split()[:3]
            rows.append((int(uops), float(latency), float(rthroughput)))
    return rows


def test_prepare_labels_targets_and_leaves_out_atomics():
    block = prepare(_function_rows("__aarch64_ldadd8_acq_rel"))
    assert block.skipped == {0x750: "atomic: llvm-mca cannot model it",
                             0x75c: "atomic: llvm-mca cannot model it",
                             0x764: "atomic: llvm-mca cannot model it"}
    assert block.lines == [
        "bti c", "adrp x16, ext_20000", "ldrb w16, [x16, #33]", "cbz w16, .L758", "ret",
        ".L758:", "mov x16, x0",
        ".L75c:", "add x17, x0, x16",    # the label of a left-out ldaxr names the next one
        "cbnz w15, .L75c", "ret",
    ]
    assert block.pcs == [0x740, 0x744, 0x748, 0x74c, 0x754, 0x758, 0x760, 0x768, 0x76c]


def test_prepare_capstone_spelling_and_calls():
    rows = [(0x1000, "ldrb w7, [x2, w0, uxtw]"), (0x1004, "b.ne #0x1000"),
            (0x1008, "bl #0x55000021b4"), (0x100c, "tbz w1, #3, #0x1000"),
            (0x1010, "casal w0, w1, [x2]"), (0x1014, "ldr x0, #0x2000"), (0x1018, "ret")]
    block = prepare(rows)
    assert block.lines == [".L1000:", "ldrb w7, [x2, w0, uxtw]", "b.ne .L1000",
                           "tbz w1, #3, .L1000", "ldr x0, ext_2000", "ret"]
    assert block.skipped == {0x1008: "call: llvm-mca would charge it 100 cycles",
                             0x1010: "atomic: llvm-mca cannot model it"}


def test_committed_block_is_what_prepare_makes():
    assert prepare(_function_rows("hot_sum")).lines == SOURCE.read_text().splitlines()


def test_json_figures_match_the_text_report():
    figures = parse_mca_json(JSON19.read_text())
    instructions = [line for line in SOURCE.read_text().splitlines() if not line.endswith(":")]
    assert len(figures.instructions) == len(instructions)
    assert figures.model == "N1"
    table = _info_table(TEXT19.read_text())
    assert [(f.uops, f.latency, round(f.rthroughput, 2)) for f in figures.instructions] == table
    ldr = figures.instructions[instructions.index("ldr w1, [x2], #4")]
    assert ldr.may_load and not ldr.may_store
    assert set(ldr.pressure) <= {"N1UnitL.0", "N1UnitL.1", "N1UnitS.0", "N1UnitS.1", "N1UnitM"}
    assert sum(ldr.pressure.values()) == pytest.approx(2.0, abs=0.05)   # 2 micro-ops
    assert set(ldr.wait) == {"scheduler", "ready", "retire"}
    assert figures.summary["Iterations"] == 100


def test_bottleneck_text():
    text = TEXT19.read_text()
    b = parse_bottleneck(text)
    assert b.summary == {"backend_pressure": 42.40, "resource_pressure": 42.16,
                         "data_dependencies": 0.74, "register_dependencies": 0.74,
                         "memory_dependencies": 0.0}
    assert b.resources == {"N1UnitB": 42.16, "N1UnitM": 40.93, "N1UnitS": 40.93}
    arrows = re.findall(r"\+----> (\d+)\.\s.*## (\w+) (?:dependency|interference):\s+(\S+)", text)
    assert set(b.critical) == {int(i) for i, _, _ in arrows}
    for i, kind, on in arrows:
        assert b.critical[int(i)]["depends_on"] == f"{kind.lower()} {on}"
    assert b.critical[0] == {"depends_on": "register x1", "loop_carried": True}
    assert b.critical[8]["loop_carried"] is False
    assert b.critical[3]["loop_carried"] is True     # reached again across the loop edge


def test_llvm14_falls_back_to_cortex_a57():
    old = parse_mca_json(JSON14.read_text())
    assert old.model == "A57"
    note = fallback_note(TOOL14, "neoverse-n1", old.model)
    assert "no scheduling model for neoverse-n1" in note and "Cortex-A57" in note
    assert fallback_note(TOOL19, "neoverse-n1", "N1") is None
    assert fallback_note(TOOL19, "some-new-core", "N1") is None


def test_records_are_predicted_and_keyed_by_pc():
    rows = _function_rows("hot_sum")
    block = prepare(rows + [(0x6b4, "ldaxr x0, [x1]")])
    figures = parse_mca_json(JSON19.read_text())
    recs = window_records(block, "win:0x670", TOOL19, "neoverse-n1", 100, figures,
                          parse_bottleneck(TEXT19.read_text()))
    assert [r["pc"] for r in recs] == [hex(pc) for pc, _ in rows] + ["0x6b4"]
    assert all(r["basis"] == "predicted" and r["id"] == "mca:" + r["pc"] for r in recs)
    ldr = next(r for r in recs if r["pc"] == "0x688")
    assert ldr["asm"] == "ldr w1, [x2], #4" and ldr["window"] == "win:0x670"
    assert ldr["block"]["cycles_per_iteration"] == pytest.approx(4.08)
    assert ldr["block"]["bottleneck"]["resources"]["N1UnitB"] == 42.16
    assert ldr["model"] == "N1" and "fallback" not in ldr
    assert recs[-1] == {"id": "mca:0x6b4", "pc": "0x6b4", "basis": "predicted",
                        "window": "win:0x670", "tool": TOOL19.label, "cpu": "neoverse-n1",
                        "asm": "ldaxr x0, [x1]", "skipped": "atomic: llvm-mca cannot model it"}
    old = window_records(block, "win:0x670", TOOL14, "neoverse-n1", 100,
                         parse_mca_json(JSON14.read_text()), None)
    assert all("Cortex-A57" in r["fallback"] for r in old if "skipped" not in r)


def test_read_mca_checks_basis(tmp_path):
    good = tmp_path / "m.jsonl"
    good.write_text(json.dumps({"pc": "0x10", "basis": "predicted", "latency": 1}) + "\n")
    assert read_mca(good)[0x10]["latency"] == 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"pc": "0x10", "basis": "measured"}) + "\n")
    with pytest.raises(InputError, match="predicted"):
        read_mca(bad)


def test_absent_llvm_mca_is_a_message_not_a_failure(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert find_llvm_mca() is None
    out = tmp_path / "mca.jsonl"
    assert main(["import", "mca", "whatever.csv", "-o", str(out)]) == 0
    assert "llvm-mca is not installed" in capsys.readouterr().err
    assert not out.exists()


def _a64_profile(tmp_path: Path) -> Path:
    profile = tmp_path / "a64.csv"
    assert main(["import", "perf", "--script", str(A64_SCRIPT), "--objdump", str(A64),
                 "--event", "cycles", "-o", str(profile)]) == 0
    return profile


@pytest.mark.skipif(shutil.which("llvm-mca-19") is None,
                    reason="llvm-mca-19 is not installed (Debian package llvm-19)")
def test_real_llvm_mca_19(tmp_path, capsys):
    out = tmp_path / "mca.jsonl.gz"
    assert main(["import", "mca", str(_a64_profile(tmp_path)), "--coverage", "1.0",
                 "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "warning" not in err and "hot windows" in err
    recs = read_mca(out)
    base = 0xffff8e3b0000
    assert recs[base + 0x6d4]["asm"] == "sdiv x0, x0, x3"
    assert recs[base + 0x6d4]["model"] == "N1" and recs[base + 0x6d4]["latency"] > 4
    assert recs[base + 0x75c]["skipped"].startswith("atomic")
    assert all(r["basis"] == "predicted" for r in recs.values())


@pytest.mark.skipif(shutil.which("llvm-mca-14") is None,
                    reason="llvm-mca-14 is not installed (Debian package llvm-14)")
def test_real_llvm_mca_14_says_it_fell_back(tmp_path, capsys):
    out = tmp_path / "mca.jsonl"
    assert main(["import", "mca", str(_a64_profile(tmp_path)), "--llvm-mca",
                 shutil.which("llvm-mca-14"), "-o", str(out)]) == 0
    assert "used the Cortex-A57 model" in capsys.readouterr().err
    assert all("fallback" in r for r in read_mca(out).values() if "skipped" not in r)
