"""The compact evidence rendering loses nothing: every figure is read back from the text."""

from __future__ import annotations

import math

import pytest

from pcscope.core.alp import AlpRecord, BranchStats, MemStats, round_sig
from pcscope.core.engine import evidence_text as et
from pcscope.core.engine.system_prompt import SYSTEM
from pcscope.index.store import open_workload
from pcscope.samples import bundled

KINDS = {v: k for k, v in et.BRANCH_KINDS.items()}
MEM_LABELS = {label: count for count, label in et.MEM_RATES}


def parse(text: str) -> dict:
    """The figures of one ALP part, read back as a model would read them (LEGEND)."""
    out: dict = {}
    for field in text.split("  "):
        if field in KINDS:
            out["branch"] = KINDS[field]
        elif field in ("load", "store", "atomic", "prefetch"):
            out["mem"] = field
        elif field.endswith("%"):
            label, value = field.rsplit(" ", 1)
            out[MEM_LABELS.get(label, label)] = float(value[:-1]) / 100
        elif field.endswith("c"):
            label, value = field.split(" ")
            out[label] = float(value[:-1])
        else:
            label, value = field.split(" ")
            out[label] = int(value)
    return out


def same(shown: float | None, exact: float | None) -> bool:
    """A shown figure is the exact one to 3 significant digits; absent means 0 or none."""
    if shown is None:
        return not exact
    return exact is not None and math.isclose(shown, round_sig(exact), rel_tol=1e-9)


def check_lossless(record: AlpRecord, text: str) -> None:
    got = parse(text)
    assert got["n"] == record.iterations
    for label, exact in (("iw", record.issue_wait), ("ex", record.execute_latency),
                         ("rw", record.retire_wait)):
        if label in got or exact is None:
            assert same(got.get(label), exact), (label, text)
        else:  # a wait at the pipeline's minimum is left out
            assert round_sig(exact) <= et.MIN_WAIT, (label, text)
    branch = record.branch
    assert got.get("branch") == (branch.kind if branch else None), text
    if branch is not None:
        assert got.get("brn", record.iterations) == branch.executed
        assert same(got.get("mispred"), branch.mispredict_rate), text
        if branch.kind == "conditional":
            assert same(got.get("taken"), branch.taken_rate), text
    mem = record.mem
    assert got.get("mem") == (mem.kind if mem else None), text
    if mem is not None:
        assert got.get("acc", record.iterations) == mem.accesses
        for count, _label in et.MEM_RATES:
            exact = getattr(mem, count)
            rate = exact / mem.accesses if exact is not None and mem.accesses else None
            assert same(got.get(count), rate), (count, text)
        assert same(got.get("lat"), mem.avg_latency), text


def record(**overrides) -> AlpRecord:
    base = dict(pc=0x2004, asm="blr x3", iterations=120000, loops=["L1"],
                stages={"fetch": 0.0, "dispatch": 3.0, "issue": 13.44, "complete": 16.0,
                        "retire": 16.0},
                branch=BranchStats("indirect_call", 120000, 120000, 27612), mem=None,
                matched=True)
    return AlpRecord(**{**base, **overrides})


def test_a_record_renders_inline_with_units_and_only_informative_figures():
    text = et.alp_text(record())
    assert text == "n 120000  iw 10.4c  ex 2.56c  blr  mispred 23%"  # retire wait 0: left out
    check_lossless(record(), text)


def test_memory_figures_and_counts_that_differ_from_n():
    mem = MemStats("load", 5000, 3100, 400, 0, 12, 0, 74.2)
    rec = record(branch=None, mem=mem, iterations=4000)
    text = et.alp_text(rec)
    assert text == ("n 4000  iw 10.4c  ex 2.56c  load  acc 5000  L1D miss 62%  L2 miss 8%  "
                    "TLB miss 0.24%  lat 74.2c")
    check_lossless(rec, text)


