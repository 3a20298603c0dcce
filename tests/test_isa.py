"""AArch64 text helpers: syntax variants of objdump, capstone and llvm read the same way."""

import pytest

from pcscope.core import isa


@pytest.mark.parametrize(
    ("text", "mnemonic"),
    [
        ("LDR X4, [X0]", "ldr"),
        ("b.cs 0x1020", "b.hs"),
        ("b.hs 0x1020", "b.hs"),
        ("B.CC 0x1020", "b.lo"),
        ("b.lo 0x1020", "b.lo"),
        ("beq 0x40", "b.eq"),  # GNU spelling without the dot
        ("bcs 0x40", "b.hs"),
        ("movz w0, #0x7", "mov"),
        ("movn x0, #0", "mov"),
        ("mov x0, x1", "mov"),
        ("movk x0, #1, lsl #16", "movk"),
        ("hint #34", "bti"),
        ("hint #0x19", "paciasp"),
        ("hint #1", "yield"),
        ("hint #99", "hint"),
        ("bti c", "bti"),
        ("paciasp", "paciasp"),
        (".byte 0x41, 0x7c, 0xe0, 0x88", "casa"),  # capstone 4 cannot decode LSE
        (".inst 0xb8608020 ; undefined", "swpl"),  # objdump
        (".word 0xb8a00020", "ldadda"),
        (".byte 0x00, 0x00, 0x00, 0x00", ".byte"),
        ("bl\t4005d0 <puts@plt>", "bl"),  # objdump separates with a tab
        ("  ret  // return", "ret"),
    ],
)
def test_mnemonic_normalisation(text, mnemonic):
    assert isa.canonical(text)[0] == mnemonic


@pytest.mark.parametrize(
    ("word", "mnemonic"),
    [
        (0x88E07C41, "casa"),  # casa w0, w1, [x2]
        (0xC8E0FC41, "casal"),  # casal x0, x1, [x2]
        (0x08A07C41, "casb"),
        (0x48607C82, "caspa"),  # caspa x0, x1, x2, x3, [x4]
        (0xB8608020, "swpl"),
        (0xB8A00020, "ldadda"),
        (0xF8E00020, "ldaddal"),
        (0x78201020, "ldclrh"),
        (0xB820303F, "stset"),  # ldset with Rt = xzr: the ST alias
        (0xB860003F, "staddl"),
        (0x38A0403F, "ldsmaxab"),  # acquire keeps the LD form
        (0xD503201F, None),  # nop
    ],
)
def test_decode_lse_words(word, mnemonic):
    assert isa.decode_word(word) == mnemonic


@pytest.mark.parametrize(
    ("operands", "parts"),
    [
        ("x0, [x1, #8]!", ["x0", "[x1, #8]!"]),
        ("x0, x1, [x2], #16", ["x0", "x1", "[x2]", "#16"]),
        ("{v0.16b, v1.16b}, [x0], x2", ["{v0.16b, v1.16b}", "[x0]", "x2"]),
        ("w0, [x22, x5, lsl #2]", ["w0", "[x22, x5, lsl #2]"]),
        ("4005d0 <main+0x10>", ["4005d0"]),
        ("", []),
        # one bracket pair (the fast path): commas inside it do not split
        ("x0, x1, [sp, #-0x10]!", ["x0", "x1", "[sp, #-0x10]!"]),
        ("[x0, #8], x1", ["[x0, #8]", "x1"]),
        ("w1 , [ x2 , x3 ] , #4 ,", ["w1", "[ x2 , x3 ]", "#4"]),
        ("x0, [x1, #8] <sym+0x4>", ["x0", "[x1, #8]"]),
        # brackets out of order or nested: the general split
        ("x0, ]x1[, x2", ["x0", "]x1[, x2"]),
        ("z0.d, p0/z, [x0, z1.d, lsl #3], [x2]", ["z0.d", "p0/z", "[x0, z1.d, lsl #3]", "[x2]"]),
    ],
)
def test_split_operands(operands, parts):
    assert isa.split_operands(operands) == parts


@pytest.mark.parametrize(
    ("text", "split"),
    [
        ("LDR X4, [X0]", ("ldr", "x4, [x0]")),
        ("  add\tx0,  x1 , #1  \t", ("add", "x0,  x1 , #1")),
        ("ret", ("ret", "")),
        ("nop\u00a0", ("nop", "")),  # Unicode whitespace splits like the regex's \s
        ("mov\u2003x0, x1", ("mov", "x0, x1")),
        ("", ("", "")),
        ("   ", ("", "")),
        ("ldr x0, [x1] // comment", ("ldr", "x0, [x1]")),
        ("b 0x40 ; comment", ("b", "0x40")),
    ],
)
def test_split_asm(text, split):
    assert isa.split_asm(text) == split
    # the comment-free fast path and the regex path (taken when a comment is there) agree
    assert isa.split_asm(text + " // trailing comment") == split


