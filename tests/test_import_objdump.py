"""objdump -d parsing: GNU and LLVM AArch64 syntax, x86, targets and relocation."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pcscope.core.errors import InputError
from pcscope.core.importers.objdump import parse_instruction_text, parse_objdump

FIX = Path(__file__).parent / "fixtures" / "import"
GNU = FIX / "libhot_a64.objdump.txt"
LLVM = FIX / "libhot_a64.llvm-objdump.txt"
X86 = FIX / "libhot_x86.objdump.txt"

_LINE = re.compile(r"^\s*([0-9a-f]+):\s")


def _addresses(path: Path) -> list[int]:
    """Instruction addresses read with nothing but a regex (what the parser must find):
    ``addr: <tab> bytes <tab> instruction``; a line of bytes alone continues the one before."""
    out = []
    for line in path.read_text().splitlines():
        m = _LINE.match(line)
        if m and line.count("\t") >= 2:
            out.append(int(m.group(1), 16))
    return sorted(set(out))


def test_gnu_aarch64_instructions_and_symbols():
    [dis] = parse_objdump(GNU)
    assert dis.module == "libhot_a64.so"
    assert [i.addr for i in dis.instructions] == _addresses(GNU)
    assert dis.symbols["hot_sum"] == 0x670
    assert dis.symbols["hot_div"] == 0x6b4
    # Versioned names lose '@@…'; the first header of a repeated symbol wins.
    assert dis.symbols["__aarch64_ldadd8_acq_rel"] == 0x740
    assert dis.at(0x688).asm() == "ldr w1, [x2], #4"
    assert dis.at(0x688).function == "hot_sum"
    # Comments dropped: '// #0' and '// b.any'.
    assert dis.at(0x67c).asm() == "mov x0, #0x0"
    assert dis.at(0x6a4).asm() == "b.ne 0x688"
    assert dis.at(0x750).asm() == "ldaddal x0, x0, [x1]"
    assert dis.at(0x75c).asm() == "ldaxr x0, [x1]"


def test_llvm_objdump_agrees_with_gnu_on_addresses_mnemonics_and_targets():
    [gnu], [llvm] = parse_objdump(GNU), parse_objdump(LLVM)
    assert llvm.module == gnu.module
    assert [i.addr for i in llvm.instructions] == [i.addr for i in gnu.instructions]
    for g, v in zip(gnu.instructions, llvm.instructions, strict=True):
        assert g.asm().split()[0] == v.asm().split()[0], hex(g.addr)
        assert g.target == v.target, hex(g.addr)
        assert g.function == v.function, hex(g.addr)
    assert llvm.at(0x674).asm() == "b.le 0x6ac"
    assert llvm.at(0x688).asm() == "ldr w1, [x2], #0x4"     # LLVM spells immediates in hex


def test_relocation_moves_code_targets_only():
    [dis] = parse_objdump(GNU)
    base = 0xffff8e3b0000
    assert dis.at(0x6a4).asm(base) == "b.ne 0xffff8e3b0688"
    assert dis.at(0x714).asm(base) == f"bl 0x{base + 0x740:x}"
    # adrp names a page of the binary: relocated like a branch target.
    assert dis.at(0x744).asm(base) == f"adrp x16, 0x{base + 0x20000:x}"
    assert dis.at(0x688).asm(base) == "ldr w1, [x2], #4"


def test_x86_syntax():
    [dis] = parse_objdump(X86)
    assert dis.module == "libhot.so"
    assert [i.addr for i in dis.instructions] == _addresses(X86)
    start = dis.symbols["hot_sum"]
    first = dis.at(start)
    assert first.asm() == "test %rsi,%rsi"
    branches = [i for i in dis.between(start, dis.symbol_end("hot_sum") - 1) if i.target]
    assert branches and all(i.asm().startswith("j") for i in branches)


@pytest.mark.parametrize("text, expected", [
    ("f100003f \tcmp\tx1, #0x0", ("cmp x1, #0x0", None, "")),
    ("54ffff21 \tb.ne\t688 <hot_sum+0x18>  // b.any", ("b.ne ", 0x688, "")),
    ("54ffff21     \tb.ne\t0x688 <hot_sum+0x18>", ("b.ne ", 0x688, "")),
    ("48 85 f6             \ttest   %rsi,%rsi", ("test %rsi,%rsi", None, "")),
    ("ff 25 e2 2f 00 00    \tjmp    *0x2fe2(%rip)        # 4018 <puts@GLIBC>",
     ("jmp *0x2fe2(%rip)", None, "")),
    ("fadd\td0, d1, d2", ("fadd d0, d1, d2", None, "")),      # --no-show-raw-insn
    ("00 00 00 ", None),                                       # wrapped x86 bytes
    ("...", None),
])
def test_instruction_text(text, expected):
    assert parse_instruction_text(text) == expected


def test_not_objdump_output(tmp_path):
    bad = tmp_path / "x.txt"
    bad.write_text("hello\nworld\n")
    with pytest.raises(InputError, match="not `objdump -d` output"):
        parse_objdump(bad)
