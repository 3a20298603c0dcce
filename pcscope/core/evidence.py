"""The evidence store: every ID of docs/formats.md §4 resolves here to a short rendering.

Exact lookups are array hits (a PC is a binary search over the sorted PC column, a window
or function ID an index); nothing here goes through the text index.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING

from pcscope.core.errors import EvidenceError
from pcscope.core.ids import alp_id, hex_pc, kind_of, mca_id, parse_pc, pc_id, win_id
from pcscope.core.mechanisms import describe
from pcscope.core.profile import Function, Window
from pcscope.core.workload import Workload

if TYPE_CHECKING:
    from pcscope.core.readers.guides import GuideSection


@dataclass(frozen=True)
class Evidence:
    id: str
    kind: str
    title: str
    text: str
    pcs: tuple[int, ...] = ()


@dataclass(frozen=True)
class Instruction:
    pc: int
    asm: str
    samples: int
    share: float
    patterns: tuple[str, ...]
    row: int

    def to_json(self) -> dict:
        return {"pc": hex_pc(self.pc), "asm": self.asm, "samples": self.samples,
                "share": round(self.share, 6), "patterns": list(self.patterns)}


@dataclass(frozen=True)
class AsmView:
    pc: int
    function: str
    window: str
    instructions: list[Instruction]


# The workload part that IDs of a kind resolve from, where it loads on first use.
LOADED_FROM = {"alp": "alp", "mca": "mca", "mech": "mechanisms", "guide": "guides"}


@dataclass
class EvidenceStore:
    """Resolves IDs against one workload; the engine registers ``finding:``/``note:``/``set:``."""

    workload: Workload
    registered: dict[str, Evidence] = field(default_factory=dict)

    @cached_property
    def _guides(self) -> dict[str, GuideSection]:
        # The guide readers load with the first guide ID (a PC lookup needs none of them).
        from pcscope.core.readers.guides import section_index

        return section_index(self.workload.guides)

    @property
    def profile(self):
        return self.workload.profile

    def register(self, evidence: Evidence) -> None:
        self.registered[evidence.id] = evidence

    # -- exact lookups -------------------------------------------------------------------
    def row(self, pc: int) -> int | None:
        return self.profile.row_of(pc)

    def window_of(self, pc: int) -> Window | None:
        row = self.row(pc)
        return None if row is None else self.profile.windows[int(self.profile.window[row])]

    def function_of(self, pc: int) -> Function | None:
        row = self.row(pc)
        if row is None or self.profile.function[row] < 0:
            return None
        return self.profile.functions[int(self.profile.function[row])]

    def alp(self, pc: int):
        table = self.workload.alp
        return None if table is None else table.get(pc)

    def window_by_id(self, evidence_id: str) -> Window | None:
        pc = parse_pc(evidence_id.partition(":")[2])
        win = self.window_of(pc)
        return win if win is not None and win.first_pc == pc else None

    def function_by_id(self, evidence_id: str) -> Function | None:
        ref = evidence_id.partition(":")[2]
        profile = self.profile
        if ref.startswith("0x"):
            f = self.function_of(parse_pc(ref))
            return f if f is not None and f.id == evidence_id else None
        index = profile.functions.index_of(ref)
        if index is None:
            return None
        fn = profile.functions[index]
        return fn if fn.id == evidence_id else None

    def asm_around(self, pc: int, before: int = 8, after: int = 8) -> AsmView:
        """Instructions around ``pc`` in address order, not crossing into another module."""
        profile = self.profile
        row = self.row(pc)
        if row is None:
            raise EvidenceError(f"pc {hex_pc(pc)} is not in the profile")
        module = profile.module[row]
        lo = max(0, row - before)
        hi = min(len(profile), row + after + 1)
        rows = [r for r in range(lo, hi) if profile.module[r] == module]
        patterns = self.workload.patterns
        instructions = [
            Instruction(
                pc=int(profile.pc[r]),
                asm=profile.asm(r),
                samples=int(profile.samples[r]),
                share=profile.share(r),
                patterns=tuple(patterns.categories_at(int(profile.pc[r]))),
                row=r,
            )
            for r in rows
        ]
        win = profile.windows[int(profile.window[row])]
        fn = self.function_of(pc)
        return AsmView(pc, fn.name or "" if fn else "", win.id, instructions)

    # -- IDs -----------------------------------------------------------------------------
    def exists(self, evidence_id: str) -> bool:
        try:
            self.resolve(evidence_id)
        except EvidenceError:
            return False
        return True

    def resolve(self, evidence_id: str) -> Evidence:
        try:
            kind = kind_of(evidence_id)
            found = self._resolve(kind, evidence_id)
        except ValueError as exc:
            raise EvidenceError(str(exc)) from None
        if found is None:
            raise EvidenceError(f"evidence id does not resolve: {evidence_id}")
        return found

    def resolves_now(self, evidence_id: str) -> bool:
        """Whether ``resolve`` answers from what is in memory, with no part of the workload
        to load first (an ALP to decode, mechanisms to read or build)."""
        part = LOADED_FROM.get(evidence_id.partition(":")[0])
        return part is None or evidence_id in self.registered or self.workload.loaded(part)

    def _resolve(self, kind: str, evidence_id: str) -> Evidence | None:
        if evidence_id in self.registered:
            return self.registered[evidence_id]
        profile = self.profile
        ref = evidence_id.partition(":")[2]
        if kind == "pc":
            pc = parse_pc(ref)
            row = self.row(pc)
            if row is None or pc_id(pc) != evidence_id:
                return None
            return Evidence(evidence_id, kind, profile.asm(row),
                            f"{hex_pc(pc)}  {profile.asm(row)}  {profile.basis} "
                            f"{int(profile.value[row])}"
                            f" ({profile.share(row):.3%})", (pc,))
        if kind == "alp":
            pc = parse_pc(ref)
            record = self.alp(pc)
            if record is None or alp_id(pc) != evidence_id:
                return None
            return Evidence(evidence_id, kind, f"ALP at {hex_pc(pc)}",
                            str(record.to_json(rounded=True)), (pc,))
        if kind == "mca":
            pc = parse_pc(ref)
            record = self.workload.mca.get(pc)
            if record is None or mca_id(pc) != evidence_id:
                return None
            return Evidence(evidence_id, kind, f"llvm-mca prediction at {hex_pc(pc)}",
                            json.dumps(record, sort_keys=True), (pc,))
        if kind == "win":
            win = self.window_by_id(evidence_id)
            if win is None or win_id(win.first_pc) != evidence_id:
                return None
            return Evidence(evidence_id, kind, f"window {evidence_id}",
                            f"{win.n} instructions {hex_pc(win.first_pc)}–{hex_pc(win.last_pc)},"
                            f" weight {win.weight:.3%}", (win.first_pc,))
        if kind == "fn":
            fn = self.function_by_id(evidence_id)
            if fn is None:
                return None
            return Evidence(evidence_id, kind, fn.name or evidence_id,
                            f"function {fn.name or '(unnamed)'}: {fn.n} instructions, "
                            f"weight {fn.weight:.3%}", (fn.first_pc,))
        if kind == "pat":
            category, _, pc_text = ref.rpartition(":")
            pc = parse_pc(pc_text)
            if category not in self.workload.patterns.categories_at(pc):
                return None
            row = self.row(pc)
            return Evidence(evidence_id, kind, f"{category} at {hex_pc(pc)}",
                            f"{category}: {profile.asm(row)}", (pc,))
        if kind == "mech":
            mechanism = self.workload.mechanisms.get(evidence_id)
            if mechanism is None:
                return None
            return Evidence(evidence_id, kind, f"{mechanism.kind} mechanism, own share "
                            f"{mechanism.share:.3%}", describe(mechanism), mechanism.pcs)
        if kind == "guide":
            section = self._guides.get(evidence_id)
            if section is None:
                return None
            title = section.heading if section.id == evidence_id else \
                f"{section.heading} (now {section.id})"   # a former ID of a renamed section
            return Evidence(evidence_id, kind, title, section.text, ())
        return None
