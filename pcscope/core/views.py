"""What the explorer shows, as Markdown an engineer can paste into a ticket: the hot
windows as listed, or a window's or function's annotated assembly (perf annotate's
columns). Nothing here needs an analysis."""

from __future__ import annotations

from collections.abc import Sequence

from pcscope.core.ids import hex_pc
from pcscope.core.profile import Profile

MAX_ROWS = 2000  # a listing longer than this is cut (and says so)


def hot_windows_markdown(profile: Profile, windows: Sequence[int], title: str) -> str:
    total = len(windows)
    out = [f"# {title}", "", f"{profile.path} · {total:,} windows · counts are {profile.basis}",
           "", f"| # | window | function | module | instructions | {profile.basis} | share |",
           "| ---: | --- | --- | --- | ---: | ---: | ---: |"]
    for rank, w in enumerate(windows[:MAX_ROWS], 1):
        win = profile.windows[w]
        function = profile.function_names[win.function] if win.function >= 0 else ""
        module = profile.modules[win.module] if win.module >= 0 else ""
        out.append(f"| {rank} | `{win.id}` | {_cell(function)} | {_cell(module)} | {win.n:,} | "
                   f"{win.value:,} | {win.weight:.2%} |")
    return "\n".join(out + _cut(total)) + "\n"


def assembly_markdown(profile: Profile, rows: Sequence[int], title: str) -> str:
    """Address-ordered instructions with their counts and share; ``…`` marks a gap
    (addresses that skip, i.e. code never counted)."""
    total = sum(int(profile.value[r]) for r in rows)
    out = [f"# {title}", "",
           f"{profile.path} · {len(rows):,} instructions · {total:,} {profile.basis} "
           f"({total / profile.total if profile.total else 0:.2%} of the total)", "",
           "```", f"{'pc':>14}  {profile.basis:>12}  {'share':>7}  asm"]
    previous = None
    for r in list(rows)[:MAX_ROWS]:
        pc = int(profile.pc[r])
        if previous is not None and pc - previous > 4:
            out.append(f"{'…':>14}  {pc - previous - 4:,} bytes not in the profile")
        out.append(f"{hex_pc(pc):>14}  {int(profile.value[r]):>12,}  {profile.share(r):7.2%}  "
                   f"{profile.asm(r)}")
        previous = pc
    out.append("```")
    return "\n".join(out + _cut(len(rows))) + "\n"


def _cut(total: int) -> list[str]:
    return ["", f"(first {MAX_ROWS:,} of {total:,} shown)"] if total > MAX_ROWS else []


def _cell(text: str) -> str:
    return text.replace("|", "\\|")
