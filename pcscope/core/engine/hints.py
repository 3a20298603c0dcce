"""Engineers' prior knowledge: hints attached to a PC, a window or the whole run.

A hint is one line: an optional target (``0x2004``, ``pc:0x2004`` or ``win:0x1000``, then
whitespace or ``:``) and free text. Each becomes ``note:<n>`` evidence, given to the calls
whose slice holds its PC or window (run-wide hints go to every call). Hint files hold one
hint per line; blank lines and ``#`` comments are skipped.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import NoReturn

from pcscope.core.errors import InputError, UsageError
from pcscope.core.evidence import Evidence, EvidenceStore
from pcscope.core.ids import hex_pc, parse_pc
from pcscope.core.textio import open_text_lines

_TARGET = re.compile(r"^\s*(?P<target>(?:pc:|win:)?0[xX][0-9a-fA-F]+)\s*(?::\s*|\s+)(?P<text>\S.*)$")
MAX_TEXT = 1000


@dataclass(frozen=True)
class Hint:
    id: str  # note:<n>
    text: str
    pc: int | None = None  # a PC hint
    window: str | None = None  # a window hint (win:0x…)
    source: str = "--hint"

    @property
    def scope(self) -> str:
        if self.pc is not None:
            return f"pc {hex_pc(self.pc)}"
        return f"window {self.window}" if self.window else "whole run"

    def evidence(self) -> Evidence:
        pcs = (self.pc,) if self.pc is not None else ()
        return Evidence(self.id, "note", f"engineer's note ({self.scope})", self.text, pcs)

    def to_json(self) -> dict:
        return {"id": self.id, "scope": self.scope, "text": self.text, "source": self.source}


@dataclass(frozen=True)
class HintText:
    text: str
    source: str  # "--hint" or "<file>:<line>"
    path: str | None = None
    line: int | None = None


def read_hint_file(path: str) -> list[HintText]:
    out = []
    for number, line in open_text_lines(path):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            out.append(HintText(stripped, f"{path}:{number}", path, number))
    return out


def parse_hints(texts: Iterable[HintText], store: EvidenceStore) -> list[Hint]:
    """Number the hints ``note:1``… in order, check their targets exist, register them."""
    hints = []
    for n, given in enumerate(texts, 1):
        hint = _parse(f"note:{n}", given, store)
        store.register(hint.evidence())
        hints.append(hint)
    return hints


def _parse(note_id: str, given: HintText, store: EvidenceStore) -> Hint:
    text = given.text.strip()
    if len(text) > MAX_TEXT:
        _fail(given, f"hint longer than {MAX_TEXT} characters")
    match = _TARGET.match(text)
    if not match:
        return Hint(note_id, text, source=given.source)
    target, body = match.group("target"), match.group("text").strip()
    kind, _, ref = target.rpartition(":")
    pc = parse_pc(ref)
    if kind == "win":
        window = store.window_by_id(f"win:{hex_pc(pc)}")
        if window is None:
            _fail(given, f"no window {target} in the profile")
        return Hint(note_id, body, window=window.id, source=given.source)
    if store.row(pc) is None:
        _fail(given, f"pc {hex_pc(pc)} is not in the profile")
    return Hint(note_id, body, pc=pc, source=given.source)


def _fail(given: HintText, what: str) -> NoReturn:
    if given.path is not None:
        raise InputError(given.path, given.line, what)
    raise UsageError(f"--hint: {what}")
