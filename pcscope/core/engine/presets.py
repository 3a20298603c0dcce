"""Named analysis configurations (TOML): bundled ``quick``, ``standard`` and ``deep``, plus an
engineer's own in ``$XDG_CONFIG_HOME/pcscope/presets/<name>.toml`` (which win over bundled
ones of the same name). Explicit command-line values override the preset; the resolved
``Settings`` go into the report so any run can be repeated.
"""

from __future__ import annotations

import os
import re
import tomllib
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Any

from pcscope.core.bundled import bundled_path
from pcscope.core.contract.categories import CATEGORIES
from pcscope.core.errors import InputError, UsageError

BUNDLED = bundled_path("pcscope.core.engine", "presets")
DEFAULT_PRESET = "standard"


@dataclass(frozen=True)
class Settings:
    preset: str = DEFAULT_PRESET
    coverage: float = 0.90
    top: int | None = None
    depth: int = 2
    concurrency: int = 8
    windows_per_slice: int = 4
    slice_tokens: int = 1600
    guide_k: int = 2
    max_calls: int | None = 60  # the whole run: every wave and review
    max_tokens: int | None = 8_000_000
    max_seconds: float | None = 3600.0
    max_questions: int = 12  # deeper calls per wave (within max_calls)
    # own share below which a candidate with nothing measured gets no call: no idea that
    # small is reported (the offline analyst's smallest is 0.5% of the total)
    min_share: float = 0.005
    focus: tuple[str, ...] = ()  # categories to concentrate on (empty: all)
    guides: tuple[str, ...] = ()  # guide files used when none are given on the command line

    def to_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["focus"] = list(self.focus)
        out["guides"] = list(self.guides)
        return out

    def validate(self) -> Settings:
        if not 0.0 < self.coverage <= 1.0:
            raise UsageError(f"coverage {self.coverage} must be in (0, 1]")
        if not 0.0 <= self.min_share < 1.0:
            raise UsageError(f"min-share {self.min_share} must be in [0, 1)")
        for name in ("depth", "concurrency", "windows_per_slice", "slice_tokens"):
            if getattr(self, name) < 1:
                raise UsageError(f"{name.replace('_', '-')} must be at least 1")
        for name in ("top", "max_calls", "max_tokens", "max_seconds"):
            value = getattr(self, name)
            if value is not None and value <= 0:
                raise UsageError(f"{name.replace('_', '-')} must be positive")
        unknown = [c for c in self.focus if c not in CATEGORIES]
        if unknown:
            raise UsageError(f"unknown focus categories: {', '.join(unknown)}")
        return self


_TYPES = {f.name: f.type for f in fields(Settings)}
_KEYS = set(_TYPES) - {"preset"} | {"description"}


def user_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pcscope" / "presets"


def preset_path(name: str, config_dir: Path | None = None) -> Path:
    if not re.fullmatch(r"[A-Za-z0-9_.-]+", name):
        raise UsageError(f"bad preset name {name!r}")
    for folder in (config_dir or user_dir(), BUNDLED):
        candidate = folder / f"{name}.toml"
        if candidate.is_file():
            return candidate
    raise UsageError(f"no preset named {name!r} (bundled: {', '.join(available())})")


def available(config_dir: Path | None = None) -> list[str]:
    names = {p.stem for p in BUNDLED.glob("*.toml")}
    folder = config_dir or user_dir()
    if folder.is_dir():
        names |= {p.stem for p in folder.glob("*.toml")}
    return sorted(names)


def load_preset(name: str = DEFAULT_PRESET, config_dir: Path | None = None) -> Settings:
    path = preset_path(name, config_dir)
    text = path.read_text(encoding="utf-8")
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        line = re.search(r"line (\d+)", str(exc))
        raise InputError(str(path), int(line.group(1)) if line else None, str(exc)) from None
    values: dict[str, Any] = {"preset": name}
    for key, value in data.items():
        if key not in _KEYS:
            raise InputError(str(path), _line_of(text, key), f"unknown preset key {key!r}")
        if key == "description":
            continue
        values[key] = _coerce(path, text, key, value)
    settings = Settings(**values)
    try:
        return settings.validate()
    except UsageError as exc:
        raise InputError(str(path), None, str(exc)) from None


def resolve(name: str | None, overrides: dict[str, Any],
            config_dir: Path | None = None) -> Settings:
    """The preset ``name`` (default ``standard``) with every non-None override applied."""
    settings = load_preset(name or DEFAULT_PRESET, config_dir)
    given: dict[str, Any] = {k: (tuple(v) if isinstance(v, list) else v)
             for k, v in overrides.items() if v is not None}
    unknown = set(given) - set(_TYPES)
    if unknown:
        raise UsageError(f"unknown settings: {', '.join(sorted(unknown))}")
    return replace(settings, **given).validate()


def _coerce(path: Path, text: str, key: str, value: Any) -> Any:
    kind = str(_TYPES[key])
    ok = (
        ("tuple" in kind and isinstance(value, list) and all(isinstance(v, str) for v in value))
        or ("float" in kind and isinstance(value, int | float) and not isinstance(value, bool))
        or ("int" in kind and "float" not in kind and isinstance(value, int)
            and not isinstance(value, bool))
    )
    if not ok:
        raise InputError(str(path), _line_of(text, key), f"{key}: wrong type {value!r}")
    if key == "guides":
        # Relative guide paths are relative to the preset file.
        return tuple(str((path.parent / v).resolve()) if not os.path.isabs(v) else v
                     for v in value)
    return tuple(value) if isinstance(value, list) else value


def _line_of(text: str, key: str) -> int | None:
    for number, line in enumerate(text.splitlines(), 1):
        if re.match(rf"\s*{re.escape(key)}\s*=", line):
            return number
    return None
