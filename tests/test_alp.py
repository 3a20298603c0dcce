"""ALP reader and model (docs/formats.md §2). Expected values are worked out by hand here or by
the small independent reference aggregator below, never echoed from the code under test."""

from __future__ import annotations

import gzip
import json
import math
import multiprocessing
import os
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pcscope.core.alp_columns as alp_columns
import pcscope.core.readers.alp as alp_reader
import pcscope.core.readers.alp_blocks as alp_blocks
from pcscope.core.alp import STAGES, AlpTable, round_sig
from pcscope.core.errors import InputError, PcscopeError
from pcscope.core.readers.alp import read_alp


def write_lines(path, lines, *, gz=False):
    text = "".join(line + "\n" for line in lines)
    if gz:
        with gzip.open(path, "wt", encoding="utf-8") as f:
            f.write(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def write_records(path, records, **kw):
    return write_lines(path, [json.dumps(r) for r in records], **kw)


def pcs(*values):
    return np.array(sorted(values), dtype=np.uint64)


# ---------------------------------------------------------------- aggregation by hand


def test_stage_weighted_by_iterations_over_records_that_carry_it(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x2000", "iterations": 100,
         "stages": {"fetch": 0.0, "dispatch": 3.0, "issue": 4.0}},
        {"loop": "B", "pc": "0x2000", "iterations": 300, "stages": {"fetch": 0.0, "issue": 8.0}},
        {"loop": "C", "pc": "0x2000", "iterations": 600},   # no stages: weighs nothing
    ])
    rec = read_alp(path, profile_pcs=None).get(0x2000)
    assert rec.iterations == 1000
    assert rec.stages["issue"] == pytest.approx((100 * 4.0 + 300 * 8.0) / 400)  # 7.0
    assert rec.stages["dispatch"] == 3.0           # only loop A carries it
    assert rec.issue_wait == pytest.approx(4.0)     # 7.0 - 3.0
    assert rec.execute_latency is None              # no "complete" anywhere
    assert list(rec.stages) == ["fetch", "dispatch", "issue"]
    assert rec.loops == ["A", "B", "C"]


def test_avg_latency_weighted_by_accesses_over_records_that_carry_it(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x10", "iterations": 1,
         "mem": {"kind": "load", "accesses": 100, "l1d_miss": 10, "avg_latency": 4.0}},
        {"loop": "B", "pc": "0x10", "iterations": 1,
         "mem": {"kind": "load", "accesses": 300, "l1d_miss": 20, "avg_latency": 8.0}},
        {"loop": "C", "pc": "0x10", "iterations": 1,
         "mem": {"kind": "load", "accesses": 600, "l1d_miss": 0}},
    ])
    mem = read_alp(path, profile_pcs=None).get(0x10).mem
    assert mem.kind == "load"
    assert mem.accesses == 1000
    assert mem.l1d_miss == 30
    assert mem.avg_latency == pytest.approx((100 * 4.0 + 300 * 8.0) / 400)  # 7.0
    assert mem.l1d_miss_rate == pytest.approx(0.03)
    assert mem.l2_miss is None and mem.l2_miss_rate is None   # absent everywhere


def test_counts_add_and_rates_come_from_unrounded_totals(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x20", "iterations": 300,
         "branch": {"kind": "indirect", "executed": 300, "taken": 300, "mispredicted": 1}},
        {"loop": "B", "pc": "0x20", "iterations": 600,
         "branch": {"kind": "indirect", "executed": 600, "taken": 599, "mispredicted": 2}},
    ])
    b = read_alp(path, profile_pcs=None).get(0x20).branch
    assert (b.kind, b.executed, b.taken, b.mispredicted) == ("indirect", 900, 899, 3)
    assert b.mispredict_rate == 3 / 900
    assert b.to_json(rounded=True)["mispredict_rate"] == 0.00333
    assert b.to_json(rounded=False)["mispredict_rate"] == 3 / 900


def test_derived_figures_use_unrounded_stages(tmp_path):
    # Rounded first, issue wait would be 2.35 - 1.23 = 1.12; from the totals it is 1.1111.
    path = write_records(tmp_path / "a.jsonl", [
        {"pc": "0x30", "iterations": 1, "stages": {"dispatch": 1.2345, "issue": 2.3456}}])
    rec = read_alp(path, profile_pcs=None).get(0x30)
    assert rec.issue_wait == pytest.approx(1.1111)
    shown = rec.to_json()
    assert shown["stages"] == {"dispatch": 1.23, "issue": 2.35}
    assert shown["issue_wait"] == 1.11
    assert rec.to_json(rounded=False)["stages"] == {"dispatch": 1.2345, "issue": 2.3456}


