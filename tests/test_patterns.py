"""Pattern pass: each kind with true hits and look-alikes that must not match."""

import csv
import gzip

import numpy as np
import pytest

from pcscope.core import isa
from pcscope.core.asmtext import register_code
from pcscope.core.pattern_table import PATTERN_CATEGORIES, PatternTable
from pcscope.core.patterns import code_facts, find_patterns
from pcscope.core.readers.profile_csv import read_profile


def write_profile(tmp_path, rows, name="p.csv"):
    """rows: (function, pc, samples, asm); one window per function (column `window`)."""
    path = tmp_path / name
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["function", "window", "pc", "samples", "asm"])
        for function, pc, samples, asm in rows:
            out.writerow([function, function, hex(pc), samples, asm])
    return read_profile(path)


def hit_pcs(table, category):
    return sorted(h.pc for h in table.hits(category))


def single(category, asm_lines, expected):
    """Profile of one window from asm lines at 0x1000, 0x1004…; pcs of expected hits."""
    return category, asm_lines, expected


MNEMONIC_CASES = [
    single("atomic-llsc",
           ["ldxr x1, [x0]", "LDAXR W5, [X2]", "stxr w3, x1, [x0]", "stlxr w3, w1, [x0]",
            "ldaxp x0, x1, [x2]", "stlxp w4, x0, x1, [x2]", "ldxrb w1, [x0]", "ldaxrh w1, [x0]",
            "ldar x1, [x0]", "ldr x1, [x0]", "stlr w1, [x0]"],
           range(8)),
    single("atomic-lse",
           ["cas w0, w1, [x2]", "casal x0, x1, [x2]", "caspal x0, x1, x2, x3, [x4]",
            "ldadd w0, w1, [x2]", "ldaddalb w0, w1, [x2]", "ldclrh w0, w1, [x2]",
            "ldeora x0, x1, [x2]", "ldsetl w0, w1, [x2]", "ldsmax w0, w1, [x2]",
            "lduminal x0, x1, [x2]", "swp w0, w1, [x2]", "swpal x0, x1, [x2]",
            "stadd w0, [x2]", "stclrlb w0, [x2]", ".byte 0x41, 0x7c, 0xe0, 0x88",
            "cset w0, ne", "csel x0, x1, x2, eq", "ldp x0, x1, [x2]", "ldaxr w0, [x1]"],
           range(15)),
    single("barrier", ["dmb ish", "dsb sy", "isb", "DMB ISHLD", "dc civac, x0", "nop"],
           range(4)),
    single("acquire-release",
           ["ldar x1, [x0]", "ldarb w1, [x0]", "stlr x1, [x0]", "stlrh w1, [x0]",
            "ldapr w1, [x0]", "ldapur x1, [x0, #8]", "stlur w1, [x0]", "ldlar x1, [x0]",
            "stllr x1, [x0]", "ldaxr x1, [x0]", "stlxr w2, x1, [x0]", "ldr x1, [x0]"],
           range(9)),
    single("indirect-branch",
           ["br x3", "blr x8", "braa x0, x1", "blraaz x3", "braaz x5", "BLR X3",
            "ret", "retaa", "bl 0x2000", "b 0x2000", "b.eq 0x2000", "ret x30"],
           range(6)),
    single("division",
           ["udiv w0, w1, w2", "sdiv x0, x1, x2", "fdiv d0, d1, d2", "fsqrt s0, s1",
            "mul x0, x1, x2", "fmul d0, d1, d2", "umulh x0, x1, x2", "msub x0, x1, x2, x3"],
           range(4)),
]  # fmt: skip


@pytest.mark.parametrize(("category", "lines", "expected"), MNEMONIC_CASES,
                         ids=[c[0] for c in MNEMONIC_CASES])  # fmt: skip
def test_mnemonic_categories(tmp_path, category, lines, expected):
    rows = [("f", 0x1000 + 4 * i, 10, asm) for i, asm in enumerate(lines)]
    table = find_patterns(write_profile(tmp_path, rows))
    assert hit_pcs(table, category) == [0x1000 + 4 * i for i in expected]


def test_llsc_and_acquire_release_do_not_overlap(tmp_path):
    rows = [("f", 0x1000, 5, "ldaxr w5, [x2]"), ("f", 0x1004, 5, "ldar w5, [x2]")]
    table = find_patterns(write_profile(tmp_path, rows))
    assert table.categories_at(0x1000) == ["atomic-llsc"]
    assert table.categories_at(0x1004) == ["acquire-release"]


