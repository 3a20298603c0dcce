"""What exact counts say about a function no rule speaks for (review 6 item 4): entries,
instructions per entry and its heaviest loop's iterations per entry."""

from __future__ import annotations

from test_loop_shapes import price_loop

from pcscope.core import function_counts
from pcscope.core.readers.profile_csv import read_profile


def profile_of(tmp_path, rows):
    path = tmp_path / "p.csv"
    path.write_text("function,pc,samples,asm\n" + "".join(
        f'f,{hex(0x1000 + 4 * i)},{count},"{asm}"\n' for i, (count, asm) in enumerate(rows)))
    return read_profile(path)


def test_the_heaviest_loop_and_the_cost_per_entry(tmp_path):
    profile = profile_of(tmp_path, price_loop(trips=8, entries=2000))
    counts = function_counts.of(profile, profile.function_rows(0))
    assert counts.entries == 2000 and counts.per_entry == 83  # 2 + 8 × 10 + 1
    assert counts.loop_pc == 0x1008 and counts.iterations == 8
    assert counts.loop_part == 80 / 83
    assert counts.text() == ("entered 2,000 times, 83.0 instructions per entry; its heaviest "
                             "loop (0x1008, 96% of the function) iterates 8.0 times per entry")


def test_straight_line_code_has_no_loop(tmp_path):
    profile = profile_of(tmp_path, [(500, "add x0, x0, #1"), (500, "ret")])
    counts = function_counts.of(profile, profile.function_rows(0))
    assert counts.loop_pc is None and counts.text() == (
        "entered 500 times, 2.0 instructions per entry")


def test_coverage_says_the_counts_where_no_rule_applies(tmp_path):
    from pcscope.core import code_character
    from pcscope.core.engine.coverage import _what

    profile = profile_of(tmp_path, price_loop(trips=8, entries=2000))
    rows = profile.function_rows(0)
    code = code_character.describe((profile.asm(r), float(profile.value[r])) for r in rows)
    assert code.what.endswith(code_character.NO_RULE)
    profile.basis = "executions"
    what = _what(code, profile, rows)
    assert what.startswith("scalar integer code") and "no rule applies" not in what
    assert what.endswith("iterates 8.0 times per entry")
    profile.basis = "samples"  # sampled counts: entries and trips are not counted
    assert _what(code, profile, rows) == code.what
