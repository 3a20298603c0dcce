"""Fitting an idea's text into the contract's length without losing what the analyst computed.

A claim leads with the mechanism's evidence and ends with what to measure (sme.md asks every
idea for it); a cut that falls on either removes what the idea rests on. So the later lists
give way first, each from its tail, saying how many items it left out (the claim's first
sentences carry the evidence; later ones add detail: the heaviest callees, the fields stored
on fewer iterations). Only a real list gives way: items of one form, each naming a function,
an instruction or a field with its figures in brackets ("f (2× per operation, …), g (…)"),
or items that differ only in their numbers and code. The clauses of a sentence are not items
("97,200,938 keys, 74,075,364 loop iterations (…)", "…, or another wrapper, … = 445
instructions"): a total, a figure after "=", a note in brackets stay with the sentence. Only
when every list is down to one item is the text cut at its last item or sentence, marked
``SHORTENED``. Whatever gives way comes back in ``Fitted`` for the idea's checks (a list's
left-out items, the cut text): the contract bounds the claim because briefs quote it, while
the report keeps every word.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pcscope.core.contract.findings import TEXT_MAX

SHORTENED = " [… shortened: the rest is in the checks]"
MORE = "and {n} more (in the checks)"
_BOUNDARIES = ("; ", ", ", ". ")
_OPEN, _CLOSE = "([", ")]"
# Words that open a clause continuing a sentence, never an item of a list.
_CONNECTIVES = ("and ", "or ", "with ", "on ", "counted ", "but ", "so ", "which ", "while ")
NAME_WORDS = 4  # words before an item's figures: a name ("`cbz w1, #0x8` at 0x20"), no prose
_NUMBER = re.compile(r"\d[\d,.]*\d|\d")
_TAG = re.compile(r"^\[[^\]]*\] ")  # a label leading the text ("[rule-based] ")


@dataclass(frozen=True)
class Listed:
    """A list the fitting shortened, whole."""

    lead: str  # its clause before the colon ("Heaviest, by the instructions counted here")
    items: str  # the items the claim left out, as the text had them
    sep: str = ", "  # what separates them


@dataclass(frozen=True)
class Fitted:
    text: str
    lists: tuple[Listed, ...] = ()  # the lists it shortened, whole
    cut: str = ""  # the text cut off its end, when shortening the lists was not enough


def fit(body: str, tail: str = "", limit: int = TEXT_MAX) -> Fitted:
    """``body`` then ``tail`` in at most ``limit`` characters. The tail is kept whole; an
    over-long body loses the last items of its lists, the last list first, and then, if
    that is not enough, its last list items or sentences."""
    text = f"{body} {tail}" if tail else body
    if len(text) <= limit:
        return Fitted(text)
    room = limit - (len(tail) + 1 if tail else 0)
    if room < limit // 4:  # the tail itself is too long to keep whole
        return fit(text, "", limit)
    body, lists = _shorten_lists(body, room)
    cut = ""
    if len(body) > room:
        head = _cut(body, room - len(SHORTENED))
        cut = body[len(head):].lstrip(" ,;.")
        body = head.rstrip(" ,;.(") + SHORTENED
    return Fitted(f"{body} {tail}" if tail else body, lists, cut)


def checks_kept(checks: tuple[str, ...] | list[str], claim: Fitted,
                *others: Fitted) -> list[str]:
    """The checks, less the lists the fitted claim states in full ("heaviest: a, b" when it
    lists a, b: a list written twice beside the claim is noise), then what fitting left out
    of the claim and the ``others`` that no kept check states: a list's left-out items, once."""
    kept = [c for c in checks if (listed := _listed(c)) is None or listed not in claim.text]
    for t in (claim, *others):
        kept += [f"{li.lead}, after the claim's: {li.items}" for li in t.lists
                 if not all(any(item in c for c in kept) for item in li.items.split(li.sep))]
        kept += [f"… {t.cut}"] if t.cut else []
    return kept


def _listed(check: str) -> str | None:
    """What a check lists: the text after its first colon outside parentheses ("three-way
    decisions (tested for order: `<`, `==`): `cbz …`" lists "`cbz …`"); None without."""
    found = _boundaries(check, (": ",))
    return check[found[0][0] + 2:] if found else None


