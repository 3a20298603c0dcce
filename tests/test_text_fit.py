"""An idea's text is fitted to the contract's length without losing what the analyst found:
later lists give way from their tail with a count, and every word left out of the claim
comes back whole in the idea's checks."""

from pcscope.core.backends.text_fit import MORE, SHORTENED, checks_kept, fit
from pcscope.core.contract.findings import TEXT_MAX

TAIL = "The counts are exact executions, not time; to confirm, measure cycles per call."
BRANCHES = "; ".join(f"`cbz w{i}, #0x10{i}` at 0x20{i} (count {i},000, taken {i}%)"
                     for i in range(4))
EVIDENCE = f"Loops in `f` load a key through each index. It branches on each key: {BRANCHES}."


def heaviest(n: int) -> str:
    return ", ".join(f"fn_{i} (2× per operation, {i}.5 instructions per call)" for i in range(n))


def test_short_text_is_unchanged():
    assert fit("A loop.", TAIL).text == f"A loop. {TAIL}"
    assert fit("A loop.").text == "A loop."
    assert fit("A loop.").lists == () and fit("A loop.").cut == ""


def test_a_later_list_gives_way_from_its_tail_and_the_evidence_stays_whole():
    body = f"{EVIDENCE} Heaviest, by the instructions counted here: {heaviest(80)}. Own share 3%."
    fitted = fit(body, TAIL)
    assert len(fitted.text) <= TEXT_MAX and fitted.text.endswith(TAIL)
    assert SHORTENED not in fitted.text
    assert fitted.text.startswith(EVIDENCE)  # the branch list, every item
    assert "Own share 3%." in fitted.text  # the sentence after the list too
    kept = fitted.text.split("counted here: ")[1].split(", and ")[0]
    left = 80 - len(kept.split(", fn_"))
    assert f", {MORE.format(n=left)}. Own share" in fitted.text
    assert "fn_0 (2× per operation, 0.5 instructions per call)" in kept
    assert "fn_79" not in fitted.text
    # the items left out come back for the checks
    whole = heaviest(80)
    assert [(li.lead, li.items) for li in fitted.lists] == [
        ("Heaviest, by the instructions counted here", whole[whole.index(f"fn_{80 - left} ("):])]


def test_commas_inside_brackets_and_code_are_not_between_items():
    fields = ", ".join(f"[x{i}, #0x{i}0] on {i}% of iterations" for i in range(200))
    fitted = fit(f"A loop keeps state in memory: `ldr w1, [x0, #8]`. Stored on fewer: {fields}.")
    assert len(fitted.text) <= TEXT_MAX
    assert "[x0, #0x00] on 0% of iterations, " in fitted.text
    assert fitted.text.endswith(" more (in the checks).")
    left = fitted.lists[0].items
    assert fields.endswith(f", {left}") and left.startswith("[x") and left.endswith("iterations")


def test_text_without_a_list_is_cut_at_a_sentence_and_the_rest_kept():
    sentences = " ".join(f"Sentence {i} says one thing." for i in range(200))
    fitted = fit(sentences, TAIL)
    assert len(fitted.text) <= TEXT_MAX and fitted.text.endswith(f"thing{SHORTENED} {TAIL}")
    head = fitted.text.removesuffix(f"{SHORTENED} {TAIL}")
    assert f"{head}. {fitted.cut}" == sentences


def test_an_over_long_tail_is_cut_rather_than_the_whole_body():
    fitted = fit("A loop.", "x" * 3000)
    assert len(fitted.text) <= TEXT_MAX and fitted.text.startswith("A loop.")
    assert fitted.text.endswith(SHORTENED)


def test_checks_that_repeat_a_list_of_the_claim_are_not_written_twice():
    claim = fit("Heaviest: a (1×), b (2×). Three-way: `cbz w1, #0x8` then `b.le #0x4`.")
    checks = ["27 functions entered once", "heaviest: a (1×), b (2×)", "other: zz",
              "three-way (tested for order: `<`, `==`): `cbz w1, #0x8` then `b.le #0x4`"]
    assert checks_kept(checks, claim) == ["27 functions entered once", "other: zz"]


