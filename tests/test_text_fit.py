"""An idea's text is fitted to the contract's length without a silent cut."""

from pcscope.core.backends.advice import _unsaid
from pcscope.core.backends.text_fit import SHORTENED, fit
from pcscope.core.contract.findings import TEXT_MAX

TAIL = "The counts are exact executions, not time; to confirm, measure cycles per call."


def test_short_text_is_unchanged():
    assert fit("A loop.", TAIL) == f"A loop. {TAIL}"
    assert fit("A loop.") == "A loop."


def test_long_list_loses_its_last_items_and_says_so_but_keeps_the_tail():
    items = ", ".join(f"fn_{i} (2× per operation, {i}.5 instructions per call)" for i in range(80))
    text = fit(f"Heaviest: {items}.", TAIL)
    assert len(text) <= TEXT_MAX
    assert text.endswith(TAIL)
    assert SHORTENED in text
    head = text[: text.index(SHORTENED)]
    assert head.endswith("instructions per call)")  # cut between items, not inside one
    assert "fn_0 " in head and "fn_79" not in head


def test_an_over_long_tail_is_cut_rather_than_the_whole_body():
    text = fit("A loop.", "x" * 3000)
    assert len(text) <= TEXT_MAX and text.startswith("A loop.") and text.endswith(SHORTENED)


def test_checks_that_repeat_a_list_of_the_claim_are_not_written_twice():
    claim = "Heaviest: a (1×), b (2×)."
    checks = ["27 functions entered once", "heaviest: a (1×), b (2×)", "other: c"]
    assert _unsaid(checks, claim) == ["27 functions entered once", "other: c"]
