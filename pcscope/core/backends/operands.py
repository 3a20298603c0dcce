"""One instruction's operands as the offline analyst's dataflow checks need them, read with
the shared AArch64 helpers (pcscope.core.isa: ``w5``/``x5`` are both ``x5``, ``d3``/``q3``/
``v3.4s`` are ``v3``)."""

from __future__ import annotations

from dataclasses import dataclass

from pcscope.core import isa


@dataclass(frozen=True)
class Operands:
    mnemonic: str  # canonical spelling
    operands: tuple[str, ...]
    dest: tuple[str, ...]  # registers written (writeback bases included)
    src: tuple[str, ...]  # registers read
    base: str | None  # memory base register
    index: str | None  # memory index register
    target: int | None  # direct branch target

    @property
    def address(self) -> tuple[str, ...]:
        return tuple(r for r in (self.base, self.index) if r)


def parse(asm: str) -> Operands:
    mnemonic, ops = isa.canonical(asm)
    mem = isa.memory_operand(ops)
    return Operands(
        mnemonic=mnemonic,
        operands=tuple(ops),
        dest=isa.dest_registers(mnemonic, ops),
        src=isa.source_registers(mnemonic, ops),
        base=mem.base if mem else None,
        index=mem.index if mem else None,
        target=isa.branch_target(asm),
    )
