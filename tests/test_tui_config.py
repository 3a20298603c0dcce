"""The explorer's typed config, keymap table and themes (no app needed)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pcscope.core.errors import InputError
from pcscope.themes import STYLESHEET, THEMES, next_theme
from pcscope.tui.config import TuiConfig, config_path, load_config, read_config, save_theme
from pcscope.tui.keymap import KEY_IDS, SPECS, bindings


def test_config_path_follows_xdg_and_override(tmp_path: Path) -> None:
    assert config_path({"XDG_CONFIG_HOME": str(tmp_path)}) == tmp_path / "pcscope/config.toml"
    assert config_path({"PCSCOPE_CONFIG": "/x/y.toml"}) == Path("/x/y.toml")


def test_missing_file_gives_defaults_and_env_overrides(tmp_path: Path) -> None:
    env = {"XDG_CONFIG_HOME": str(tmp_path)}
    config = load_config(env)
    assert (config.theme, config.layout, config.animations) == ("pcscope-dark", "auto", False)
    env.update(PCSCOPE_THEME="pcscope-light", PCSCOPE_LAYOUT="tabs")
    config = load_config(env)
    assert (config.theme, config.layout) == ("pcscope-light", "tabs")


def test_file_values_and_key_remaps_are_read(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('theme = "pcscope-high-contrast"\nlayout = "wide"\n'
                    '[keys]\n"asm.follow" = "enter,o"\n', encoding="utf-8")
    config = read_config(path)
    assert config.theme == "pcscope-high-contrast"
    assert config.layout == "wide"
    assert dict(config.keys) == {"asm.follow": "enter,o"}


@pytest.mark.parametrize(("text", "line", "what"), [
    ('layout = "wide"\ntheme = "nope"\n', 2, "unknown theme 'nope'"),
    ('theme = "pcscope-dark"\n\n[keys]\n"asm.nothing" = "z"\n', 4, "unknown key binding id"),
    ('colour = 1\n', 1, "unknown setting 'colour'"),
    ('theme = "pcscope-dark"\nlayout = [\n', 2, "bad TOML"),
    ('animations = "yes"\n', 1, "animations must be true or false"),
])
def test_bad_config_names_file_and_line(tmp_path: Path, text: str, line: int, what: str) -> None:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InputError) as caught:
        read_config(path)
    assert caught.value.line == line
    assert caught.value.path == str(path)
    assert what in caught.value.what


def test_saving_a_theme_keeps_the_rest_and_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    config = TuiConfig(layout="tabs", keys={"app.quit": "q"}, path=path)
    save_theme(config.with_theme("pcscope-light"))
    again = read_config(path)
    assert (again.theme, again.layout, dict(again.keys)) == ("pcscope-light", "tabs",
                                                              {"app.quit": "q"})
    assert [p.name for p in path.parent.iterdir()] == ["config.toml"]  # no temp file left


def test_every_binding_has_unique_id_and_description() -> None:
    ids = [spec.id for spec in SPECS]
    assert len(ids) == len(set(ids)) == len(KEY_IDS)
    assert all(spec.description for spec in SPECS)


def test_every_ctrl_combination_has_a_plain_or_function_key_alternative() -> None:
    for spec in SPECS:
        keys = spec.keys.split(",")
        if any(k.startswith("ctrl+") for k in keys):
            assert any(not k.startswith(("ctrl+", "alt+")) for k in keys), spec.id


def test_issue_keys_are_bound_by_default() -> None:
    by_action = {spec.id: spec.keys.split(",") for spec in SPECS}
    expected = {
        "list.down": "j", "list.up": "k", "list.top": "g", "list.bottom": "G",
        "main.search": "slash", "main.next_hit": "n", "main.prev_hit": "N",
        "main.goto": "colon", "main.analyze": "a", "main.analyze_all": "A", "main.cancel": "x",
        "main.export": "e", "app.theme": "f9", "app.help": "f1", "app.quit": "q",
        "asm.hottest": "H", "asm.next_hot": "tab", "asm.prev_hot": "shift+tab",
        "asm.back": "backspace",
    }
    for binding_id, key in expected.items():
        assert key in by_action[binding_id], binding_id
    assert "question_mark" in by_action["app.help"]
    assert "escape" in by_action["main.cancel"]


def test_bindings_keep_ids_for_remapping() -> None:
    made = bindings("asm")
    assert {b.id for b in made} == {s.id for s in SPECS if s.id.startswith("asm.")}


def test_themes_cycle_and_stylesheet_uses_only_variables() -> None:
    assert {"pcscope-dark", "pcscope-light", "pcscope-high-contrast"} <= set(THEMES)
    assert next_theme("pcscope-dark") == "pcscope-light"
    assert next_theme("pcscope-high-contrast") == "pcscope-dark"
    css = STYLESHEET.read_text(encoding="utf-8")
    # A colour literal would not follow the theme: no #hex, rgb() or named colours.
    colour_rules = re.findall(r"(?:color|background|border[a-z-]*|tint)\s*:\s*([^;]+);", css)
    assert colour_rules
    for value in colour_rules:
        assert "#" not in value and "rgb" not in value, value
        words = [w for w in re.findall(r"[a-z][a-z-]*", value)
                 if w not in ("round", "solid", "none", "bold", "italic", "reverse")]
        for word in words:
            assert f"${word}" in value, f"colour {value!r} is not a $variable"