def test_execute_latency_and_retire_wait(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"pc": "0x30", "iterations": 2, "stages": {"issue": 5.5, "complete": 9.0, "retire": 12.5}}])
    rec = read_alp(path, profile_pcs=None).get(0x30)
    assert (rec.execute_latency, rec.retire_wait) == (3.5, 3.5)
    assert rec.issue_wait is None


def test_stage_seen_only_in_zero_iteration_loops_is_a_plain_mean(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x30", "iterations": 0, "stages": {"issue": 2.0}},
        {"loop": "B", "pc": "0x30", "iterations": 0, "stages": {"issue": 4.0}},
        {"loop": "C", "pc": "0x30", "iterations": 5, "stages": {"fetch": 1.0}},
        {"loop": "A", "pc": "0x34", "iterations": 0, "stages": {"issue": 9.0}},
        {"loop": "B", "pc": "0x34", "iterations": 2, "stages": {"issue": 1.0}},
    ])
    table = read_alp(path, profile_pcs=None)
    assert table.get(0x30).stages == {"fetch": 1.0, "issue": 3.0}
    assert table.get(0x34).stages == {"issue": 1.0}  # a weight beside it: the weighted mean


def test_extra_stage_names_are_averaged_and_listed_after_canonical(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x40", "iterations": 1, "stages": {"zz": 1.0, "issue": 2.0}},
        {"loop": "B", "pc": "0x40", "iterations": 3, "stages": {"aa": 5.0, "zz": 5.0}},
    ])
    rec = read_alp(path, profile_pcs=None).get(0x40)
    assert list(rec.stages) == ["issue", "aa", "zz"]
    assert rec.stages == {"issue": 2.0, "aa": 5.0, "zz": (1 * 1.0 + 3 * 5.0) / 4}


def test_only_extra_stages_and_no_stages(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"pc": "0x40", "iterations": 1, "stages": {"zz": 1.0}},
        {"pc": "0x44", "iterations": 1},
        {"pc": "0x48", "iterations": 1, "stages": {}},
    ])
    table = read_alp(path, profile_pcs=None)
    assert table.get(0x40).stages == {"zz": 1.0}
    assert table.get(0x44).stages == {} and table.get(0x48).stages == {}
    assert "stages" not in table.get(0x44).to_json()


def test_round_sig():
    assert round_sig(12.345) == 12.3
    assert round_sig(0.0012345) == 0.00123
    assert round_sig(123456.0) == 123000.0
    assert round_sig(-2.346) == -2.35
    assert round_sig(99.96) == 100.0
    assert round_sig(0.0) == 0.0
    assert round_sig(7.0) == 7.0


def test_integer_counts_are_never_rounded_but_floats_are(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"pc": "0x50", "iterations": 123456, "stages": {"issue": 4.56789},
         "mem": {"kind": "store", "accesses": 123456, "l1d_miss": 0, "store_forwarded": 0,
                 "avg_latency": 3.14159}}])
    shown = read_alp(path, profile_pcs=None).get(0x50).to_json()
    assert shown["iterations"] == 123456
    assert shown["stages"] == {"issue": 4.57}
    assert shown["mem"] == {"kind": "store", "accesses": 123456, "l1d_miss": 0,
                            "store_forwarded": 0, "avg_latency": 3.14, "l1d_miss_rate": 0.0,
                            "store_forward_rate": 0.0}


# ---------------------------------------------------------------- PC matching


def test_pc_spellings_are_one_pc(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x2004", "iterations": 1},
        {"loop": "B", "pc": "0X2004", "iterations": 2},
        {"loop": "C", "pc": "8196", "iterations": 4},
        {"loop": "D", "pc": 8196, "iterations": 8},
        {"loop": "E", "pc": "0x2000", "iterations": 16},
    ])
    table = read_alp(path, profile_pcs=pcs(0x2000, 0x2004))
    assert sorted(table.records) == [0x2000, 0x2004]
    assert table.get(0x2004).iterations == 15
    assert table.stats.pcs == 2 and table.stats.records == 5 and table.stats.unmatched == 0


def test_unmatched_pcs_are_kept_flagged_and_counted(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x1000", "iterations": 1},
        {"loop": "A", "pc": "0x9999", "iterations": 1},
        {"loop": "B", "pc": "0x9999", "iterations": 1},
        {"loop": "A", "pc": "0x7777", "iterations": 1},
    ])
    table = read_alp(path, profile_pcs=pcs(0x1000, 0x1004))
    assert table.get(0x1000).matched is True
    assert table.get(0x9999).matched is False
    assert table.get(0x7777).to_json()["matched"] is False
    assert table.stats.unmatched == 2          # distinct PCs, not records


def test_without_a_profile_every_pc_is_matched(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [{"pc": "0x9999", "iterations": 1}])
    table = read_alp(path, profile_pcs=None)
    assert table.get(0x9999).matched and table.stats.unmatched == 0


