"""The real AArch64 bzip2 profile round-trips through the perf script + objdump importer.

That profile is what this path produces on real hardware: exact per-PC counts for the
run-time addresses of four ELF files, their functions and disassembly. Its rows are
written back as the two inputs of that path, in the tools' syntax: `perf script -F
ip,sym,symoff,dso,period --show-mmap-events` (one sample per PC, period = its count;
hidden functions print as [unknown] like a stripped binary) and one `objdump -d` per
module at file addresses (run-time pc minus the module's load base, symbols from the
function column). Importing them must give back every row: pc, count, asm, function,
module; the load bases come back from sym+off where the module names symbols and from
the mmap records where it names none (the bzip2 executable).
"""

from __future__ import annotations

from itertools import groupby
from pathlib import Path

import numpy as np

from pcscope.cli.main import main
from pcscope.core.ids import is_hidden_name
from pcscope.core.readers.profile_csv import read_profile

LIBDIR = "/usr/lib/aarch64-linux-gnu/"

def _rows(profile) -> list[tuple]:
    names = [f.name or "" for f in profile.functions]
    return [(int(pc), int(n), profile.asm(i), names[f], profile.modules[m])
            for i, (pc, n, f, m) in enumerate(zip(profile.pc, profile.samples,
                                                   profile.function, profile.module, strict=True))]


def _write_inputs(profile, tmp: Path) -> tuple[Path, list[Path]]:
    rows = sorted(_rows(profile), key=lambda r: (r[4], r[0]))
    script = [f"{'':>8}bzip2 4242 [000] 1.000000: PERF_RECORD_MMAP2 4242/4242: "
              f"[0x{min(r[0] for r in rs) & ~0xFFF:x}(0x200000) @ 0 fd:01 7 0]: r-xp "
              f"{LIBDIR}{module}"
              for module, rs in ((m, list(g)) for m, g in groupby(rows, key=lambda r: r[4]))
              if not any(not is_hidden_name(r[3]) for r in rs)]
    objdumps = []
    for module, group in groupby(rows, key=lambda r: r[4]):
        group = list(group)
        base = min(r[0] for r in group) & ~0xFFF
        starts: dict[str, int] = {}
        text = [f"\n{module}:     file format elf64-littleaarch64\n", "",
                "Disassembly of section .text:"]
        for function, run in groupby(group, key=lambda r: r[3]):
            run = list(run)
            starts.setdefault(function, run[0][0])
            text += ["", f"{run[0][0] - base:016x} <{function}>:"]
            for pc, _, asm, _, _ in run:
                mnemonic, _, operands = asm.partition(" ")
                text.append(f" {pc - base:x}:\t00000000 \t{mnemonic}\t{operands}".rstrip())
        path = tmp / f"{module}.objdump.txt"
        path.write_text("\n".join(text) + "\n")
        objdumps.append(path)
        for pc, samples, _, function, _ in group:
            sym = "[unknown]" if is_hidden_name(function) else \
                f"{function}+0x{pc - starts[function]:x}"
            script.append(f"{samples:10d} {pc:16x} {sym} ({LIBDIR}{module})")
    path = tmp / "perf_script.txt"
    path.write_text("\n".join(script) + "\n")
    return path, objdumps


def test_bzip2_profile_round_trips(bzip2, tmp_path, capsys):
    original = read_profile(bzip2.profile)
    script, objdumps = _write_inputs(original, tmp_path)
    out = tmp_path / "bzip2.csv.gz"
    args = ["import", "perf", "--script", str(script), "-o", str(out)]
    for path in objdumps:
        args += ["--objdump", str(path)]
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "bzip2: 847 PCs" in err and "(mmap)" in err and "(symoff)" in err
    back = read_profile(out)
    assert len(back) == len(original) == 19101
    assert np.array_equal(back.pc, original.pc)
    assert np.array_equal(back.samples, original.samples)
    assert back.total == original.total == 8_348_910_281
    assert _rows(back) == _rows(original)
    # Same content, same derived windows and hot selection.
    assert back.hot_windows().windows == original.hot_windows().windows
