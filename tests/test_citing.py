"""Which PCs an idea cites (pcscope.core.backends.offline.hottest_instances): of two rows
making the same access in one mechanism (a hot path and its cold twin), the hotter; the rest
hottest first, the key PC always first."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace

from pcscope.core.backends.detectors import Insn, WindowView
from pcscope.core.backends.offline import OfflineAnalyst, hottest_instances


def insn(pc: int, asm: str, share: float) -> Insn:
    return Insn.of({"pc": pc, "asm": asm, "share": share, "patterns": []}, None)


def test_the_hot_reload_is_cited_not_its_cold_twin() -> None:
    insns = [insn(0x10, "ldr w1, [x0, #8]", 0.02),  # the key
             insn(0x14, "ldr x0, [x19]", 0.0001),  # cold twin of 0x40
             insn(0x18, "ldp w3, w6, [x19, #0x6c]", 0.0001),  # cold twin of 0x44
             insn(0x40, "ldr x0, [x19]", 0.0016), insn(0x44, "ldp w3, w6, [x19, #0x6c]", 0.0016),
             insn(0x48, "str w1, [x0, #8]", 0.0015)]
    assert hottest_instances((0x10, 0x14, 0x18, 0x40, 0x44, 0x48), insns) == \
        [0x10, 0x40, 0x44, 0x48]


def test_different_accesses_all_stay() -> None:
    """Another offset, or a store to the same field, is another access: nothing dropped; a
    PC the window does not show keeps its place after the shown ones."""
    insns = [insn(0x10, "ldr w1, [x0, #8]", 0.01), insn(0x14, "ldr w2, [x0, #0xc]", 0.03),
             insn(0x18, "str w1, [x0, #8]", 0.02), insn(0x1c, "add w1, w1, #1", 0.02)]
    assert hottest_instances((0x10, 0x99, 0x14, 0x18, 0x1c), insns) == \
        [0x10, 0x14, 0x18, 0x1c, 0x99]


def test_rows_far_colder_than_the_hottest_are_not_cited() -> None:
    """A row run under 1 % as often as the hottest cited row is left out; the key PC stays
    first however cold it is."""
    insns = [insn(0x10, "ldr w1, [x0, #8]", 0.00001),  # the key, cold
             insn(0x14, "ldr w2, [x0, #0xc]", 0.02), insn(0x18, "str w1, [x0, #8]", 0.0003),
             insn(0x1c, "str w4, [x0, #0xb8]", 0.00000008)]  # run 82 times
    assert hottest_instances((0x10, 0x14, 0x18, 0x1c), insns) == [0x10, 0x14, 0x18]


def test_cold_rows_stay_when_the_key_would_be_alone() -> None:
    insns = [insn(0x10, "ldr w1, [x0, #8]", 0.02), insn(0x14, "str w1, [x0, #8]", 0.0001)]
    assert hottest_instances((0x10, 0x14), insns) == [0x10, 0x14]


def test_a_cold_row_outside_the_window_is_known_by_its_row() -> None:
    """A row read outside the window is judged by its own count (cold: left out; the same
    access as a hotter row: its twin) and ranks after window rows of the same count."""
    insns = [insn(0x10, "ldr w1, [x0, #8]", 0.02), insn(0x14, "str w4, [x19, #0xb8]", 0.004)]
    outside = (insn(0x99, "str w4, [x19, #0xb8]", 0.00000008),
               insn(0x9c, "ldr w5, [x19, #0xc]", 0.00000008),
               insn(0xa0, "ldr w6, [x19, #0x10]", 0.004))
    assert hottest_instances((0x10, 0xa0, 0x99, 0x9c, 0x14), insns, outside) == \
        [0x10, 0x14, 0xa0]


class _Rows:
    """The ``asm_around`` tool over a fixed set of rows (address order), counting reads."""

    def __init__(self, rows: list[Insn]) -> None:
        self.rows, self.reads = sorted(rows, key=lambda i: i.pc), 0

    async def use(self, name: str, args: dict):
        assert name == "asm_around"
        self.reads += 1
        pc = int(args["pc"], 16)
        at = next(k for k, i in enumerate(self.rows) if i.pc == pc)
        span = self.rows[at - args["before"]:at + args["after"] + 1]
        return SimpleNamespace(data={"instructions": [
            {"pc": i.pc, "asm": i.asm, "share": i.share, "patterns": []} for i in span]},
            ids=())


def test_the_heaviest_sites_rows_outside_the_window_are_cited_before_a_lighter_sites() -> None:
    """The window shows twelve rows of a light site (a copy loop, 0.1 %); the heaviest site
    (a partition, 0.5 % a row) lies in another window: its rows are read, a span at a time,
    and cited by their shares. A site the window shows is not read again."""
    light = [insn(0x1000 + 4 * k, f"add w{k}, w{k}, #1", 0.001) for k in range(12)]
    heavy = [insn(0x2000 + 4 * k, f"sub w{k}, w{k}, #1", 0.005) for k in range(8)]
    key = heavy[0].pc
    pcs = (key, *(i.pc for i in light), *(i.pc for i in heavy[1:]))
    view = WindowView("win:0x1000", "f", 0.2, light)
    tool = _Rows([*light, *heavy])
    cited = asyncio.run(OfflineAnalyst()._cited(pcs, view, tool, tuple(i.pc for i in heavy)))
    assert cited[:8] == [i.pc for i in heavy] and tool.reads == 1
    shown = _Rows(light)
    asyncio.run(OfflineAnalyst()._cited(pcs[1:], view, shown, tuple(i.pc for i in light)))
    assert shown.reads == 0
