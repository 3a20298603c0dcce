"""The profile reader against every rule of docs/formats.md §1."""

from __future__ import annotations

import gzip
import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pcscope.core.errors import InputError
from pcscope.core.readers.profile_csv import read_profile

SEED_EXAMPLE = """function,window,pc,samples,asm
<unknown_01>,w1,0x1000,820000,"LDR X4, [X0]"
<unknown_01>,w1,0x1004,818000,"CMP X4, #0"
<unknown_01>,w1,0x1008,818000,B.EQ 0x1020
runtime_dispatch,w2,0x2000,510000,"LDR X3, [X1, #16]"
runtime_dispatch,w2,0x2004,509000,BLR X3
<unknown_02>,w3,0x3000,122000,"LDAXR W5, [X2]"
"""


def write(tmp_path, text: str, name: str = "p.csv") -> str:
    path = tmp_path / name
    if name.endswith(".gz"):
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path.write_text(text)
    return str(path)


def windows_of(profile) -> dict[str, list[int]]:
    return {w.id: [int(profile.pc[r]) for r in profile.window_rows(w.index)]
            for w in profile.windows}


def test_seed_example_windows_weights_ids(tmp_path):
    p = read_profile(write(tmp_path, SEED_EXAMPLE))
    assert len(p) == 6
    assert p.total == 820000 + 818000 * 2 + 510000 + 509000 + 122000
    assert windows_of(p) == {
        "win:0x1000": [0x1000, 0x1004, 0x1008],
        "win:0x2000": [0x2000, 0x2004],
        "win:0x3000": [0x3000],
    }
    w1 = p.windows[p.windows_by_weight()[0]]
    assert w1.id == "win:0x1000" and w1.label == "w1"
    assert w1.weight == pytest.approx(2456000 / 3597000)
    ids = sorted(f.id for f in p.functions)
    assert ids == ["fn:0x1000", "fn:0x3000", "fn:runtime_dispatch"]
    assert p.mnemonics == sorted({"ldr", "cmp", "b.eq", "blr", "ldaxr"})
    assert p.asm(p.row_of(0x2004)) == "BLR X3"


def test_header_is_case_insensitive_order_free_and_keeps_extras(tmp_path):
    text = "ASM\tSamples\tPC\tNote\nnop\t5\t0x10\thello\nret\t7\t0x14\t\n"
    p = read_profile(write(tmp_path, text, "p.tsv"))
    assert [int(x) for x in p.pc] == [0x10, 0x14]
    assert list(p.samples) == [5, 7]
    assert p.extras["note"][0] == "hello" and p.extras["note"][1] == ""


def test_delimiter_sniffed_when_extension_says_neither(tmp_path):
    p = read_profile(write(tmp_path, "pc\tsamples\tasm\n0x10\t1\tnop\n", "profile.txt"))
    assert len(p) == 1


def test_pc_forms_decimal_and_hex_any_case(tmp_path):
    text = "pc,samples,asm\n0X10,1,nop\n32,2,nop\n0xAb,3,nop\n"
    p = read_profile(write(tmp_path, text))
    assert [int(x) for x in p.pc] == [16, 32, 0xAB]


def test_derived_windows_split_on_function_change_and_gap(tmp_path):
    text = (
        "function,pc,samples,asm\n"
        "f,0x1000,1,nop\n"
        "f,0x1004,1,nop\n"
        "f,0x1044,1,nop\n"  # gap 0x40 = 64: same window
        "f,0x1088,1,nop\n"  # gap 0x44 = 68 > 64: new window
        "g,0x108c,1,nop\n"  # function change: new window
        ",0x1090,1,nop\n"  # no name: its own run
        ",0x1094,1,nop\n"
        "<unknown_7>,0x1098,1,nop\n"
    )
    p = read_profile(write(tmp_path, text))
    assert windows_of(p) == {
        "win:0x1000": [0x1000, 0x1004, 0x1044],
        "win:0x1088": [0x1088],
        "win:0x108c": [0x108C],
        "win:0x1090": [0x1090, 0x1094],
        "win:0x1098": [0x1098],
    }
    hidden = p.functions[p.functions.index_of("<unknown_7>")]
    assert hidden.hidden and hidden.id == "fn:0x1098"


def test_derived_windows_are_per_module(tmp_path):
    text = (
        "module,function,pc,samples,asm\n"
        "a.so,f,0x1000,1,nop\n"
        "b.so,f,0x1004,1,nop\n"
        "a.so,f,0x1008,1,nop\n"
    )
    p = read_profile(write(tmp_path, text))
    assert windows_of(p) == {"win:0x1000": [0x1000, 0x1008], "win:0x1004": [0x1004]}


