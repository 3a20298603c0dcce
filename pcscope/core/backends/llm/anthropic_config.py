"""Settings of the Claude backend: bundled defaults, overridden by the user's config file.

Nothing secret lives here: the API key comes only from ``ANTHROPIC_API_KEY``.
"""

from __future__ import annotations

import os
import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from pcscope.core.contract.backend import Usage
from pcscope.core.errors import InputError

USER_FILE = "anthropic.toml"


@dataclass(frozen=True)
class Price:
    """USD per million tokens."""

    input: float
    output: float
    cache_write: float
    cache_read: float

    def cost(self, usage: Usage) -> float:
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_write_tokens * self.cache_write
                + usage.cache_read_tokens * self.cache_read) / 1e6


@dataclass(frozen=True)
class AnthropicConfig:
    default_model: str = "claude-sonnet-4-5"
    max_tokens: int = 4096
    timeout_seconds: float = 120.0
    max_attempts: int = 5
    backoff_base_seconds: float = 1.0
    backoff_cap_seconds: float = 30.0
    retry_after_cap_seconds: float = 60.0
    count_tokens: bool = True
    context_tokens: dict[str, int] = field(default_factory=lambda: {"default": 200000})
    prices: dict[str, Price] = field(default_factory=dict)

    def price(self, model: str) -> Price | None:
        """Exact model ID first, else the longest table key the ID starts with."""
        if model in self.prices:
            return self.prices[model]
        keys = sorted((k for k in self.prices if model.startswith(k)), key=len, reverse=True)
        return self.prices[keys[0]] if keys else None

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.price(model)
        return None if price is None else price.cost(usage)

    def context_window(self, model: str) -> int:
        keys = sorted((k for k in self.context_tokens if model.startswith(k)), key=len,
                      reverse=True)
        return self.context_tokens[keys[0]] if keys else self.context_tokens["default"]


def user_config_dir() -> Path:
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "pcscope"


def load_config(user_file: Path | None = None) -> AnthropicConfig:
    """The bundled TOML, then the user's file on top (key by key; prices by model)."""
    bundled = resources.files("pcscope.core.backends.llm").joinpath(USER_FILE).read_text("utf-8")
    data = tomllib.loads(bundled)
    path = user_file or user_config_dir() / USER_FILE
    if path.is_file():
        try:
            mine = tomllib.loads(path.read_text("utf-8"))
        except tomllib.TOMLDecodeError as exc:
            raise InputError(str(path), getattr(exc, "lineno", None), str(exc)) from None
        data = _merge(data, mine)
    return _build(data, path)


def _merge(base: dict, top: dict) -> dict:
    out = dict(base)
    for key, value in top.items():
        out[key] = _merge(base[key], value) if isinstance(value, dict) and isinstance(
            base.get(key), dict) else value
    return out


def _build(data: dict, path: Path) -> AnthropicConfig:
    prices = {}
    for model, row in data.pop("prices", {}).items():
        try:
            prices[model] = Price(**{k: float(v) for k, v in row.items()})
        except TypeError as exc:
            raise InputError(str(path), None, f"prices.{model}: {exc}") from None
    known = AnthropicConfig.__dataclass_fields__
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InputError(str(path), None, f"unknown settings: {', '.join(unknown)}")
    return AnthropicConfig(prices=prices, **data)