# ---------------------------------------------------------------- errors


def test_duplicate_loop_pc_names_both_lines(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [
        '{"loop": "L1", "pc": "0x2004", "iterations": 1}',
        '{"loop": "L2", "pc": "0x2004", "iterations": 1}',
        '{"loop": "L1", "pc": "8196", "iterations": 1}',
    ])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 3
    assert "line 1" in err.value.what and "0x2004" in err.value.what


def test_two_records_without_loop_for_one_pc_are_duplicates(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", ['{"pc": "0x1", "iterations": 1}',
                                              '{"pc": "0x2", "iterations": 1}',
                                              '{"pc": "0x1", "iterations": 1}'])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 3 and "line 1" in err.value.what


BAD_LINES = [
    ('{"loop": "A", "pc": "0x1", "iterations": 1', "truncated JSON"),
    ('not json', "not JSON"),
    ('[1, 2]', "not an object"),
    ('{"loop": "A", "iterations": 1}', "missing pc"),
    ('{"loop": "A", "pc": "0x1"}', "missing iterations"),
    ('{"loop": "A", "pc": "0x1", "iterations": -1}', "negative iterations"),
    ('{"loop": "A", "pc": "0x1", "iterations": "5"}', "iterations as string"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1.5}', "fractional iterations"),
    ('{"loop": "A", "pc": "0xZZ", "iterations": 1}', "bad hex pc"),
    ('{"loop": "A", "pc": "0x10000000000000000", "iterations": 1}', "pc over 64 bits"),
    ('{"loop": "A", "pc": -4, "iterations": 1}', "negative pc"),
    ('{"loop": "A", "pc": 4.0, "iterations": 1}', "float pc"),
    ('{"loop": 7, "pc": "0x1", "iterations": 1}', "loop not a string"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "stages": {"issue": "x"}}', "stage string"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "stages": {"zz": "x"}}', "extra stage bad"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "stages": [1]}', "stages a list"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "stages": null}', "stages null"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "stages": {"issue": null}}', "stage null"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "branch": {"kind": "weird"}}', "branch kind"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "branch": {"executed": 1}}', "no branch kind"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, '
     '"branch": {"kind": "direct", "executed": -1}}', "negative executed"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, "mem": {"kind": "flush"}}', "mem kind"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, '
     '"mem": {"kind": "load", "l1d_miss": -3}}', "negative miss"),
    ('{"loop": "A", "pc": "0x1", "iterations": 1, '
     '"mem": {"kind": "load", "accesses": null}}', "null count"),
]


@pytest.mark.parametrize("bad,why", BAD_LINES, ids=[why for _, why in BAD_LINES])
def test_malformed_line_is_an_input_error_with_its_line(tmp_path, bad, why):
    path = write_lines(tmp_path / "a.jsonl", ['{"loop": "A", "pc": "0x2", "iterations": 1}',
                                              "", bad])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 3, why
    assert err.value.path == str(path)


def test_skip_bad_lines_skips_and_counts(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", [
        '{"loop": "A", "pc": "0x2", "iterations": 10, "stages": {"issue": 1.0}}',
        'garbage',
        '{"loop": "B", "pc": "0x2", "iterations": -5}',
        '{"loop": "A", "pc": "0x2", "iterations": 1000, "stages": {"issue": 99.0}}',  # dup
        '{"loop": "C", "pc": "0x2", "iterations": 30, "stages": {"issue": 5.0}}',
    ])
    table = read_alp(path, profile_pcs=None, skip_bad_lines=True)
    rec = table.get(0x2)
    assert table.stats.skipped_lines == 3
    assert table.stats.records == 2
    assert rec.iterations == 40
    assert rec.stages["issue"] == pytest.approx((10 * 1.0 + 30 * 5.0) / 40)
    assert [r.line for r in table.per_loop[0x2]] == [1, 5]


def test_contradicting_branch_kind_names_both_lines(tmp_path):
    path = write_records(tmp_path / "a.jsonl", [
        {"loop": "A", "pc": "0x8", "iterations": 1, "branch": {"kind": "indirect"}},
        {"loop": "B", "pc": "0x9", "iterations": 1, "branch": {"kind": "direct"}},
        {"loop": "B", "pc": "0x8", "iterations": 1, "branch": {"kind": "call"}},
    ])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 3 and "line 1" in err.value.what and "indirect" in err.value.what


def test_invalid_utf8_is_an_input_error_with_its_line(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"pc": "0x1", "iterations": 1}\n{"pc": "0x2", "asm": "\xff", '
                     b'"iterations": 1}\n')
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 2 and "UTF-8" in err.value.what


def test_missing_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError):
        read_alp(tmp_path / "nope.jsonl", profile_pcs=None)