def test_window_labels_group_rows_and_blank_labels_are_derived(tmp_path):
    text = (
        "window,function,pc,samples,asm\n"
        "hot,f,0x1000,5,nop\n"
        "hot,g,0x9000,5,nop\n"  # far apart, other function: the label still holds them
        ",f,0x1004,1,nop\n"
        ",f,0x1008,1,nop\n"
    )
    p = read_profile(write(tmp_path, text))
    assert windows_of(p) == {"win:0x1000": [0x1000, 0x9000], "win:0x1004": [0x1004, 0x1008]}


def test_an_all_empty_cycles_column_counts_as_absent(tmp_path):
    text = "pc,samples,cycles,asm\n0x10,100,,nop\n0x200,1,  ,nop\n"
    p = read_profile(write(tmp_path, text))
    assert p.cycles is None and p.basis == "samples" and p.total == 101


def test_weights_use_cycles_when_present(tmp_path):
    text = "pc,samples,cycles,asm\n0x10,100,1,nop\n0x200,1,3,nop\n"
    p = read_profile(write(tmp_path, text))
    assert p.basis == "cycles" and p.total == 4
    assert p.windows[p.windows_by_weight()[0]].id == "win:0x200"


def test_hot_selection_top_coverage_crossing_and_ties(tmp_path):
    rows = ["function,pc,samples,asm"]
    # five windows (different functions), weights 40, 30, 15, 15, 0 (the 15s tie)
    for i, (fn, s) in enumerate([("a", 40), ("b", 30), ("d", 15), ("c", 15), ("e", 0)]):
        rows.append(f"{fn},{0x1000 + 0x100 * i:#x},{s},nop")
    p = read_profile(write(tmp_path, "\n".join(rows) + "\n"))
    ids = lambda sel: [p.windows[w].id for w in sel.windows]  # noqa: E731
    assert ids(p.hot_windows(coverage=0.5)) == ["win:0x1000", "win:0x1100"]  # 0.7 crosses 0.5
    assert ids(p.hot_windows(coverage=0.7)) == ["win:0x1000", "win:0x1100"]  # exactly reached
    # tie between 0x1200 and 0x1300 (15 each): lower first PC first
    assert ids(p.hot_windows(coverage=0.8)) == ["win:0x1000", "win:0x1100", "win:0x1200"]
    assert ids(p.hot_windows(top=1, coverage=0.9)) == ["win:0x1000"]
    sel = p.hot_windows(coverage=1.0)
    assert len(sel.windows) == 5 and sel.coverage == pytest.approx(1.0)


def test_duplicate_pc_is_an_error_naming_both_lines(tmp_path):
    text = "pc,samples,asm\n0x10,1,nop\n0x20,1,nop\n16,2,nop\n"
    with pytest.raises(InputError) as err:
        read_profile(write(tmp_path, text))
    assert err.value.line == 4 and "line 2" in err.value.what and "0x10" in err.value.what


def test_merge_duplicates_sums(tmp_path):
    text = "pc,samples,asm\n0x10,1,nop\n0x20,1,nop\n16,2,nop\n"
    p = read_profile(write(tmp_path, text), merge_duplicates=True)
    assert [int(x) for x in p.pc] == [0x10, 0x20] and list(p.samples) == [3, 1]


@pytest.mark.parametrize("join_rows", [1 << 17, 2])  # joined in one slice, or several
def test_merge_of_unsorted_rows_keeps_each_pcs_first_text(tmp_path, monkeypatch, join_rows):
    """The text columns are put in order on a thread of their own: by the PC sort, then the
    merge's first row of each PC, as the numbers are; mnemonics and distinct-text numbers
    (read as the file is) follow the same rows."""
    monkeypatch.setattr("pcscope.core.readers.profile_csv._JOIN_ROWS", join_rows)
    text = ("pc,samples,asm,note\n0x20,1,b x1,x\n0x10,1,a,y\n0x20,2,c,z\n0x8,4,b x1,w\n"
            "0x4,1,Add x0,v\n")
    p = read_profile(write(tmp_path, text), merge_duplicates=True)
    assert [int(x) for x in p.pc] == [0x4, 0x8, 0x10, 0x20] and list(p.samples) == [1, 4, 1, 3]
    assert p.asm_column.to_list() == ["Add x0", "b x1", "a", "b x1"]
    assert p.extras["note"].to_list() == ["v", "w", "y", "x"]
    assert p.asm_code.tolist() == [0, 1, 2, 1] and p.asm_firsts().tolist() == [0, 1, 2]
    assert [p.mnemonics[m] for m in p.mnemonic] == ["add", "b", "a", "b"]


