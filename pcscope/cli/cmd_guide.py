"""`pcscope guide`: read and search the guides (bundled, or your own with --guide)."""

from __future__ import annotations

import argparse

from pcscope.cli.common import positive_int, print_json
from pcscope.core.errors import UsageError

EPILOG = """\
examples:
  pcscope guide                                    # every section: ID and heading
  pcscope guide guide:uarch/atomics/lse-atomics    # one section, whole
  pcscope guide 'store forwarding'                 # sections by relevance (BM25)
  pcscope guide '"exclusive monitor"' --json       # a phrase; machine-readable

A query is free text: words (stemmed: "forwarding" finds "forwarded"), "phrases",
-word to exclude; headings count double. IDs that a section used to have still resolve."""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "guide",
        help="read a guide section by ID, or search the guides",
        description="Print one guide section (by its guide:… ID), list every section, or "
        "rank sections for a query, each with its best matching fragment.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("what", metavar="ID|QUERY", nargs="?",
                   help="a section ID (guide:<doc>/<section>) or a query; none lists sections")
    p.add_argument("--guide", metavar="FILE", action="append", default=[],
                   help="guide (Markdown, text or PDF) instead of the bundled ones; repeat")
    p.add_argument("--limit", type=positive_int, default=10, metavar="N",
                   help="at most N sections for a query (default 10)")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pcscope.core.readers.guides import read_guide, section_index
    from pcscope.samples import guides as bundled

    paths = args.guide or [str(p) for p in bundled()]
    sections = [s for path in paths for s in read_guide(path)]
    what = (args.what or "").strip()
    if not what:
        rows = [{"id": s.id, "heading": s.heading, "level": s.level} for s in sections]
        if args.json:
            print_json({"sections": rows})
        else:
            for s in sections:
                print(f"{'  ' * max(0, s.level - 1)}{s.id}  {s.heading}")
        return 0
    if what.startswith("guide:"):
        section = section_index(sections).get(what)
        if section is None:
            raise UsageError(f"no guide section {what} (pcscope guide lists them)")
        if args.json:
            print_json({"id": section.id, "doc": section.doc, "heading": section.heading,
                        "path": list(section.path), "line": section.line,
                        "text": section.text})
        else:
            renamed = f" (was {what})" if section.id != what else ""
            print(f"{' › '.join(section.path) or section.heading}\n{section.id}{renamed}\n")
            print(section.text.strip())
        return 0
    from pcscope.index.text import GuideIndex

    matches = GuideIndex.build(sections).search(what, args.limit)
    if args.json:
        print_json({"query": what, "hits": [
            {"id": m.id, "doc": m.doc, "heading": m.heading, "line": m.line,
             "score": round(m.score, 3), "snippet": m.snippet,
             "highlights": [list(span) for span in m.highlights]} for m in matches]})
        return 0
    print(f"{len(matches)} section{'s' if len(matches) != 1 else ''} match {what!r}"
          + (":" if matches else ""))
    for m in matches:
        print(f"  {m.score:6.2f}  {m.id}  {m.heading}")
        print(f"          {marked(m.snippet, m.highlights)}")
    return 0


def marked(snippet: str, spans: tuple[tuple[int, int], ...]) -> str:
    """The fragment on one line with matched words in [brackets] (plain text output)."""
    out, at = [], 0
    for start, end in spans:
        out += [snippet[at:start], "[", snippet[start:end], "]"]
        at = end
    out.append(snippet[at:])
    return " ".join("".join(out).split())