# ---------------------------------------------------------------- gzip


SAMPLE = [
    {"loop": "L0007", "pc": "0x2004", "asm": "BLR X3", "iterations": 120000,
     "stages": {"fetch": 0.0, "decode": 1.0, "rename": 2.0, "dispatch": 3.0, "issue": 5.5,
                "complete": 9.0, "retire": 12.5},
     "branch": {"kind": "indirect", "executed": 120000, "taken": 120000, "mispredicted": 27600}},
    {"loop": "L0007", "pc": "0x2000", "asm": "LDR X3, [X1, #16]", "iterations": 120000,
     "stages": {"fetch": 0.0, "issue": 4.0, "complete": 8.1, "retire": 12.0},
     "mem": {"kind": "load", "accesses": 120000, "l1d_miss": 900, "l2_miss": 40, "llc_miss": 2,
             "tlb_miss": 0, "avg_latency": 4.3, "store_forwarded": 0}},
]


def test_gzip_reads_like_plain(tmp_path):
    plain = read_alp(write_records(tmp_path / "a.jsonl", SAMPLE), profile_pcs=None)
    packed = read_alp(write_records(tmp_path / "a.jsonl.gz", SAMPLE, gz=True), profile_pcs=None)
    assert packed.to_json() == plain.to_json()
    assert packed.get(0x2004).branch.mispredict_rate == 27600 / 120000


def test_truncated_gzip_is_an_input_error(tmp_path):
    lines = [json.dumps(dict(SAMPLE[0], loop=f"L{i}")) for i in range(2000)]
    path = write_lines(tmp_path / "a.jsonl.gz", lines, gz=True)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert "gzip" in err.value.what


# ---------------------------------------------------------------- trimming and rendering


def test_keep_pcs_trims_but_stats_count_everything(tmp_path):
    path = write_records(tmp_path / "a.jsonl", SAMPLE + [
        {"loop": "L0008", "pc": "0x3000", "iterations": 5}])
    table = read_alp(path, profile_pcs=pcs(0x2000, 0x2004, 0x3000), keep_pcs=pcs(0x2000))
    assert list(table.records) == [0x2000]
    assert list(table.per_loop) == [0x2000]
    assert table.stats.pcs == 3 and table.stats.records == 3 and table.stats.kept == 1


def test_absent_blocks_and_stages_dropped_zero_counts_kept(tmp_path):
    path = write_records(tmp_path / "a.jsonl", SAMPLE)
    shown = read_alp(path, profile_pcs=None).get(0x2000).to_json()
    assert list(shown) == ["id", "pc", "asm", "matched", "iterations", "loops", "stages",
                           "execute_latency", "retire_wait", "mem"]
    assert "branch" not in shown
    assert list(shown["stages"]) == ["fetch", "issue", "complete", "retire"]
    assert shown["mem"]["store_forwarded"] == 0 and shown["mem"]["tlb_miss"] == 0
    assert shown["mem"]["store_forward_rate"] == 0.0
    assert shown["id"] == "alp:0x2000" and shown["pc"] == "0x2000"
    assert shown["execute_latency"] == 4.1 and shown["retire_wait"] == 3.9


def test_trimmed_table_and_token_counts(tmp_path):
    lines = [json.dumps(r) for r in SAMPLE]
    path = write_lines(tmp_path / "a.jsonl", lines)
    table = read_alp(path, profile_pcs=None)
    chars = sum(len(line) + 1 for line in lines)
    assert table.stats.raw_tokens == chars // 4
    whole = sum(len(json.dumps(r.to_json(), separators=(",", ":"))) for r in
                table.records.values())
    assert table.stats.trimmed_tokens == whole // 4
    small = table.trimmed([0x2004, 0x9999])
    assert list(small.records) == [0x2004]
    assert small.stats.kept == 1 and small.stats.records == 2 and small.stats.pcs == 2
    one = len(json.dumps(table.get(0x2004).to_json(), separators=(",", ":")))
    assert small.stats.trimmed_tokens == one // 4
    assert [r.loop for r in small.per_loop[0x2004]] == ["L0007"]
    assert len(table.records) == 2   # the original is unchanged


def test_per_loop_keeps_raw_records_in_file_order(tmp_path):
    records = [
        {"loop": "B", "pc": "0x1", "iterations": 1, "extra_field": [1, 2]},
        {"loop": "A", "pc": "0x2", "iterations": 1},
        {"pc": "0x1", "iterations": 2},
        {"loop": "A", "pc": "0x1", "iterations": 3},
    ]
    table = read_alp(write_records(tmp_path / "a.jsonl", records), profile_pcs=None)
    raw = table.per_loop[0x1]
    assert [(r.loop, r.line) for r in raw] == [("B", 1), (None, 3), ("A", 4)]
    assert raw[0].raw == records[0]
    assert table.get(0x1).loops == ["A", "B"]