def test_an_error_of_the_text_worker_is_raised_as_it_was(tmp_path, monkeypatch):
    """Its error is the reader's, typed as raised, and the thread is gone."""
    import threading

    def failing(*_args):
        raise InputError("p.csv", 3, "bad text")

    monkeypatch.setattr("pcscope.core.readers.profile_csv._text_columns", failing)
    threads = threading.active_count()
    with pytest.raises(InputError) as err:
        read_profile(write(tmp_path, "pc,samples,asm\n0x20,1,nop\n0x10,1,nop\n"))
    assert (err.value.line, threading.active_count()) == (3, threads)


@pytest.mark.parametrize(
    ("text", "line", "fragment"),
    [
        ("pc,asm\n0x10,nop\n", 1, "missing column samples"),
        ("pc,samples,asm\n0x10,1,nop\n0xzz,1,nop\n", 3, "bad pc"),
        ("pc,samples,asm\n0x10,1,nop\n0x14,-5,nop\n", 3, "negative samples"),
        ("pc,samples,asm\n0x10,1.5,nop\n", 2, "not a whole number"),
        ("pc,samples,asm\n0x10,1,nop\n0x14,2,\n", 3, "asm is empty"),
        ("pc,samples,asm\n0x10,1,nop\n0x14,2,nop,extra\n", 3, "4 fields"),
        ("pc,samples,asm\n\n0x10,1,nop\n0x,1,nop\n", 4, "bad pc"),
        ("pc,pc,samples,asm\n", 1, "appears twice"),
    ],
)
def test_bad_input_names_file_and_line(tmp_path, text, line, fragment):
    path = write(tmp_path, text)
    with pytest.raises(InputError) as err:
        read_profile(path)
    assert err.value.path == path
    assert err.value.line == line
    assert fragment in err.value.what


def test_invalid_utf8_names_the_line(tmp_path):
    path = tmp_path / "p.csv"
    path.write_bytes(b"pc,samples,asm\n0x10,1,nop\n0x14,1,n\xffp\n")
    with pytest.raises(InputError) as err:
        read_profile(path)
    assert err.value.line == 3 and "UTF-8" in err.value.what


def test_truncated_gzip_is_an_input_error(tmp_path):
    data = gzip.compress(("pc,samples,asm\n" + "".join(
        f"{0x1000 + 4 * i:#x},{i},nop\n" for i in range(5000))).encode())
    path = tmp_path / "p.csv.gz"
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        read_profile(path)
    assert "gzip" in err.value.what


def test_gzip_reads_like_plain(tmp_path):
    plain = read_profile(write(tmp_path, SEED_EXAMPLE))
    gz = read_profile(write(tmp_path, SEED_EXAMPLE, "p.csv.gz"))
    assert np.array_equal(plain.pc, gz.pc) and np.array_equal(plain.samples, gz.samples)


def _signature(p):
    return (
        sorted((w.id, w.n, w.value) for w in p.windows),
        sorted((f.id, f.n, f.value) for f in p.functions),
        [(int(p.pc[r]), p.asm(r)) for r in range(len(p))],
    )


def test_ids_and_weights_do_not_depend_on_row_order(tmp_path):
    lines = SEED_EXAMPLE.strip().split("\n")
    header, body = lines[0], lines[1:]
    base = _signature(read_profile(write(tmp_path, SEED_EXAMPLE)))
    rng = random.Random(7)
    for i in range(3):
        rng.shuffle(body)
        shuffled = write(tmp_path, "\n".join([header, *body]) + "\n", f"s{i}.csv")
        assert _signature(read_profile(shuffled)) == base


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 300),  # pc slot (4-byte aligned)
            st.integers(0, 10**9),
            st.sampled_from(["", "f", "g", "<unknown_1>"]),
            st.sampled_from(["", "m1", "m2"]),
        ),
        min_size=1,
        max_size=60,
        unique_by=lambda r: r[0],
    )
)
def test_property_windows_partition_rows_and_weights_sum_to_one(tmp_path_factory, rows):
    tmp = tmp_path_factory.mktemp("prop")
    text = "function,module,pc,samples,asm\n" + "".join(
        f"{fn},{mod},{0x4000 + 4 * slot:#x},{s},nop\n" for slot, s, fn, mod in rows
    )
    p = read_profile(write(tmp, text))
    assert p.total == sum(r[1] for r in rows)
    members = np.concatenate([p.window_rows(w) for w in range(len(p.windows))])
    assert sorted(members.tolist()) == list(range(len(p)))
    for w in p.windows:
        pcs = [int(p.pc[r]) for r in p.window_rows(w.index)]
        assert w.first_pc == min(pcs)
        rows_in = p.window_rows(w.index)
        assert len({int(p.function[r]) for r in rows_in}) == 1
        assert len({int(p.module[r]) for r in rows_in}) == 1
    if p.total:
        assert sum(w.weight for w in p.windows) == pytest.approx(1.0)
    # the hot selection at coverage C reaches C (or takes every window)
    sel = p.hot_windows(coverage=0.5)
    assert sel.coverage >= 0.5 - 1e-9 or len(sel.windows) == len(p.windows)