@pytest.mark.parametrize("text", [
    "ldp x0, x1, [x2], #16", "ldadda w0, w3, [x1]", "casa w0, w1, [x2]", "b.cs 0x1020",
    "bl 4005d0 <puts@plt>", "tbz w1, #3, 0x200", "b #-0x10", "ret", "blr x3", "hint #34",
    "ld1 {v0.16b, v1.16b}, [x0], #32", "str x1, [x2, #8]!", "ldr x0, 0x1234", "",
])
def test_read_answers_every_question_at_once(text):
    m, ops = isa.canonical(text)
    reading = isa.read(text)
    assert (reading.mnemonic, reading.operands) == (m, ops)
    assert reading.mem == isa.memory_operand(ops)
    assert reading.dest == isa.dest_registers(m, ops)
    assert reading.src == isa.source_registers(m, ops)
    assert reading.target == (isa.branch_operand(text) if isa.is_branch(m) else None)


@pytest.mark.parametrize(
    ("token", "register"),
    [
        ("w5", "x5"), ("X5", "x5"), ("x30", "x30"), ("w31", None), ("sp", "sp"), ("wsp", "sp"),
        ("xzr", "xzr"), ("wzr", "xzr"), ("fp", "x29"), ("lr", "x30"), ("ip1", "x17"),
        ("d3", "v3"), ("q3", "v3"), ("v3.4s", "v3"), ("z3.d", "v3"), ("p1/z", "p1"),
        ("#8", None), ("lsl", None), ("0x10", None), ("[x1", None),
    ],
)  # fmt: skip
def test_parse_register(token, register):
    assert isa.parse_register(token) == register


@pytest.mark.parametrize(
    ("text", "dest", "src", "base"),
    [
        ("ldr x4, [x0, #8]!", ("x4", "x0"), ("x0",), "x0"),
        ("ldr w4, [x0], #8", ("x4", "x0"), ("x0",), "x0"),
        ("ldp x29, x30, [sp], #0x10", ("x29", "x30", "sp"), ("sp",), "sp"),
        ("str x1, [x2, #8]", (), ("x1", "x2"), "x2"),
        ("stp x29, x30, [sp, #-0x10]!", ("sp",), ("x29", "x30", "sp"), "sp"),
        ("stlxr w1, w2, [x0]", ("x1",), ("x2", "x0"), "x0"),
        ("ldadda w0, w3, [x1]", ("x3",), ("x0", "x1"), "x1"),
        ("stadd w0, [x1]", (), ("x0", "x1"), "x1"),
        ("casa w0, w1, [x2]", ("x0",), ("x0", "x1", "x2"), "x2"),
        ("add x16, x16, #0xe10", ("x16",), ("x16",), None),
        ("cmp w1, #0x2f", (), ("x1",), None),
        ("mov x29, sp", ("x29",), ("sp",), None),
        ("movk x0, #1, lsl #16", ("x0",), ("x0",), None),
        ("ldr x0, 0x1234", ("x0",), (), None),  # pc-relative literal: no base register
        ("bl #0x55000021b4", ("x30",), (), None),
        ("blr x3", ("x30",), ("x3",), None),
        ("ret", (), ("x30",), None),
        ("cbz x0, 0x1f0", (), ("x0",), None),
        ("ld1 {v0.16b, v1.16b}, [x0], #32", ("v0", "v1", "x0"), ("x0",), "x0"),
        ("mov wzr, w1", (), ("x1",), None),
    ],
)
def test_registers(text, dest, src, base):
    m, ops = isa.canonical(text)
    assert isa.dest_registers(m, ops) == dest
    assert isa.source_registers(m, ops) == src
    assert isa.base_register(text) == base


@pytest.mark.parametrize(("text", "indexed"), [
    ("ldr x3, [x0, x2, lsl #3]", True), ("ldrb w1, [x2, w0, uxtw]", True),
    ("LDR X3, [X0,X2]", True), ("ld1d {z0.d}, p0/z, [x0, z1.d, lsl #3]", True),
    ("ldr x3, [x0, #8]", False), ("ldr x3, [x0]", False), ("ldr x0, 0x1234", False),
    ("ld1 {v0.16b}, [x0], x2", False), ("add x0, x1, x2", False),
])  # fmt: skip
def test_indexed(text, indexed):
    assert isa.indexed(text) is indexed