def test_to_json_is_deterministic_whatever_the_record_order(tmp_path):
    records = [
        {"loop": f"L{i}", "pc": f"0x{0x100 + 4 * (i % 5):x}", "iterations": 2 ** (i % 4),
         "stages": {"issue": 1.0 + (i % 3), "retire": 8.0}} for i in range(20)]
    first = read_alp(write_records(tmp_path / "a.jsonl", records), profile_pcs=None)
    random.Random(3).shuffle(records)
    second = read_alp(write_records(tmp_path / "b.jsonl", records), profile_pcs=None)
    assert json.dumps(first.to_json()) == json.dumps(second.to_json())
    assert list(first.records) == sorted(first.records)


def test_records_mapping_and_per_loop_lookups(tmp_path):
    table = read_alp(write_records(tmp_path / "a.jsonl", SAMPLE), profile_pcs=None)
    records = table.records
    assert len(records) == 2 and 0x2004 in records and 0x2008 not in records
    assert -1 not in records and 2**70 not in records and "0x2004" not in records
    assert records.get(0x2008) is None and table.get(0x2008) is None
    assert np.uint64(0x2004) in records and table.get(np.uint64(0x2004)).pc == 0x2004
    assert table.per_loop[np.uint64(0x2004)][0].line == 1
    assert table.per_loop.get("0x2004") is None
    with pytest.raises(KeyError):
        records[0x2008]
    with pytest.raises(KeyError):
        table.per_loop[0x2008]
    assert table.per_loop.get(0x2008, []) == []
    assert [r.pc for r in records.values()] == [0x2000, 0x2004]
    assert list(records.values()) == [records[0x2000], records[0x2004]]
    assert dict(records.items())[0x2004] == records[0x2004]


def test_a_table_of_plain_dicts_works_the_same(tmp_path):
    """The index stores records and rebuilds the table from dicts."""
    table = read_alp(write_records(tmp_path / "a.jsonl", SAMPLE), profile_pcs=None)
    rebuilt = AlpTable(table.path, dict(table.records.items()),
                       {pc: table.per_loop[pc] for pc in table.per_loop}, table.file_stats)
    assert rebuilt.stats == table.stats
    assert rebuilt.to_json() == table.to_json()
    assert rebuilt.trimmed([0x2000]).to_json() == table.trimmed([0x2000]).to_json()


def test_blank_lines_are_ignored(tmp_path):
    path = write_lines(tmp_path / "a.jsonl", ["", '{"pc": "0x1", "iterations": 1}', "   ", ""])
    table = read_alp(path, profile_pcs=None)
    assert table.stats.records == 1 and table.stats.skipped_lines == 0


def test_progress_reports_characters_read(tmp_path):
    lines = [json.dumps(dict(SAMPLE[0], loop=f"L{i}")) for i in range(50)]
    path = write_lines(tmp_path / "a.jsonl", lines)
    seen = []
    read_alp(path, profile_pcs=None, progress=seen.append)
    assert seen[-1] == sum(len(line) + 1 for line in lines)
    assert seen == sorted(seen)


def test_empty_file(tmp_path):
    table = read_alp(write_lines(tmp_path / "a.jsonl", []), profile_pcs=pcs(1))
    assert table.records == {} and table.stats.records == 0 and table.stats.trimmed_tokens == 0


# ---------------------------------------------------------------- small batches


def test_errors_across_batches_name_exact_lines(tmp_path, monkeypatch):
    monkeypatch.setattr(alp_reader, "_BATCH", 2)
    path = write_lines(tmp_path / "a.jsonl", [
        '{"loop": "A", "pc": "0x1", "iterations": 1, "mem": {"kind": "load"}}',
        '{"loop": "A", "pc": "0x2", "iterations": 1}',
        '{"loop": "B", "pc": "0x2", "iterations": 1}',
        '{"loop": "B", "pc": "0x1", "iterations": 1, "mem": {"kind": "store"}}',  # kind
        '{"loop": "C", "pc": "0x3", "iterations": 1}',
        '{"loop": "A", "pc": "0x2", "iterations": 1}',                             # dup of 2
        '{"loop": "D", "pc": "0x1", "iterations": 4, "mem": {"kind": "load"}}',
    ])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 4 and "line 1" in err.value.what
    table = read_alp(path, profile_pcs=None, skip_bad_lines=True)
    assert table.stats.skipped_lines == 2
    assert table.get(0x1).iterations == 5 and table.get(0x2).iterations == 2
    assert table.get(0x1).loops == ["A", "D"]