def test_mnemonic_is_the_first_token_lower_cased(tmp_path):
    text = 'pc,samples,asm\n0x10,1,ret\n0x14,1," NOP "\n0x18,1,"LDR\tX0, [X1]"\n0x1c,1,b.eq 0x10\n'
    p = read_profile(write(tmp_path, text))
    assert [p.mnemonics[c] for c in p.mnemonic] == ["ret", "nop", "ldr", "b.eq"]


def test_tolerant_numbers_beside_canonical_ones(tmp_path):
    # one odd cell sends the column down the tolerant path; the canonical cells must agree
    text = "pc,samples,asm\n0x10,1,nop\n 0X14 , 2 ,nop\n24,3,nop\n"
    p = read_profile(write(tmp_path, text))
    assert [int(x) for x in p.pc] == [0x10, 0x14, 24] and list(p.samples) == [1, 2, 3]


def test_a_labelled_window_takes_the_function_holding_most_of_it(tmp_path):
    text = (
        "window,function,pc,samples,asm\n"
        "w,g,0x1000,5,nop\n"
        "w,f,0x1004,3,nop\n"
        "w,f,0x1008,3,nop\n"   # f holds 6 of 11
        "v,b,0x2000,4,nop\n"
        "v,a,0x2004,4,nop\n"   # tie: the function of the lowest row (b)
    )
    p = read_profile(write(tmp_path, text))
    names = {w.id: p.function_names[w.function] for w in p.windows}
    assert names == {"win:0x1000": "f", "win:0x2000": "b"}


def test_a_quoted_newline_in_a_number_moves_the_lines_after_it(tmp_path):
    # the tolerant read strips the newline; the rows after it still start a line lower
    text = 'pc,samples,asm\n0x10,"1\n",nop\n0x14,2,nop\n'
    assert list(read_profile(write(tmp_path, text)).line) == [2, 4]
    with pytest.raises(InputError) as err:
        read_profile(write(tmp_path, text + "0x18,3,\n"))
    assert err.value.line == 5 and "asm is empty" in err.value.what


def test_a_non_ascii_mnemonic_is_cut_at_its_first_whitespace(tmp_path):
    text = 'pc,samples,asm\n0x10,1,"ÄDD\tX0, X1"\n0x14,1,"Ädd X0, X1"\n0x18,1,ÄDD\n'
    p = read_profile(write(tmp_path, text))
    assert [p.mnemonics[c] for c in p.mnemonic] == ["ädd", "ädd", "ädd"]


def reference_windows(rows: list[tuple[int, str, str]]) -> dict[str, list[int]]:
    """docs/formats.md §1 for unlabelled rows (pc, function, module), by hand: per module
    in PC order, a new window where the function changes or the gap exceeds 64 bytes."""
    out: dict[str, list[int]] = {}
    for module in {m for _, _, m in rows}:
        current: list[int] = []
        last = None
        for pc, fn, _ in sorted(r for r in rows if r[2] == module):
            if last is not None and (fn != last[1] or pc - last[0] > 64):
                out[f"win:{current[0]:#x}"] = current
                current = []
            current.append(pc)
            last = (pc, fn)
        out[f"win:{current[0]:#x}"] = current
    return out


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.tuples(st.integers(0, 400), st.sampled_from(["", "f", "g"])),
             min_size=1, max_size=80, unique_by=lambda r: r[0]),
    st.sampled_from(["runs", "interleaved"]),
)
def test_derived_windows_match_the_rule_whether_modules_interleave_or_not(
        tmp_path_factory, rows, layout):
    def module(slot: int) -> str:
        if layout == "runs":  # each module one range of PCs (the usual profile)
            return "" if slot < 50 else "m1" if slot < 200 else "m2"
        return ["", "m1", "m2"][slot % 3]

    pcs = [(0x4000 + 8 * slot, fn, module(slot)) for slot, fn in rows]
    text = "function,module,pc,samples,asm\n" + "".join(
        f"{fn},{mod},{pc:#x},1,nop\n" for pc, fn, mod in pcs)
    p = read_profile(write(tmp_path_factory.mktemp("win"), text))
    assert windows_of(p) == reference_windows(pcs)


def test_rows_before_a_row_stay_in_its_function_latest_first(tmp_path):
    profile = read_profile(write(tmp_path, SEED_EXAMPLE))
    assert list(profile.rows_before(2, 8)) == [1, 0]
    assert list(profile.rows_before(2, 1)) == [1]
    assert list(profile.rows_before(4, 8)) == [3]  # not into <unknown_01>
    assert list(profile.rows_before(5, 8)) == []  # the first row of its function