DEPENDENT = [
    # window a: straight-line chains are not chases (no loop carries them)
    ("a", 0x1000, 10, "ldr x0, [x1]"),
    ("a", 0x1004, 10, "ldr x2, [x0, #8]"),  # no: loaded base, but no loop
    ("a", 0x1008, 10, "ldr x7, [x2]"),  # no
    # window c: pointer chasing loop (list walk)
    ("c", 0x3000, 10, "mov x0, x19"),
    ("c", 0x3004, 10, "ldr x0, [x0, #8]"),  # yes: the previous iteration loaded x0
    ("c", 0x3008, 10, "cbnz x0, 0x3004"),
    # window d: the same load outside a loop
    ("d", 0x4000, 10, "ldr x0, [x0, #8]"),  # no
    # window e: a streaming loop (writeback) reading through a loaded pointer
    ("e", 0x5000, 10, "ldr x2, [x1], #8"),  # no: the stream steps by its writeback
    ("e", 0x5004, 10, "ldr x3, [x2]"),  # no: x2 comes from the stream, not from x3
    ("e", 0x5008, 10, "subs x4, x4, #1"),
    ("e", 0x500C, 10, "b.ne 0x5000"),
    # window f: a hash chain through an index register (prev[cur & mask])
    ("f", 0x6000, 10, "and w3, w1, w5"),
    ("f", 0x6004, 10, "ldrh w1, [x11, x3, lsl #1]"),  # yes: w1 feeds the next index
    ("f", 0x6008, 10, "cmp w1, w6"),
    ("f", 0x600C, 10, "b.hi 0x6000"),
    # window g: GOT and canary loads in a loop (adrp base) and a stack load
    ("g", 0x7000, 10, "adrp x8, #0x20000"),
    ("g", 0x7004, 10, "ldr x8, [x8, #0x40]"),  # no: adrp base
    ("g", 0x7008, 10, "ldr x9, [x8]"),  # no: global pointer, not loop-carried
    ("g", 0x700C, 10, "ldr x10, [sp, #8]"),  # no: stack
    ("g", 0x7010, 10, "ldr x10, [x10]"),  # no: x10 comes from the stack each time
    ("g", 0x7014, 10, "cbnz x9, 0x7000"),
    # window h: a counted loop (index steps by a constant)
    ("h", 0x8000, 10, "ldr w2, [x0, x1, lsl #2]"),  # no: x1 is a counter
    ("h", 0x8004, 10, "add x1, x1, #1"),
    ("h", 0x8008, 10, "cmp x1, x3"),
    ("h", 0x800C, 10, "b.lo 0x8000"),
    # window i: jump-table load feeding a br in a loop
    ("i", 0x9000, 10, "ldrh w2, [x20], #2"),
    ("i", 0x9004, 10, "ldr x3, [x21, x2, lsl #3]"),  # no: feeds the branch only
    ("i", 0x9008, 10, "blr x3"),
    ("i", 0x900C, 10, "cbnz x0, 0x9000"),
    # window j: pairs and acquire loads on a chain
    ("j", 0xA000, 10, "ldp x3, x4, [x20]"),
    ("j", 0xA004, 10, "ldar x20, [x4]"),  # yes: x4 from the pair, x20 feeds it back
    ("j", 0xA008, 10, "cbnz x20, 0xa000"),
]


def test_dependent_loads(tmp_path):
    """Only loop-carried chains: look-alikes (straight-line, stream, GOT, stack, counter,
    jump table) stay quiet."""
    table = find_patterns(write_profile(tmp_path, DEPENDENT))
    assert hit_pcs(table, "dependent-load") == [0x3004, 0x6004, 0xA000, 0xA004]
    details = {h.pc: h.detail for h in table.hits("dependent-load")}
    assert details[0x3004] == "loop from 0x3004: the address comes from the previous " \
        "iteration's load"


