"""Order, sort and filters of the hot-windows pane, and the small text renderings."""

from __future__ import annotations

import pytest
from tui_data import COLD_WINDOWS, HOT_ORDER, HOT_ROWS, write_inputs

from pcscope.core.readers.profile_csv import read_profile
from pcscope.tui import render
from pcscope.tui.history import History
from pcscope.tui.hot_model import HotModel, HotView


@pytest.fixture(scope="module")
def profile(tmp_path_factory):
    inputs = write_inputs(tmp_path_factory.mktemp("hot"))
    return read_profile(inputs.profile)


def names(model: HotModel) -> list[str]:
    p = model.profile
    return [p.function_names[p.windows[model.window_at(i)].function] for i in range(len(model))]


def test_hottest_first_then_lower_pc(profile) -> None:
    model = HotModel(profile, [])
    assert len(model) == 4 + COLD_WINDOWS
    assert names(model)[:5] == [*HOT_ORDER, "cold_000"]  # equal cold weights: lower PC first


def test_sorts(profile) -> None:
    model = HotModel(profile, [])
    model.apply(HotView(sort="pc"))
    firsts = [profile.windows[model.window_at(i)].first_pc for i in range(len(model))]
    assert firsts == sorted(firsts) and firsts[0] == 0x1000
    model.apply(HotView(sort="function"))
    assert names(model)[:3] == ["<unknown_01>", "cold_000", "cold_001"]  # byte order of names
    model.apply(HotView(sort="size"))
    assert names(model)[:2] == ["main_loop", "<unknown_01>"]  # 5 rows, then 4 (lower pc)


def test_text_filter_matches_function_and_pc(profile) -> None:
    model = HotModel(profile, [])
    model.apply(HotView(text="DISPATCH"))
    assert names(model) == ["runtime_dispatch"]
    model.apply(HotView(text="0x300c"))  # inside <unknown_01>'s range
    assert names(model) == ["<unknown_01>"]
    model.apply(HotView(text="cold_01"))
    assert len(model) == 10
    model.apply(HotView())
    assert len(model) == 4 + COLD_WINDOWS


def test_selection_marks_follow_the_hot_selection(profile) -> None:
    selection = profile.hot_windows(coverage=0.9)
    model = HotModel(profile, selection.windows)
    total = sum(r[3] for r in HOT_ROWS) + COLD_WINDOWS * 30
    # w1 19000, w2 12500, w3 9500 -> 41000 / 47400 < 0.9; w4 (2800) crosses it.
    assert total == 47400
    assert int(model.in_selection.sum()) == 4
    assert names(model)[:4] == HOT_ORDER and all(model.in_selection[model.shown[:4]])


def test_bar_and_share_rendering() -> None:
    assert render.bar(1.0, 4) == "████"
    assert render.bar(0.5, 4) == "██  "
    assert render.bar(0.0625, 2) == "▏ "
    assert render.share(0.4008) == "40.08%"
    assert render.count(950) == "950" and render.count(12_345) == "12.3k"
    assert render.count(None) == "-" and render.rate(0.25) == "25.0%"


def test_history_is_browser_like() -> None:
    h = History()
    h.visit(1)      # 1 -> 2
    h.visit(2)      # 2 -> 3
    assert h.back(3) == 2 and h.back(2) == 1 and h.back(1) is None
    assert h.forward(1) == 2
    h.visit(2)      # a new place drops forward
    assert h.forward(5) is None


def test_hot_model_never_builds_all_windows(profile, monkeypatch) -> None:
    """Sorting and filtering use the arrays; Window objects are built only for shown rows."""
    built = []
    table = type(profile.windows)
    original = table.__getitem__
    monkeypatch.setattr(table, "__getitem__", lambda self, i: built.append(i) or original(self, i))
    model = HotModel(profile, [])
    for view in (HotView(sort="pc"), HotView(sort="function"), HotView(text="cold")):
        model.apply(view)
    assert built == []