def test_skipped_line_leaves_no_trace_for_a_later_record(tmp_path, monkeypatch):
    # Line 2 is skipped (kind conflict), so line 3, in the same loop, is no duplicate.
    monkeypatch.setattr(alp_reader, "_BATCH", 8)
    path = write_lines(tmp_path / "a.jsonl", [
        '{"loop": "A", "pc": "0x1", "iterations": 1, "branch": {"kind": "call"}}',
        '{"loop": "B", "pc": "0x1", "iterations": 1, "branch": {"kind": "return"}}',
        '{"loop": "B", "pc": "0x1", "iterations": 2, "branch": {"kind": "call"}}',
    ])
    table = read_alp(path, profile_pcs=None, skip_bad_lines=True)
    assert table.stats.skipped_lines == 1 and table.get(0x1).iterations == 3


# ---------------------------------------------------------------- properties


def reference(records):
    """An independent, plain aggregation of docs/formats.md §2, for the property tests."""
    out = {}
    for r in records:
        pc = int(r["pc"], 16)
        acc = out.setdefault(pc, {"iterations": 0, "stages": {}, "branch": None, "mem": None,
                                  "lat": []})
        acc["iterations"] += r["iterations"]
        for name, value in r.get("stages", {}).items():
            acc["stages"].setdefault(name, []).append((value, r["iterations"]))
        for block, keys in (("branch", ("executed", "taken", "mispredicted")),
                            ("mem", ("accesses", "l1d_miss"))):
            if block in r:
                acc[block] = acc[block] or {k: None for k in keys}
                for k in keys:
                    if k in r[block]:
                        acc[block][k] = (acc[block][k] or 0) + r[block][k]
        if "mem" in r and "avg_latency" in r["mem"]:
            acc["lat"].append((r["mem"]["avg_latency"], r["mem"].get("accesses", 0)))
    return out


def weighted(pairs):
    total = sum(w for _, w in pairs)
    if total == 0:
        return sum(v for v, _ in pairs) / len(pairs)
    return sum(v * w for v, w in pairs) / total


def lawful(record):
    """A drawn record made to keep docs/formats.md §2's rules between fields: canonical stage
    times non-decreasing in pipeline order, taken and mispredicted at most executed,
    misses at most accesses."""
    out = dict(record)
    if "stages" in out:
        canonical = sorted(v for k, v in out["stages"].items() if k in STAGES)
        ordered = iter(canonical)
        out["stages"] = {k: (next(ordered) if k in STAGES else v)
                         for k, v in sorted(out["stages"].items(),
                                            key=lambda kv: STAGES.index(kv[0])
                                            if kv[0] in STAGES else len(STAGES))}
    for block, total, parts in (("branch", "executed", ("taken", "mispredicted")),
                                ("mem", "accesses", ("l1d_miss",))):
        if block in out and total in out[block]:
            out[block] = dict(out[block])
            for k in parts:
                if k in out[block]:
                    out[block][k] = min(out[block][k], out[block][total])
    return out


record_strategy = st.fixed_dictionaries(
    {"pc": st.sampled_from(["0x100", "0x104", "0x108", "0x10c"]),
     "iterations": st.integers(0, 10**6)},
    optional={
        "stages": st.dictionaries(st.sampled_from(list(STAGES) + ["x_stage"]),
                                  st.floats(0, 1000, allow_nan=False), max_size=4),
        "mem": st.fixed_dictionaries(
            {"kind": st.just("load")},
            optional={"accesses": st.integers(0, 10**6), "l1d_miss": st.integers(0, 10**5),
                      "avg_latency": st.floats(0, 500, allow_nan=False)}),
        "branch": st.fixed_dictionaries(
            {"kind": st.just("conditional")},
            optional={"executed": st.integers(0, 10**6), "taken": st.integers(0, 10**6),
                      "mispredicted": st.integers(0, 10**6)}),
    }).map(lawful)


def with_loops(records):
    return [dict(r, loop=f"L{i}") for i, r in enumerate(records)]


def check_against_reference(table, records):
    ref = reference(records)
    assert sorted(table.records) == sorted(ref)
    for pc, want in ref.items():
        got = table.get(pc)
        assert got.iterations == want["iterations"]
        assert set(got.stages) == set(want["stages"])
        for name, pairs in want["stages"].items():
            assert got.stages[name] == pytest.approx(weighted(pairs), rel=1e-9, abs=1e-9)
            values = [v for v, _ in pairs]
            assert min(values) - 1e-9 <= got.stages[name] <= max(values) + 1e-9
        for block in ("branch", "mem"):
            if want[block] is None:
                assert getattr(got, block) is None
                continue
            for k, v in want[block].items():
                assert getattr(getattr(got, block), k) == v
        lat = got.mem.avg_latency if got.mem else None
        if want["lat"]:
            assert lat == pytest.approx(weighted(want["lat"]), rel=1e-9, abs=1e-9)
        else:
            assert lat is None