SPIN = [
    ("a", 0x1000, 50, "ldr w1, [x0]"),
    ("a", 0x1004, 50, "cbnz w1, 0x1000"),  # spin
    ("b", 0x1100, 50, "yield"),
    ("b", 0x1104, 50, "ldaxr w1, [x0]"),
    ("b", 0x1108, 50, "cmp w1, #0"),
    ("b", 0x110C, 50, "b.ne 0x1100"),  # spin with yield and an exclusive load
    ("c", 0x1200, 50, "hint #2"),  # wfe as capstone prints it
    ("c", 0x1204, 50, "ldar w2, [x3]"),
    ("c", 0x1208, 50, "tbnz w2, #0, 0x1200"),  # spin
    ("d", 0x1300, 50, "ldr w1, [x0]"),
    ("d", 0x1304, 50, "cbz w1, 0x1310"),
    ("d", 0x1308, 50, "isb"),
    ("d", 0x130C, 50, "b 0x1300"),  # spin: unconditional back, conditional exit
    ("e", 0x1400, 50, "ldr w2, [x1], #4"),
    ("e", 0x1404, 50, "add w0, w0, w2"),
    ("e", 0x1408, 50, "subs x3, x3, #1"),
    ("e", 0x140C, 50, "b.ne 0x1400"),  # counted loop: no
    ("f", 0x1500, 50, "ldr w2, [x1]"),
    ("f", 0x1504, 50, "str w2, [x4]"),
    ("f", 0x1508, 50, "cbnz w2, 0x1500"),  # stores: no
    ("g", 0x1600, 50, "ldr x0, [x0]"),
    ("g", 0x1604, 50, "cbnz x0, 0x1600"),  # list walk: no
    ("h", 0x1700, 50, "ldaxr w1, [x0]"),
    ("h", 0x1704, 50, "add w1, w1, #1"),
    ("h", 0x1708, 50, "stlxr w2, w1, [x0]"),
    ("h", 0x170C, 50, "cbnz w2, 0x1700"),  # LL/SC retry: no
    *[("i", 0x1800 + 4 * k, 50, "nop") for k in range(8)],
    ("i", 0x1820, 50, "ldr w1, [x0]"),
    ("i", 0x1824, 50, "cbnz w1, 0x1800"),  # ten instructions: too long
    ("j", 0x1900, 50, "ldr w1, [x0]"),
    ("j", 0x1904, 50, "cbnz w1, 0x1a00"),  # forward: no
    ("k", 0x1A00, 50, "cmp w1, #0"),
    ("k", 0x1A04, 50, "b.ne 0x1a00"),  # no load: no
    ("l", 0x1B00, 50, "ldr w2, [x1]"),
    ("l", 0x1B04, 50, "add w0, w0, w2"),
    ("l", 0x1B08, 50, "subs x3, x3, #1"),
    ("l", 0x1B0C, 50, "b.ne 0x1b00"),  # arithmetic work on a fixed address: no
]


def test_spin_wait(tmp_path):
    table = find_patterns(write_profile(tmp_path, SPIN))
    assert hit_pcs(table, "spin-wait") == [0x1004, 0x110C, 0x1208, 0x130C]
    details = {h.pc: h.detail for h in table.hits("spin-wait")}
    assert details[0x110C] == "loop 0x1100..0x110c (4 instructions)"


CALLS = [
    ("plt", 0x1000, 7, "adrp x16, #0x20000"),
    ("plt", 0x1004, 7, "ldr x17, [x16, #0xe10]"),
    ("plt", 0x1008, 7, "add x16, x16, #0xe10"),
    ("plt", 0x100C, 7, "br x17"),  # PLT stub (capstone)
    ("plt", 0x1010, 3, "adrp\tx16, 11000 <__abi_tag+0x1>"),
    ("plt", 0x1014, 3, "ldr\tx17, [x16, #3960]"),
    ("plt", 0x1018, 3, "add\tx16, x16, #0xf78"),
    ("plt", 0x101C, 3, "br\tx17"),  # PLT stub (objdump)
    ("ven", 0x2000, 2, "adrp x16, 0x40000"),
    ("ven", 0x2004, 2, "add x16, x16, #0x10"),
    ("ven", 0x2008, 2, "br x16"),  # veneer
    ("x", 0x3000, 2, "mov x16, x0"),
    ("x", 0x3004, 2, "br x16"),  # indirect, not a veneer
    ("y", 0x4000, 2, "ldr x17, [x0]"),
    ("y", 0x4004, 2, "br x17"),  # indirect, not a PLT stub
    ("puts@plt", 0x5000, 2, "br x17"),  # named PLT entry, body not sampled
]


def test_call_overhead(tmp_path):
    table = find_patterns(write_profile(tmp_path, CALLS))
    assert hit_pcs(table, "call-overhead") == [0x100C, 0x101C, 0x2008, 0x5000]
    assert hit_pcs(table, "indirect-branch") == [0x100C, 0x101C, 0x2008, 0x3004, 0x4004, 0x5000]
    details = {h.pc: h.detail for h in table.hits("call-overhead")}
    assert details == {
        0x100C: "PLT stub at 0x1000",
        0x101C: "PLT stub at 0x1010",
        0x2008: "veneer at 0x2000",
        0x5000: "PLT symbol at 0x5000",
    }
    assert sorted(table.categories_at(0x100C)) == ["call-overhead", "indirect-branch"]


