"""Views exported without an analysis: the hot list and annotated assembly as Markdown."""

from __future__ import annotations

from pcscope.core.views import assembly_markdown, hot_windows_markdown
from pcscope.index.store import open_workload

CSV = """function,window,pc,samples,asm
f,w,0x100,10,"ldr x0, [x1]"
f,w,0x104,30,"add x0, x0, #1"
f,w,0x120,60,b.ne 0x100
g,,0x200,5,ret
"""


def test_annotated_assembly_marks_gaps_and_names_the_unit(tmp_path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(CSV, encoding="utf-8")
    profile = open_workload(path, index_dir=tmp_path / "idx").profile
    window = profile.windows[int(profile.window[profile.row_of(0x100)])]
    text = assembly_markdown(profile, list(profile.window_rows(window.index)), "f · w")
    lines = text.splitlines()
    assert lines[0] == "# f · w"
    assert "3 instructions · 100 samples (95.24% of the total)" in lines[2]
    body = lines[lines.index("```") + 1:]
    assert body[0].split() == ["pc", "samples", "share", "asm"]
    assert body[3].split()[:2] == ["…", "24"]  # 0x108..0x11f never counted
    assert body[4].split()[:3] == ["0x120", "60", "57.14%"]


def test_hot_windows_as_listed(tmp_path) -> None:
    path = tmp_path / "p.csv"
    path.write_text(CSV, encoding="utf-8")
    profile = open_workload(path, index_dir=tmp_path / "idx").profile
    order = [int(w) for w in profile.windows_by_weight()]
    text = hot_windows_markdown(profile, order, "Hot windows")
    assert "| 1 | `win:0x100` | f |" in text and "| 95.24% |" in text
    assert text.index("win:0x100") < text.index("win:0x200")