@settings(max_examples=60, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(record_strategy, max_size=25), batch=st.integers(1, 7),
       seed=st.integers(0, 2**16))
def test_matches_reference_and_is_order_invariant(tmp_path, monkeypatch, records, batch, seed):
    monkeypatch.setattr(alp_reader, "_BATCH", batch)
    monkeypatch.setattr(alp_columns, "_CHUNK", batch)
    records = with_loops(records)
    table = read_alp(write_records(tmp_path / "a.jsonl", records), profile_pcs=None)
    check_against_reference(table, records)
    assert list(table.records.values()) == [table.records[pc] for pc in table.records]
    for pc in table.records:   # raw records: file order, exact text, line numbers
        mine = [(n + 1, r) for n, r in enumerate(records) if int(r["pc"], 16) == pc]
        assert [(r.line, r.raw) for r in table.per_loop[pc]] == mine
    shuffled = records[:]
    random.Random(seed).shuffle(shuffled)
    again = read_alp(write_records(tmp_path / "b.jsonl", shuffled), profile_pcs=None)
    for pc, rec in table.records.items():
        other = again.get(pc)
        assert other.iterations == rec.iterations and other.loops == rec.loops
        for name, value in rec.stages.items():
            assert other.stages[name] == pytest.approx(value, rel=1e-9, abs=1e-9)


weighty_record = st.fixed_dictionaries(
    {"pc": st.sampled_from(["0x100", "0x104", "0x108"]), "iterations": st.integers(1, 10**6),
     "stages": st.dictionaries(st.sampled_from(STAGES), st.floats(0, 1000, allow_nan=False),
                               max_size=4)},
    optional={
        "mem": st.fixed_dictionaries(
            {"kind": st.just("store"), "accesses": st.integers(1, 10**6),
             "l1d_miss": st.integers(0, 10**5)},
            optional={"avg_latency": st.floats(0, 500, allow_nan=False)}),
        "branch": st.fixed_dictionaries(
            {"kind": st.just("call"), "executed": st.integers(0, 10**6),
             "mispredicted": st.integers(0, 10**6)}),
    }).map(lawful)