def test_table_weights_order_and_round_trip(tmp_path):
    rows = [("f", 0x1000, 10, "dmb ish"), ("f", 0x1004, 30, "dsb sy"),
            ("f", 0x1008, 30, "isb"), ("f", 0x100C, 30, "udiv w0, w1, w2")]  # fmt: skip
    profile = write_profile(tmp_path, rows)
    table = find_patterns(profile)
    barriers = table.hits("barrier")
    # weight desc, ties by lower pc; weight = samples / total (100)
    assert [(h.pc, h.weight) for h in barriers] == [(0x1004, 0.3), (0x1008, 0.3), (0x1000, 0.1)]
    assert barriers[0].id == "pat:barrier:0x1004"
    assert barriers[0].row == 1
    counts = table.counts()
    assert list(counts) == list(PATTERN_CATEGORIES)
    assert counts["barrier"] == 3 and counts["division"] == 1 and counts["spin-wait"] == 0
    assert table.categories_at(0x100C) == ["division"]
    assert table.categories_at(0x9999) == []
    arrays = table.to_arrays()
    for key, value in arrays.items():
        assert value.dtype != object, key  # saveable with np.save(allow_pickle=False)
    again = PatternTable.from_arrays(arrays)
    assert [h for c in PATTERN_CATEGORIES for h in again.hits(c)] == list(table)


def test_reopen_with_other_category_order(tmp_path):
    rows = [("f", 0x1000, 10, "dmb ish"), ("f", 0x1004, 20, "udiv w0, w1, w2")]
    table = find_patterns(write_profile(tmp_path, rows))
    arrays = table.to_arrays()
    names = list(PATTERN_CATEGORIES)[::-1] + ["retired-category"]
    code = {c: names.index(c) for c in PATTERN_CATEGORIES}
    shuffled = dict(arrays, categories=np.array(names),
                    category=np.array([code[PATTERN_CATEGORIES[c]] for c in arrays["category"]]))
    assert list(PatternTable.from_arrays(shuffled)) == list(table)


def test_no_pattern_no_hits(tmp_path):
    table = find_patterns(write_profile(tmp_path, [("f", 0x1000, 0, "nop")]))
    assert len(table) == 0
    assert sum(table.counts().values()) == 0


# --- the real bzip2 profile --------------------------------------------------------------


@pytest.fixture(scope="module")
def bzip2_patterns(bzip2):
    profile = read_profile(bzip2.profile)
    return profile, find_patterns(profile), bzip2.facts()


def test_bzip2_facts_found(bzip2_patterns):
    profile, table, facts = bzip2_patterns
    for pc, asm, share in facts["hot_indirect_branches"]:
        pc = int(pc, 16)
        assert asm == "br x17"
        assert {"indirect-branch", "call-overhead"} <= set(table.categories_at(pc))
        hit = next(h for h in table.at(pc) if h.category == "call-overhead")
        assert hit.weight == pytest.approx(share, rel=1e-4)
        assert hit.detail == f"PLT stub at {hex(pc - 12)}"
    atomic = {"atomic-llsc", "atomic-lse", "acquire-release"}
    for pc, asm, _share in facts["hot_atomics"]:
        found = set(table.categories_at(int(pc, 16)))
        expected = "acquire-release" if asm.startswith("ldar") else "atomic-lse"
        assert found & atomic == {expected}, (pc, asm)
    for pc, _asm, share in facts["hot_barriers"]:
        hit = table.at(int(pc, 16))
        assert [h.category for h in hit] == ["barrier"]
        assert hit[0].weight == pytest.approx(share, rel=1e-4)


def test_bzip2_every_branch_register_row_is_indirect(bzip2, bzip2_patterns):
    profile, table, _ = bzip2_patterns
    with gzip.open(bzip2.profile, "rt") as f:
        expected = sorted(int(r["pc"], 16) for r in csv.DictReader(f)
                          if r["asm"].split()[0] in ("br", "blr"))  # fmt: skip
    assert hit_pcs(table, "indirect-branch") == expected
    # Every `br x17` in a .plt section (hidden functions named in the README) is a stub.
    plt = {"<unknown_06>", "<unknown_12>", "<unknown_45>", "<unknown_62>"}
    stubs = [int(profile.pc[r]) for r in range(len(profile))
             if profile.asm(r) == "br x17"
             and profile.function_names[profile.function[r]] in plt]  # fmt: skip
    assert stubs and set(stubs) <= set(hit_pcs(table, "call-overhead"))


