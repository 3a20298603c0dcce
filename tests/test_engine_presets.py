"""Presets (bundled and the engineer's own), hints as note: evidence, tool bounds."""

from __future__ import annotations

import asyncio

import pytest
from engine_helpers import mini_workload

from pcscope.core.engine.hints import HintText, parse_hints, read_hint_file
from pcscope.core.engine.presets import BUNDLED, load_preset, resolve
from pcscope.core.engine.tools import SharedMemory, ToolBox, tool_specs
from pcscope.core.errors import InputError, UsageError
from pcscope.core.evidence import EvidenceStore


@pytest.mark.parametrize("name", ["quick", "standard", "deep"])
def test_bundled_presets_load_and_differ_in_reach(name):
    settings = load_preset(name)
    assert settings.preset == name
    assert (BUNDLED / f"{name}.toml").is_file()


def test_reach_grows_from_quick_to_deep():
    quick, standard, deep = (load_preset(n) for n in ("quick", "standard", "deep"))
    assert quick.depth < standard.depth < deep.depth
    assert quick.coverage < standard.coverage < deep.coverage
    assert quick.max_calls < standard.max_calls < deep.max_calls


def test_explicit_values_override_a_preset_and_none_keeps_it():
    settings = resolve("quick", {"depth": 4, "coverage": None, "focus": ["barrier"]})
    assert settings.depth == 4 and settings.coverage == 0.5 and settings.focus == ("barrier",)


def test_an_engineers_own_preset_wins_over_a_bundled_one(tmp_path):
    (tmp_path / "standard.toml").write_text('coverage = 0.7\nguides = ["g/uarch.md"]\n')
    (tmp_path / "mine.toml").write_text("depth = 5\nfocus = ['division']\n")
    assert load_preset("standard", tmp_path).coverage == 0.7
    assert load_preset("standard", tmp_path).guides == (str(tmp_path / "g" / "uarch.md"),)
    assert load_preset("mine", tmp_path).depth == 5


def test_bad_presets_name_the_file_and_line(tmp_path):
    (tmp_path / "bad.toml").write_text("depth = 2\ncolour = 'red'\n")
    with pytest.raises(InputError) as err:
        load_preset("bad", tmp_path)
    assert err.value.line == 2 and "unknown preset key 'colour'" in str(err.value)
    (tmp_path / "typed.toml").write_text("depth = 'deep'\n")
    with pytest.raises(InputError, match="typed.toml:1: depth: wrong type"):
        load_preset("typed", tmp_path)
    with pytest.raises(UsageError, match="no preset named"):
        load_preset("absent", tmp_path)
    with pytest.raises(UsageError, match="depth must be at least 1"):
        resolve("standard", {"depth": 0})


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    return EvidenceStore(mini_workload(tmp_path_factory.mktemp("hints"), guides=False))


def test_hints_become_note_evidence_with_their_scope(store, tmp_path):
    path = tmp_path / "hints.txt"
    path.write_text("# comment\n\nwin:0x2000 dispatch over three handler types\n"
                    "the service is memory bound\n")
    hints = parse_hints([HintText("0x2004: a virtual call", "--hint"), *read_hint_file(path)],
                        store)
    assert [(h.id, h.scope) for h in hints] == [
        ("note:1", "pc 0x2004"), ("note:2", "window win:0x2000"), ("note:3", "whole run")]
    assert hints[0].text == "a virtual call"
    assert store.resolve("note:1").pcs == (0x2004,)
    assert store.resolve("note:3").text == "the service is memory bound"


def test_a_hint_about_an_unknown_target_is_an_error_with_its_line(store, tmp_path):
    path = tmp_path / "hints.txt"
    path.write_text("fine\nwin:0x1004 not a window start\n")
    with pytest.raises(InputError) as err:
        parse_hints(read_hint_file(path), store)
    assert err.value.line == 2 and "no window win:0x1004" in str(err.value)


def test_tools_are_bounded_and_never_run_model_input(store):
    shared = SharedMemory(store)
    box = ToolBox(store, shared, "w1.c1", ("pc:0x2004",))
    names = {spec.name for spec in tool_specs()}
    assert names == {"hot_windows", "mechanisms", "asm_around", "window", "search", "regex",
                     "group", "alp", "guide", "finding", "remember"}

    async def go():
        return [await box.use("asm_around", {"pc": "0x2004", "before": 500}),
                await box.use("asm_around", {"pc": "0x2004", "extra": "__import__('os')"}),
                await box.use("shell", {"cmd": "rm -rf /"}),
                await box.use("alp", {"pc": ["0x2004"] * 17}),
                await box.use("asm_around", {"pc": "0x2004", "before": 1, "after": 1}),
                await box.use("window", {"id": "win:0x2000"})]

    too_far, extra, unknown, too_many, ok, window = asyncio.run(go())
    assert too_far.error and "before" not in box.allowed
    assert extra.error and unknown.error == "unknown tool 'shell' (tools: hot_windows, " \
        "mechanisms, asm_around, window, search, regex, group, alp, guide, finding, remember)"
    assert too_many.error
    assert ok.error is None and {"pc:0x2000", "pc:0x2008", "win:0x2000"} <= set(ok.ids)
    assert {"pc:0x2000", "win:0x2000", "fn:runtime_dispatch"} <= box.allowed
    assert [row["pc"] for row in window.data["instructions"]] == [0x2000, 0x2004, 0x2008]
    assert [u.tool for u in box.log] == ["asm_around", "asm_around", "shell", "alp",
                                         "asm_around", "window"]