def test_every_alp_figure_of_a_bundled_sample_reads_back_from_the_text(tmp_path):
    sample = bundled("B")
    workload = open_workload(sample.profile, alp=sample.alp, index_dir=tmp_path / "idx")
    records = list(workload.alp.records.values())
    assert len(records) > 100
    kinds = set()
    for rec in records:
        check_lossless(rec, et.alp_text(rec))
        kinds.add(rec.branch.kind if rec.branch else rec.mem.kind if rec.mem else "plain")
    assert {"conditional", "load"} <= kinds  # both blocks were exercised


def test_n_is_not_repeated_from_the_line_right_above():
    same_n = [et.Shown(0x1000 + 4 * i, "nop", 0.01, (), record(), "fn:a") for i in range(2)]
    other = et.Shown(0x1010, "nop", 0.01, (), record(iterations=7), "fn:a")
    lines = et.instruction_lines([*same_n, other], "cycles", "fn:a")
    assert lines[0].endswith("| n 120000  iw 10.4c  ex 2.56c  blr  mispred 23%")
    assert lines[1].endswith("| iw 10.4c  ex 2.56c  blr  mispred 23%")
    assert lines[2] == "~ 2" and lines[3].endswith("| n 7  iw 10.4c  ex 2.56c  blr  brn 120000  "
                                                  "mispred 23%")


def test_gap_and_function_boundary_markers():
    def shown(pc: int, fn: str) -> et.Shown:
        return et.Shown(pc, "nop", 0.01, (), None, fn)

    lines = et.instruction_lines([shown(0x1000, "fn:a"), shown(0x1004, "fn:a"),
                                  shown(0x1010, "fn:a"), shown(0x1014, "fn:b")],
                                 "cycles", "fn:a")
    assert lines == ["pc:0x1000  nop  1%cyc", "pc:0x1004  nop  1%cyc", "~ 2",
                     "pc:0x1010  nop  1%cyc", "-- fn:b", "pc:0x1014  nop  1%cyc"]


def test_a_pattern_hit_and_its_alp_figures_sit_on_the_instructions_line():
    item = et.Shown(0x2004, "blr x3", 0.0512, ("indirect-branch",), record(), "fn:f")
    assert et.instruction_line(item, "samples") == (
        "pc:0x2004  blr x3  5.12%smp  pat:indirect-branch:0x2004  | n 120000  iw 10.4c  "
        "ex 2.56c  blr  mispred 23%")


SECTION = ("**What it is.** An indirect branch jumps to an address held in a register. "
           "Predictors keep a target per history. " + "Filler sentence here. " * 60 +
           "**How it shows.** High mispredict rate. **What to try.** Devirtualize the hot "
           "call site. Sort the dispatch table by frequency.")


def test_a_long_guide_section_is_cut_at_a_sentence_and_keeps_what_to_try():
    text = et.guide_excerpt(SECTION, cap=400)
    assert len(text) <= 400
    assert text.endswith("Sort the dispatch table by frequency.")
    head, _, tail = text.partition(" … ")
    assert head.endswith(".") and tail.startswith("**What to try.**")
    assert et.guide_excerpt("Short. Whole.", cap=400) == "Short. Whole."


@pytest.mark.parametrize("path", sorted(p.name for p in bundled().guides))
def test_bundled_leaf_sections_come_whole_or_cut_keeping_what_to_try(path):
    from pcscope.core.readers.guides import read_guide

    leaves = [s for s in read_guide([p for p in bundled().guides if p.name == path][0])
              if s.text.count(et.TRY) == 1]
    assert len(leaves) > 20
    whole = 0
    for section in leaves:
        flat = " ".join(section.text.split())
        text = et.guide_excerpt(section.text)
        if len(flat) <= et.GUIDE_CAP:
            assert text == flat
            whole += 1
        else:
            assert len(text) <= et.GUIDE_CAP and " … **What to try" in text
            assert text.endswith(flat[-40:])  # "What to try" is kept to its end
    assert whole >= 0.8 * len(leaves)


def test_the_legend_is_in_the_stable_system_text():
    assert et.LEGEND in SYSTEM
    for word in ("iw", "mispred", "L1D", "lat", "%cyc", "%smp", "~ N", "-- fn:"):
        assert word in et.LEGEND