@pytest.mark.parametrize(
    ("text", "pc", "target"),
    [
        ("b.eq 0x1020", None, 0x1020),
        ("bl #0x55000021b4", None, 0x55000021B4),
        ("cbz x0, 0x1f0", None, 0x1F0),
        ("cbnz w1, #0x5500001748", None, 0x5500001748),
        ("tbz w1, #3, 0x200", None, 0x200),
        ("tbnz w0, #0xb, #0x550292b7b8", None, 0x550292B7B8),
        ("b 4005d0 <main+0x10>", None, 0x4005D0),  # objdump: bare hex
        ("bl\t4004f0 <puts@plt>", None, 0x4004F0),
        ("B.NE #0x10", None, 0x10),
        ("b #-0x10", 0x100, 0xF0),  # relative (older llvm-objdump)
        ("b #-0x10", None, None),
        ("br x17", None, None),
        ("ret", None, None),
        ("ldr x0, 0x1234", None, None),
    ],
)
def test_branch_target(text, pc, target):
    assert isa.branch_target(text, pc) == target


def test_instruction_classes():
    kinds = {
        "ldr": (True, False, False, False, False, False, False),
        "ldaxr": (True, False, False, False, False, False, False),
        "ldadd": (True, True, False, False, False, False, False),
        "casal": (True, True, False, False, False, False, False),
        "swp": (True, True, False, False, False, False, False),
        "str": (False, True, False, False, False, False, False),
        "stlxr": (False, True, False, False, False, False, False),
        "stadd": (False, True, False, False, False, False, False),
        "b": (False, False, True, False, False, False, False),
        "b.ne": (False, False, True, True, False, False, False),
        "cbz": (False, False, True, True, False, False, False),
        "tbnz": (False, False, True, True, False, False, False),
        "bl": (False, False, True, False, True, False, False),
        "blr": (False, False, True, False, True, False, True),
        "blraaz": (False, False, True, False, True, False, True),
        "br": (False, False, True, False, False, False, True),
        "braa": (False, False, True, False, False, False, True),
        "ret": (False, False, True, False, False, True, False),
        "retaa": (False, False, True, False, False, True, False),
        "add": (False, False, False, False, False, False, False),
        "prfm": (False, False, False, False, False, False, False),
    }
    for m, expected in kinds.items():
        got = (isa.is_load(m), isa.is_store(m), isa.is_branch(m), isa.is_conditional_branch(m),
               isa.is_call(m), isa.is_return(m), isa.is_indirect(m))  # fmt: skip
        assert got == expected, m


@pytest.mark.parametrize(
    ("mnemonic", "family"),
    [
        ("ldxr", "llsc"), ("ldaxrb", "llsc"), ("stlxrh", "llsc"), ("ldaxp", "llsc"),
        ("stxp", "llsc"), ("cas", "lse"), ("casalh", "lse"), ("caspal", "lse"),
        ("ldaddal", "lse"), ("ldclrlb", "lse"), ("ldeorah", "lse"), ("ldsmax", "lse"),
        ("lduminal", "lse"), ("swpal", "lse"), ("stadd", "lse"), ("stclrlb", "lse"),
        ("ldar", "acquire-release"), ("ldapr", "acquire-release"),
        ("ldapurb", "acquire-release"), ("stlrh", "acquire-release"),
        ("ldlar", "acquire-release"), ("stllr", "acquire-release"),
        ("dmb", "barrier"), ("dsb", "barrier"), ("isb", "barrier"),
        ("udiv", "division"), ("sdiv", "division"), ("fdiv", "division"),
        ("fsqrt", "division"),
        ("ldr", None), ("ldp", None), ("cset", None), ("csel", None), ("stp", None),
        ("mul", None), ("fmul", None), ("dc", None), ("nop", None), ("ldrsw", None),
    ],
)  # fmt: skip
def test_families(mnemonic, family):
    found = [name for name, regex in isa.FAMILIES.items() if regex.match(mnemonic)]
    assert found == ([family] if family else [])