def test_bzip2_byte_scans_agree_with_isa(bzip2_patterns):
    """The vectorised operand reading equals pcscope.core.isa on every real row."""
    profile, _, _ = bzip2_patterns
    facts = code_facts(profile)
    for r in range(len(profile)):
        text = profile.asm(r)
        m, ops = isa.canonical(text)
        mem = isa.memory_operand(ops)
        written = isa.dest_registers(m, ops)
        if mem is not None and mem.writeback:
            written = tuple(d for d in written if d != mem.base)
        if isa.is_call(m):
            written = ()
        dest = sorted(c for c in map(register_code, written) if 0 <= c <= 31)
        target = isa.branch_target(text, int(profile.pc[r]))
        assert facts.names[facts.canon[r]] == m, text
        assert sorted(int(c) for c in facts.dest[r] if c >= 0) == dest, text
        assert int(facts.base[r]) == (register_code(mem.base) if mem else -1), text
        if mem is not None and register_code(mem.base) >= 0:
            assert bool(facts.writeback[r]) == mem.writeback, text
        assert int(facts.target[r]) == (-1 if target is None else target), text


def test_facts_do_not_depend_on_the_chunks(bzip2_patterns, monkeypatch):
    """Chunks scanned on several threads fill the same facts as one scan of every row."""
    profile, _, _ = bzip2_patterns
    whole = code_facts(profile)
    monkeypatch.setattr("pcscope.core.patterns.FACTS_CHUNK", 1000)  # 20 chunks
    chunked = code_facts(profile)
    for field in ("canon", "dest", "base", "writeback", "load", "store", "call", "target",
                  "first"):
        a, b = getattr(whole, field), getattr(chunked, field)
        assert a.dtype == b.dtype and np.array_equal(a, b), field


def test_an_error_of_the_pattern_worker_is_raised_as_it_was(tmp_path, monkeypatch):
    """The dependent loads are found on a thread of their own: its error is the caller's,
    typed as raised, and the thread is gone when find_patterns returns."""
    import threading

    from pcscope.core.errors import InputError

    def failing(*_args):
        raise InputError("p.csv", 3, "bad row")

    monkeypatch.setattr("pcscope.core.patterns._dependent_loads", failing)
    profile = write_profile(tmp_path, DEPENDENT)
    threads = threading.active_count()
    with pytest.raises(InputError) as err:
        find_patterns(profile)
    assert (err.value.line, threading.active_count()) == (3, threads)


def test_reopen_checks_the_profile(tmp_path):
    rows = [("f", 0x1000, 10, "dmb ish"), ("f", 0x1004, 20, "udiv w0, w1, w2")]
    profile = write_profile(tmp_path, rows)
    arrays = find_patterns(profile).to_arrays()
    assert len(PatternTable.from_arrays(arrays, profile)) == 2
    other = write_profile(tmp_path, [("f", 0x2000, 1, "dmb ish"), ("f", 0x2004, 1, "nop")], "o.csv")
    with pytest.raises(ValueError):
        PatternTable.from_arrays(arrays, other)


def test_a_repeated_text_is_read_once_and_its_facts_go_to_every_row(tmp_path):
    """Rows with one text share its number (first appearance in PC order) and its facts;
    a relative branch target still depends on each row's own PC."""
    texts = ["ldr x1, [x2, #8]!", "b #-0x8", "add x0, x0, #1", "ldr x1, [x2, #8]!", "b #-0x8",
             "b 0x100"]
    profile = write_profile(tmp_path, [("f", 0x100 + 4 * i, 1, t) for i, t in enumerate(texts)])
    assert profile.asm_code.tolist() == [0, 1, 2, 0, 1, 3]
    assert profile.asm_firsts().tolist() == [0, 1, 2, 5]
    facts = code_facts(profile)
    assert facts.target.tolist() == [-1, 0xfc, -1, -1, 0x108, 0x100]
    assert facts.base.tolist()[::3] == [register_code("x2")] * 2
    assert facts.writeback.tolist() == [True, False, False, True, False, False]
    assert facts.dest[:, 0].tolist() == [register_code("x1"), -1, 0, register_code("x1"), -1, -1]
