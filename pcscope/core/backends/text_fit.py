"""Fitting an idea's text into the contract's length without losing what the analyst computed.

A claim leads with the mechanism's evidence and ends with what the numbers cannot tell and
what to measure (sme.md asks every idea for it); a cut that falls on either removes what the
idea rests on. So the later lists give way first, each from its tail, saying how many items
it left out (the claim's first sentences carry the evidence; later ones add detail: the
heaviest callees, the fields stored on fewer iterations). Only when every list is down to
one item is the text cut at its last item or sentence, marked ``SHORTENED``. Whatever gives
way comes back in ``Fitted``, whole, for the idea's checks: the contract bounds the
claim because briefs quote it, while the report keeps every word.
"""

from __future__ import annotations

from dataclasses import dataclass

from pcscope.core.contract.findings import TEXT_MAX

SHORTENED = " [… shortened: the rest is in the checks]"
MORE = "and {n} more (in the checks)"
_BOUNDARIES = ("; ", ", ", ". ")
_OPEN, _CLOSE = "([", ")]"


@dataclass(frozen=True)
class Listed:
    """A list the fitting shortened, whole."""

    lead: str  # its clause before the colon ("Heaviest, by the instructions counted here")
    items: str  # every item, as the text had them


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
    of the claim and the ``others`` that no kept check states."""
    kept = [c for c in checks if (listed := _listed(c)) is None or listed not in claim.text]
    for t in (claim, *others):
        kept += [f"{li.lead}: {li.items}" for li in t.lists
                 if not any(li.items in c for c in kept)]
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
            lists.insert(0, Listed(_split(lead, ("; ", ": "))[-1], sep.join(items)))
        if len(". ".join(sentences)) <= room:
            break
    return ". ".join(sentences), tuple(lists)


def _list_of(sentence: str) -> tuple[str, str, list[str], str] | None:
    """The list a sentence ends with, after its last colon: the text before it, the
    separator (semicolons when there are any, else commas), the items and the sentence's
    full stop if it has one; None without a list of two or more items."""
    clauses = _split(sentence, (": ",))
    if len(clauses) < 2:
        return None
    lead, rest = ": ".join(clauses[:-1]), clauses[-1]
    ending = "." if rest.endswith(".") else ""
    rest = rest.removesuffix(ending)
    for sep in ("; ", ", "):
        items = _split(rest, (sep,))
        if len(items) > 1:
            return lead, sep, items, ending
    return None


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