@pytest.mark.parametrize(
    ("mnemonic", "expected"),
    [
        # mnemonic: (load, store, memory, exclusive, lse, acquire, release, indirect, return)
        ("prfm", (False, False, True, False, False, False, False, False, False)),
        ("prfum", (False, False, True, False, False, False, False, False, False)),
        ("dc", (False, False, True, False, False, False, False, False, False)),
        ("ic", (False, False, True, False, False, False, False, False, False)),
        ("ldxp", (True, False, True, True, False, False, False, False, False)),
        ("ldaxp", (True, False, True, True, False, True, False, False, False)),
        ("stxp", (False, True, True, True, False, False, False, False, False)),
        ("stlxp", (False, True, True, True, False, False, True, False, False)),
        ("ldaxrb", (True, False, True, True, False, True, False, False, False)),
        ("casal", (True, True, True, False, True, False, False, False, False)),
        ("caspa", (True, True, True, False, True, False, False, False, False)),
        ("ldaddal", (True, True, True, False, True, False, False, False, False)),
        ("stsetl", (False, True, True, False, True, False, False, False, False)),
        ("swpal", (True, True, True, False, True, False, False, False, False)),
        ("ldar", (True, False, True, False, False, True, False, False, False)),
        ("ldapurb", (True, False, True, False, False, True, False, False, False)),
        ("stlr", (False, True, True, False, False, False, True, False, False)),
        ("stlurh", (False, True, True, False, False, False, True, False, False)),
        ("braaz", (False, False, False, False, False, False, False, True, False)),
        ("blrab", (False, False, False, False, False, False, False, True, False)),
        ("retab", (False, False, False, False, False, False, False, False, True)),
        ("ldr", (True, False, True, False, False, False, False, False, False)),
    ],
)  # fmt: skip
def test_one_answer_per_edge_case(mnemonic, expected):
    got = (isa.is_load(mnemonic), isa.is_store(mnemonic), isa.is_memory(mnemonic),
           isa.is_exclusive(mnemonic), isa.is_lse(mnemonic), isa.is_acquire(mnemonic),
           isa.is_release(mnemonic), isa.is_indirect(mnemonic), isa.is_return(mnemonic))
    assert got == expected


@pytest.mark.parametrize(
    ("mnemonic", "divide", "fp_divide", "wait"),
    [("udiv", True, False, False), ("fdiv", True, True, False), ("fsqrt", True, True, False),
     ("frecpe", False, False, False), ("fmul", False, False, False),
     ("yield", False, False, True), ("wfe", False, False, True), ("isb", False, False, True),
     ("nop", False, False, False)],
)  # fmt: skip
def test_divide_and_wait_predicates(mnemonic, divide, fp_divide, wait):
    assert (isa.is_divide(mnemonic), isa.is_fp_divide(mnemonic),
            isa.is_wait_hint(mnemonic)) == (divide, fp_divide, wait)


def test_validator_asks_isa():
    """The support table answers with the ISA predicates (no second opinion)."""
    from pcscope.core.engine.support import supports

    assert not supports("dependent-load", "prfm pldl1keep, [x0]", [])
    assert supports("cache-miss", "prfm pldl1keep, [x0]", [])
    assert supports("indirect-branch", "braaz x3", [])
    assert supports("atomic-llsc", "stlxp w1, x2, x3, [x0]", [])
    assert supports("acquire-release", "ldapr w0, [x1]", [])


@pytest.mark.parametrize(("text", "ends"), [
    ("b 0x1000", True),  # unconditional, no link
    ("br x16", True), ("braa x16, x17", True), ("brab x16, sp", True),
    ("braaz x16", True), ("brabz x16", True),  # register jumps, authenticated or not
    ("ret", True), ("ret x1", True), ("retaa", True), ("retab", True),
    ("eret", True), ("eretaa", True), ("eretab", True),
    ("brk #0x3e8", True), ("udf #0", True),  # traps: the exception returns to the trap
    ("b.ne 0x1000", False), ("bcs 0x1000", False), ("bc.eq 0x1000", False),
    ("cbz x0, 0x1000", False), ("cbnz w1, 0x1000", False),
    ("tbz w1, #3, 0x1000", False), ("tbnz x1, #63, 0x1000", False),  # conditional
    ("bl 0x1000", False), ("blr x8", False), ("blraa x8, x9", False),
    ("blraaz x8", False), ("blrabz x8", False),  # calls come back
    ("svc #0", False), ("hlt #0xf000", False),  # return to the next instruction
    ("nop", False), ("add x0, x0, #1", False), ("ldr x16, [x17]", False),
])  # fmt: skip
def test_ends_flow(text, ends):
    assert isa.ends_flow(isa.canonical(text)[0]) is ends