def test_text_cut_off_the_claim_is_kept_in_the_checks():
    cut = fit(" ".join(f"Sentence {i} says one thing." for i in range(200)))
    assert checks_kept([], cut) == [f"… {cut.cut}"]


def test_only_the_claim_makes_a_check_redundant():
    """A check the recommendation quotes stays: the checks back the claim."""
    checks = ["the walk already has a step budget: w6 counts down"]
    assert checks_kept(checks, fit("A chain."), fit("Keep the budget: w6 counts down.")) == checks


# Clauses of a sentence that commas separate, as the analyst writes them: none is an item of
# a list, so none gives way (a total after "=", a count and its breakdown, a cross-reference).
CLAUSES = (
    "Loops read indexes and load a key through each (`ldrb w1, [x2, w1, uxtw]`): 97,200,938 "
    "keys, 74,075,364 loop iterations (3 loops by head: 0x20 (9.89%), 0x40 (1.23%)). "
    "The C allocator per operation: 2 malloc + 2 free, with the hidden functions of their "
    "module (2 × f), and the wrappers calling them, or another wrapper, on every entry "
    "(2 × g (14 each), 1 × h (5 each)) = 445 instructions. "
    "A call tree: 52 calls per operation, 31.1 instructions per call — set-up, teardown, "
    "wrappers and lookups around the work (functions over 256 instructions are not counted). "
    "Constant-key lookups per operation: 26.0 by f (2.0× per operation, 8 keys) and g (3.0× "
    "per operation, 5 keys), counted in `mech:libc-routine:0x10`.")


def test_only_a_list_gives_way_never_the_clauses_of_a_sentence():
    fitted = fit(f"Heaviest, by the instructions counted here: {heaviest(80)}. {CLAUSES}", TAIL)
    assert len(fitted.text) <= TEXT_MAX and SHORTENED not in fitted.text
    assert fitted.text.endswith(f"{CLAUSES} {TAIL}")  # every clause, whole
    assert "fn_79" not in fitted.text and [li.lead for li in fitted.lists] == [
        "Heaviest, by the instructions counted here"]


def test_clauses_alone_are_cut_at_a_sentence_not_marked_as_a_list():
    fitted = fit(" ".join([CLAUSES] * 6))
    assert MORE.format(n=1).removeprefix("and 1") not in fitted.text
    assert fitted.text.endswith(SHORTENED)


def test_a_shortened_list_leaves_its_remaining_items_in_the_checks_once():
    body = f"[rule-based] A tree: 3 calls. Heaviest, by the instructions counted here: " \
           f"{heaviest(80)}."
    claim = fit(body)
    kept = claim.text.split("counted here: ")[1].split(", and ")[0].count("fn_")
    rest = heaviest(80).split(", fn_", kept)[-1]
    assert checks_kept(["no prfm in the loop"], claim) == [
        "no prfm in the loop",
        f"Heaviest, by the instructions counted here, after the claim's: fn_{rest}"]
    # a check already naming every left-out item is enough
    assert checks_kept([f"heaviest: {heaviest(80)}"], claim) == [f"heaviest: {heaviest(80)}"]


def test_a_numbers_thousands_separators_are_not_between_items():
    items = [f"`bl #0x{i:x}` run 1,234,{i:03d} times" for i in range(200)]
    fitted = fit(f"Calls of one form: {', '.join(items)}.")
    kept = fitted.text.removeprefix("Calls of one form: ").split(", and ")[0].split(", ")
    assert len(fitted.text) <= TEXT_MAX and 1 < len(kept) < 200
    assert kept == items[:len(kept)]  # every kept item whole, its count too
    assert fitted.lists[0].items == ", ".join(items[len(kept):])
