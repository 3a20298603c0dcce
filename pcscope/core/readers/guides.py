"""Guide readers (formats.md §3): Markdown, plain text and (when pypdf is installed) PDF,
each cut into sections with stable IDs ``guide:<doc>/<slug>/<slug>…``.

Markdown: each ATX heading of level 1-3 (``#``, ``##``, ``###``) starts a section whose
text runs to the next heading of the same or a higher level, so a parent's text holds its
subsections (heading lines included); deeper headings (``####``…) stay in the text.
Headings inside fenced code blocks are text. Setext (underlined) headings are not
recognised. Text before the first heading, when not blank, is a section of its own
with ID ``guide:<doc>`` and level 0.

IDs: ``<doc>`` is the slugified file stem (``.gz`` and the format suffix removed); the
rest is the slugified heading path. A path seen before in the same file gets ``-2``,
``-3``… on its last part, in order of appearance (its subsections inherit the suffixed
part), so an ID changes only when a same-named section is added or removed before it —
never when text changes. Any other extension than ``.txt`` or ``.pdf`` reads as Markdown.

Former IDs (Markdown only): a line ``<!-- former IDs: guide:<doc>/old/path, … -->`` in a
section's own text (before its first subsection) lists IDs the section answered to before
its heading was renamed or moved, so evidence cited by stored sessions still resolves.
The line is left out of the section's text. A former ID that is also a section's ID, or
names another file's doc, or appears twice, is an input error.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pcscope.core.errors import InputError
from pcscope.core.textio import open_text_lines

MAX_SECTION_LEVEL = 3

_ATX = re.compile(r"^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$")
_FENCE = re.compile(r"^ {0,3}(`{3,}|~{3,})")
_LINK = re.compile(r"!?\[([^\]]*)\]\([^)]*\)")
_NON_SLUG = re.compile(r"[^a-z0-9]+")
_FORMER = re.compile(r"^ {0,3}<!--\s*former ids?:(.*?)-->\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class GuideSection:
    id: str                    # "guide:<doc>/<slug path>"
    doc: str                   # slugified file stem
    heading: str               # heading text as written (markup kept)
    path: tuple[str, ...]      # headings from the outermost section down to this one
    level: int                 # 1-3 (0: text before the first heading)
    text: str                  # body without the heading line; blank edges trimmed
    line: int                  # 1-based line of the heading (PDF: page number)
    aliases: tuple[str, ...] = ()  # former IDs that resolve to this section


def section_index(sections: Iterable[GuideSection]) -> dict[str, GuideSection]:
    """Every section by its ID and by each of its former IDs."""
    index: dict[str, GuideSection] = {}
    for section in sections:
        index[section.id] = section
        for alias in section.aliases:
            index.setdefault(alias, section)
    return index


def slugify(heading: str) -> str:
    """Lower case; links reduced to their text; every run of characters other than
    ``a-z0-9`` becomes one ``-``, none at either end (IDs stay ASCII). ``Indirect
    Branches (BLR)`` -> ``indirect-branches-blr``. A heading with none of those
    characters slugs to ``section``."""
    text = _LINK.sub(r"\1", heading).lower()
    return _NON_SLUG.sub("-", text).strip("-") or "section"


def _unzipped_name(path: str | os.PathLike) -> Path:
    name = Path(path).name
    return Path(name[:-3] if name.lower().endswith(".gz") else name)


def doc_name(path: str | os.PathLike) -> str:
    """``guides/Neoverse N1.md.gz`` -> ``neoverse-n1``."""
    return slugify(_unzipped_name(path).stem)


def read_guide(path: str | os.PathLike) -> list[GuideSection]:
    """The sections of one guide file, in document order."""
    name = _unzipped_name(path)
    kind = name.suffix.lower()
    if kind == ".pdf":
        return _read_pdf(path)
    lines = []
    for number, text in open_text_lines(path):
        if "\x00" in text:
            raise InputError(str(path), number, "NUL byte: a binary file, not a Markdown or "
                             "text guide")
        lines.append(text)
    sections = (_text_sections(doc_name(path), lines) if kind == ".txt"
                else _markdown_sections(doc_name(path), name.stem, lines, str(path)))
    if not sections:
        raise InputError(str(path), None, "empty guide: no text to cite")
    return sections


class _Ids:
    """Unique IDs within one file: a repeated slug path gets -2, -3… on its last part."""

    def __init__(self, doc: str) -> None:
        self.doc = doc
        self.used: set[str] = set()

    def claim(self, parents: tuple[str, ...], slug: str) -> tuple[str, str]:
        """The unique last slug and the full ID."""
        base, n = slug, 1
        while True:
            ident = f"guide:{self.doc}/" + "/".join(parents + (slug,))
            if ident not in self.used:
                self.used.add(ident)
                return slug, ident
            n += 1
            slug = f"{base}-{n}"


def _trimmed(lines: Iterable[str]) -> str:
    """The lines joined, without blank lines at either end."""
    kept = list(lines)
    while kept and not kept[-1].strip():
        kept.pop()
    start = next((i for i, line in enumerate(kept) if line.strip()), len(kept))
    return "\n".join(kept[start:])


def _outside_fences(lines: list[str]) -> list[int]:
    """Indexes of the lines that are not inside (or opening/closing) fenced code."""
    found = []
    fence: str | None = None
    for i, line in enumerate(lines):
        if fence is not None:
            stripped = line.strip()
            if stripped.startswith(fence) and set(stripped) == {fence[0]}:
                fence = None
            continue
        opening = _FENCE.match(line)
        if opening:
            fence = opening.group(1)
            continue
        found.append(i)
    return found


def _headings(lines: list[str], outside: list[int]) -> list[tuple[int, int, str]]:
    """(index, level, heading) of the level 1-3 headings outside fenced code."""
    found = []
    for i in outside:
        m = _ATX.match(lines[i])
        if m and len(m.group(1)) <= MAX_SECTION_LEVEL:
            found.append((i, len(m.group(1)), (m.group(2) or "").strip()))
    return found


def _former_ids(lines: list[str], outside: list[int]) -> dict[int, tuple[str, ...]]:
    """The former-ID lines outside fenced code: line index -> the IDs it lists."""
    found = {}
    for i in outside:
        m = _FORMER.match(lines[i])
        if m:
            found[i] = tuple(part.strip() for part in m.group(1).split(",") if part.strip())
    return found


def _check_aliases(doc: str, path: str, sections: list[GuideSection],
                   lines_of: dict[str, int]) -> None:
    ids = {s.id for s in sections}
    seen: set[str] = set()
    for section in sections:
        for alias in section.aliases:
            line = lines_of[alias]
            if not alias.startswith(f"guide:{doc}/"):
                raise InputError(path, line, f"former ID {alias} is not of this guide "
                                             f"(guide:{doc}/…)")
            if alias in ids:
                raise InputError(path, line, f"former ID {alias} is also a section's ID")
            if alias in seen:
                raise InputError(path, line, f"former ID {alias} is listed twice")
            seen.add(alias)


def _markdown_sections(doc: str, title: str, lines: list[str], path: str) -> list[GuideSection]:
    outside = _outside_fences(lines)
    heads = _headings(lines, outside)
    former = _former_ids(lines, outside)
    sections = []
    first = heads[0][0] if heads else len(lines)

    def text(start: int, end: int) -> str:
        return _trimmed(lines[k] for k in range(start, end) if k not in former)

    preamble = text(0, first)
    if preamble:
        line = next(i for i, content in enumerate(lines) if content.strip()) + 1
        sections.append(GuideSection(f"guide:{doc}", doc, title, (), 0, preamble, line))
    ids = _Ids(doc)
    stack: list[tuple[int, str, str]] = []          # (level, slug, heading) of open parents
    alias_lines: dict[str, int] = {}
    for n, (i, level, heading) in enumerate(heads):
        while stack and stack[-1][0] >= level:
            stack.pop()
        end = next((j for j, lv, _ in heads[n + 1:] if lv <= level), len(lines))
        own_end = heads[n + 1][0] if n + 1 < len(heads) else len(lines)
        own = [(alias, k + 1) for k in sorted(former) if i < k < own_end for alias in former[k]]
        alias_lines.update(own)
        aliases = tuple(alias for alias, _ in own)
        slug, ident = ids.claim(tuple(s for _, s, _ in stack), slugify(heading))
        heading_path = tuple(h for _, _, h in stack) + (heading,)
        sections.append(GuideSection(ident, doc, heading, heading_path, level,
                                     text(i + 1, end), i + 1, aliases))
        stack.append((level, slug, heading))
    _check_aliases(doc, path, sections, alias_lines)
    return sections


def _text_sections(doc: str, lines: list[str]) -> list[GuideSection]:
    """One section per blank-line-separated block; its first line is the title."""
    sections = []
    ids = _Ids(doc)
    block: list[tuple[int, str]] = []
    for i, line in enumerate(lines + [""]):
        if line.strip():
            block.append((i + 1, line))
            continue
        if block:
            title = block[0][1].strip()
            _, ident = ids.claim((), slugify(title))
            sections.append(GuideSection(ident, doc, title, (title,), 1,
                                         _trimmed(text for _, text in block[1:]), block[0][0]))
            block = []
    return sections


def _read_pdf(path: str | os.PathLike) -> list[GuideSection]:
    """One section per outline entry (its pages up to the next entry's), else per page."""
    try:
        from pypdf import PdfReader
    except ImportError:
        raise InputError(str(path), None, "reading a PDF guide needs the pypdf package "
                                          "(pip install pypdf); or convert it to Markdown "
                                          "or text") from None
    try:
        reader = PdfReader(str(path))
        pages = [page.extract_text() or "" for page in reader.pages]
        entries = list(_outline(reader, reader.outline, ()))
    except Exception as exc:  # pypdf raises many types for damaged files
        raise InputError(str(path), None, f"unreadable PDF ({exc})") from None
    doc = doc_name(path)
    ids = _Ids(doc)
    if not entries:
        entries = [((f"Page {n + 1}",), n) for n in range(len(pages))]
    sections = []
    slugs: dict[tuple[str, ...], str] = {}
    for k, (path_titles, start) in enumerate(entries):
        later = [p for _, p in entries[k + 1:] if p > start]
        end = later[0] if later else len(pages)
        parents = tuple(slugs[path_titles[:d]] for d in range(1, len(path_titles)))
        slug, ident = ids.claim(parents, slugify(path_titles[-1]))
        slugs[path_titles] = slug
        sections.append(GuideSection(ident, doc, path_titles[-1], path_titles,
                                     len(path_titles), _trimmed(pages[start:end]), start + 1))
    return sections


def _outline(reader, items: list, parents: tuple[str, ...]):
    """(title path, 0-based page) of each outline entry, depth first. In pypdf's outline a
    nested list holds the children of the entry before it."""
    last: tuple[str, ...] | None = None
    for item in items:
        if isinstance(item, list):
            yield from _outline(reader, item, last or parents)
            continue
        last = parents + (str(item.title),)
        yield last, reader.get_destination_page_number(item)