def _shorten_lists(body: str, room: int) -> tuple[str, tuple[Listed, ...]]:
    """``body`` with its lists shortened from their tails, the last list first, until it
    fits ``room`` or each list keeps one item; and the shortened lists whole."""
    sentences = _split(body, (". ",))
    lists: list[Listed] = []
    for n in reversed(range(len(sentences))):
        found = _list_of(sentences[n])
        if found is None:
            continue
        lead, sep, items, ending = found
        keep = len(items)
        while keep > 1 and len(". ".join(sentences)) > room:
            keep -= 1
            more = MORE.format(n=len(items) - keep)
            sentences[n] = f"{lead}: {sep.join(items[:keep])}{sep}{more}{ending}"
        if keep < len(items):
            clause = _TAG.sub("", _split(lead, ("; ", ": "))[-1])
            lists.insert(0, Listed(clause, sep.join(items[keep:]), sep))
        if len(". ".join(sentences)) <= room:
            break
    return ". ".join(sentences), tuple(lists)


def _list_of(sentence: str) -> tuple[str, str, list[str], str] | None:
    """The list a sentence ends with, after its last colon: the text before it, the
    separator (semicolons when they part a list, else commas), the items and the sentence's
    full stop if it has one; None without a list of two or more items (``_is_list``)."""
    clauses = _split(sentence, (": ",))
    if len(clauses) < 2:
        return None
    lead, rest = ": ".join(clauses[:-1]), clauses[-1]
    ending = "." if rest.endswith(".") else ""
    rest = rest.removesuffix(ending)
    for sep in ("; ", ", "):
        items = _split(rest, (sep,))
        if len(items) > 1 and _is_list(items):
            return lead, sep, items, ending
    return None


def _is_list(items: list[str]) -> bool:
    """Whether ``items`` are a list's, not a sentence's clauses: none opens with a
    connective or holds a total after "=", and either each is a short name with its figures
    in brackets, or all read the same but for their numbers, code and brackets."""
    forms = [_NUMBER.sub("0", _outside(item)) for item in items]
    if any(item.startswith(_CONNECTIVES) or " = " in form
           for item, form in zip(items, forms, strict=True)):
        return False
    return len(set(forms)) == 1 or all(
        form.endswith("()") and len(form[:-2].split()) <= NAME_WORDS for form in forms)


def _outside(text: str) -> str:
    """``text`` with each bracketed group written "()" and each code span "``"."""
    out, depth, quoted = [], 0, False
    for ch in text:
        if ch == "`":
            quoted = not quoted
            out += [] if depth else ["`"]
        elif not quoted and ch in _OPEN:
            out += [] if depth else ["("]
            depth += 1
        elif not quoted and ch in _CLOSE and depth:
            depth -= 1
            out += [] if depth else [")"]
        elif not depth and not quoted:
            out.append(ch)
    return "".join(out)


def _split(text: str, separators: tuple[str, ...]) -> list[str]:
    """``text`` split at ``separators`` outside parentheses, brackets and backquotes."""
    parts, start = [], 0
    for i, sep in _boundaries(text, separators):
        parts.append(text[start:i])
        start = i + len(sep)
    return [*parts, text[start:]]


def _boundaries(text: str, separators: tuple[str, ...]) -> list[tuple[int, str]]:
    """Where ``separators`` stand between items: outside parentheses, brackets and
    backquotes (a comma in "(2× per operation, 54 instructions per call)", "[x0, #0x10]" or
    "`ldr w1, [x0]`" is not between items)."""
    out: list[tuple[int, str]] = []
    depth, quoted, i = 0, False, 0
    while i < len(text):
        ch = text[i]
        if ch == "`":
            quoted = not quoted
        elif not quoted and ch in _OPEN:
            depth += 1
        elif not quoted and ch in _CLOSE:
            depth = max(0, depth - 1)
        elif depth == 0 and not quoted and \
                (sep := next((s for s in separators if text.startswith(s, i)), None)):
            out.append((i, sep))
            i += len(sep)
            continue
        i += 1
    return out


def _cut(text: str, room: int) -> str:
    """The start of ``text`` up to its last item or sentence boundary within ``room``
    characters; mid-item only when that boundary would lose more than half of it."""
    head = text[:room]
    end = max((i for i, _ in _boundaries(head, _BOUNDARIES)), default=-1)
    return head[:end] if end > room // 2 else head
