"""The explorer's typed configuration: theme, layout, animations and key remapping.

Read from ``$PCSCOPE_CONFIG`` or ``$XDG_CONFIG_HOME/pcscope/config.toml`` (default
``~/.config``); ``PCSCOPE_THEME`` and ``PCSCOPE_LAYOUT`` override the file. Example::

    theme = "pcscope-light"      # pcscope-dark | pcscope-light | pcscope-high-contrast
    layout = "auto"              # auto | wide | tabs (tabs = one pane at a time)
    animations = false
    [keys]                       # binding id = comma-separated keys (see F1 for the ids)
    "asm.follow" = "enter,l"

A theme chosen in the explorer is written back (atomically) so it is kept.
"""

from __future__ import annotations

import json
import os
import re
import tempfile
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Literal, get_args

from pcscope.core.errors import InputError
from pcscope.themes import DEFAULT_THEME, THEMES
from pcscope.tui.keymap import KEY_IDS

Layout = Literal["auto", "wide", "tabs"]
LAYOUTS: tuple[str, ...] = get_args(Layout)


@dataclass(frozen=True)
class TuiConfig:
    theme: str = DEFAULT_THEME
    layout: Layout = "auto"
    animations: bool = False
    keys: Mapping[str, str] = field(default_factory=dict)
    path: Path | None = None  # where the theme is saved; None = never save

    def with_theme(self, theme: str) -> TuiConfig:
        return replace(self, theme=theme)


def config_path(env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    if env.get("PCSCOPE_CONFIG"):
        return Path(env["PCSCOPE_CONFIG"])
    base = env.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pcscope" / "config.toml"


def load_config(env: Mapping[str, str] | None = None) -> TuiConfig:
    """The config file (if any) with environment overrides applied."""
    env = os.environ if env is None else env
    path = config_path(env)
    config = read_config(path) if path.is_file() else TuiConfig(path=path)
    if env.get("PCSCOPE_THEME"):
        config = replace(config, theme=_theme("PCSCOPE_THEME", None, env["PCSCOPE_THEME"]))
    if env.get("PCSCOPE_LAYOUT"):
        config = replace(config, layout=_layout("PCSCOPE_LAYOUT", None, env["PCSCOPE_LAYOUT"]))
    return config


def read_config(path: Path) -> TuiConfig:
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        line = int(found.group(1)) if found else len(text.splitlines()) or None
        raise InputError(str(path), line, f"bad TOML: {exc}") from None
    where = str(path)
    unknown = sorted(set(data) - {"theme", "layout", "animations", "keys"})
    if unknown:
        raise InputError(where, _line_of(text, unknown[0]), f"unknown setting {unknown[0]!r}")
    keys = data.get("keys", {})
    if not isinstance(keys, dict):
        raise InputError(where, _line_of(text, "keys"), "[keys] must be a table")
    for key_id, value in keys.items():
        if key_id not in KEY_IDS:
            raise InputError(where, _line_of(text, key_id), f"unknown key binding id {key_id!r}")
        if not isinstance(value, str) or not value.strip():
            raise InputError(where, _line_of(text, key_id),
                             f"keys for {key_id!r} must be a non-empty string")
    animations = data.get("animations", False)
    if not isinstance(animations, bool):
        raise InputError(where, _line_of(text, "animations"), "animations must be true or false")
    return TuiConfig(
        theme=_theme(where, _line_of(text, "theme"), data.get("theme", DEFAULT_THEME)),
        layout=_layout(where, _line_of(text, "layout"), data.get("layout", "auto")),
        animations=animations,
        keys=dict(keys),
        path=path,
    )


def save_theme(config: TuiConfig) -> None:
    """Keep the chosen theme: rewrite the config file with it (temp file + rename)."""
    if config.path is None:
        return
    lines = [f'theme = "{config.theme}"', f'layout = "{config.layout}"',
             f"animations = {'true' if config.animations else 'false'}"]
    if config.keys:
        lines.append("[keys]")
        lines += [f"{json.dumps(key_id)} = {json.dumps(keys)}"
                  for key_id, keys in sorted(config.keys.items())]
    config.path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".config-", suffix=".toml", dir=config.path.parent)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write("\n".join(lines) + "\n")
    os.replace(tmp, config.path)


def _theme(where: str, line: int | None, value: object) -> str:
    if value not in THEMES:
        raise InputError(where, line, f"unknown theme {value!r} (one of {', '.join(THEMES)})")
    return str(value)


def _layout(where: str, line: int | None, value: object) -> Layout:
    if value not in LAYOUTS:
        raise InputError(where, line, f"unknown layout {value!r} (one of {', '.join(LAYOUTS)})")
    return value  # type: ignore[return-value]


def _line_of(text: str, key: str) -> int | None:
    """1-based line where ``key`` is assigned (TOML errors from tomllib carry no line)."""
    pattern = re.compile(rf'^\s*(?:"{re.escape(key)}"|{re.escape(key)})\s*=|^\s*\[{re.escape(key)}\]')
    for number, line in enumerate(text.splitlines(), start=1):
        if pattern.match(line):
            return number
    return None