@settings(max_examples=40, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(records=st.lists(weighty_record, min_size=1, max_size=12), data=st.data())
def test_splitting_a_loop_changes_nothing(tmp_path, records, data):
    """One loop's record split in two loops, iterations and counts divided between them and
    the same averages, aggregates to the same figures (all weights here are positive)."""
    records = with_loops(records)
    i = data.draw(st.integers(0, len(records) - 1))
    whole = records[i]
    halves = [dict(whole, loop=whole["loop"] + "a"), dict(whole, loop=whole["loop"] + "b")]
    cut = data.draw(st.integers(0, whole["iterations"]))
    halves[0]["iterations"], halves[1]["iterations"] = cut, whole["iterations"] - cut
    for block, total in (("mem", "accesses"), ("branch", "executed")):
        if block in whole:
            halves[0][block], halves[1][block] = dict(whole[block]), dict(whole[block])
            first = data.draw(st.integers(0, whole[block][total]))
            rest = whole[block][total] - first
            for k, v in whole[block].items():
                if isinstance(v, int):
                    # each half keeps part <= total: the first half's share within bounds
                    low, high = (first, first) if k == total else (max(0, v - rest),
                                                                   min(v, first))
                    cut = data.draw(st.integers(low, high))
                    halves[0][block][k], halves[1][block][k] = cut, v - cut
    split = records[:i] + halves + records[i + 1:]
    a = read_alp(write_records(tmp_path / "a.jsonl", records), profile_pcs=None)
    b = read_alp(write_records(tmp_path / "b.jsonl", split), profile_pcs=None)
    assert b.stats.records == a.stats.records + 1
    for pc, rec in a.records.items():
        other = b.get(pc)
        assert other.iterations == rec.iterations
        assert other.stages == pytest.approx(rec.stages, rel=1e-9, abs=1e-9)
        assert other.branch == rec.branch
        if rec.mem is not None:
            assert other.mem.accesses == rec.mem.accesses
            assert other.mem.l1d_miss == rec.mem.l1d_miss
            if rec.mem.avg_latency is None:
                assert other.mem.avg_latency is None
            else:
                assert other.mem.avg_latency == pytest.approx(rec.mem.avg_latency, rel=1e-9)


def test_many_records_match_reference(tmp_path):
    """A few thousand records across many batches and PCs, against the reference."""
    rng = random.Random(7)
    records = []
    for i in range(3000):
        times = iter(sorted(round(rng.uniform(0, 20), 2) for _ in STAGES))
        rec = {"loop": f"L{i // 40}", "pc": f"0x{0x1000 + 4 * ((i * 7) % 400):x}",
               "iterations": rng.randint(0, 1000),
               "stages": {s: t for s, t in zip(STAGES, times, strict=True) if rng.random() < .8}}
        if (i * 7) % 400 % 3 == 0:
            accesses = rng.randint(0, 100)
            rec["mem"] = {"kind": "load", "accesses": accesses,
                          "l1d_miss": rng.randint(0, min(9, accesses)),
                          "avg_latency": rng.uniform(1, 50)}
        records.append(rec)
    seen = set()
    unique = []
    for r in records:   # one record per (loop, pc)
        if (r["loop"], r["pc"]) not in seen:
            seen.add((r["loop"], r["pc"]))
            unique.append(r)
    table = read_alp(write_records(tmp_path / "a.jsonl", unique), profile_pcs=None)
    check_against_reference(table, unique)
    assert not math.isnan(sum(v for r in table.records.values() for v in r.stages.values()))


@pytest.mark.parametrize("batch", [1, 2, 1024])
def test_the_earliest_error_in_the_file_is_reported(tmp_path, monkeypatch, batch):
    monkeypatch.setattr(alp_reader, "_BATCH", batch)
    path = write_lines(tmp_path / "a.jsonl", [
        '{"loop": "A", "pc": "0x1", "iterations": 1}',
        '{"loop": "A", "pc": "1", "iterations": 1}',
        'garbage',
    ])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 2 and "first at line 1" in err.value.what


def test_a_bad_line_before_invalid_utf8_in_the_same_block_is_the_error(tmp_path):
    path = tmp_path / "a.jsonl"
    path.write_bytes(b'{"pc": "0x1", "iterations": 1}\ngarbage\n'
                     b'{"pc": "0x2", "asm": "\xff", "iterations": 1}\n')
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 2 and "UTF-8" not in err.value.what
    with pytest.raises(InputError) as err:   # skipping the bad line, the UTF-8 is next
        read_alp(path, profile_pcs=None, skip_bad_lines=True)
    assert err.value.line == 3 and "UTF-8" in err.value.what


def _every_record(table):
    """Everything a table holds, as plain values (raw records included)."""
    return (table.to_json(rounded=False), table.file_stats,
            {pc: [(r.loop, r.line, r.text) for r in recs] for pc, recs in table.per_loop.items()})


def test_decoding_in_a_second_process_gives_the_same_table(tmp_path, monkeypatch):
    rng = random.Random(5)
    lines = [json.dumps(dict(SAMPLE[i % 2], loop=f"L{i // 2}", iterations=rng.randint(0, 9)))
             for i in range(400)]
    lines[150] = lines[150].replace('"pc": "0x2000"', '"pc": "0X2000"')  # not the usual form
    lines[230] = "   "                                                     # a blank line
    path = write_lines(tmp_path / "a.jsonl.gz", lines, gz=True)
    monkeypatch.setattr(alp_reader, "_BATCH", 16)
    here = read_alp(path, profile_pcs=pcs(0x2004))
    monkeypatch.setattr(alp_blocks, "APART_FROM_BYTES", 0)
    apart = read_alp(path, profile_pcs=pcs(0x2004))
    assert _every_record(apart) == _every_record(here)
    assert here.file_stats.records == 399


def test_errors_found_apart_come_in_file_order_and_stop_the_worker(tmp_path, monkeypatch):
    monkeypatch.setattr(alp_reader, "_BATCH", 16)
    monkeypatch.setattr(alp_blocks, "APART_FROM_BYTES", 0)
    lines = [json.dumps(dict(SAMPLE[0], loop=f"L{i}")) for i in range(2000)]
    lines[1500] = "garbage"
    path = write_lines(tmp_path / "a.jsonl.gz", lines, gz=True)
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert err.value.line == 1501
    assert not multiprocessing.active_children()
    assert read_alp(path, profile_pcs=None, skip_bad_lines=True).file_stats.skipped_lines == 1
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as err:
        read_alp(path, profile_pcs=None)
    assert "gzip" in err.value.what
    with pytest.raises(InputError):
        read_alp(tmp_path / "missing.jsonl", profile_pcs=None)


def _dies(path, size, out):
    os._exit(3)


def test_a_worker_that_dies_is_an_error_naming_the_file(tmp_path, monkeypatch):
    monkeypatch.setattr(alp_blocks, "APART_FROM_BYTES", 0)
    monkeypatch.setattr(alp_blocks, "_send_blocks", _dies)
    path = write_lines(tmp_path / "a.jsonl", [json.dumps(SAMPLE[0])])
    with pytest.raises(PcscopeError) as err:
        read_alp(path, profile_pcs=None)
    assert str(path) in str(err.value) and "exit code 3" in str(err.value)
    assert not multiprocessing.active_children()
