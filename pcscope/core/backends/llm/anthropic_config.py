"""Settings of the Claude backend: bundled defaults, overridden by the user's config file.

Nothing secret lives here: the API key comes only from ``ANTHROPIC_API_KEY``. Prices are
configuration, dated and labelled as estimates (``[prices] checked``).
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
THINKING = ("adaptive", "off")
EFFORTS = ("low", "medium", "high", "xhigh", "max")
CACHE_TTLS = ("5m", "1h")


@dataclass(frozen=True)
class Price:
    """Estimated USD per million tokens; a 1-hour cache write costs ``cache_write_1h``
    (twice the input price when the table leaves it out)."""

    input: float
    output: float
    cache_write: float
    cache_read: float
    cache_write_1h: float | None = None

    def cost(self, usage: Usage, cache_ttl: str = "5m") -> float:
        """Uncached input, cache writes (at the TTL's price), cache reads and output, each
        at its own price."""
        return (usage.input_tokens * self.input + usage.output_tokens * self.output
                + usage.cache_write_tokens * self.write_price(cache_ttl)
                + usage.cache_read_tokens * self.cache_read) / 1e6

    def write_price(self, cache_ttl: str) -> float:
        if cache_ttl == "5m":
            return self.cache_write
        return self.cache_write_1h if self.cache_write_1h is not None else 2 * self.input


def weighed_tokens(usage: Usage, price: Price | None, cache_ttl: str = "5m") -> int:
    """Tokens for a token budget: cache writes and reads weighed by their price relative
    to uncached input (reads ~0.1, writes ~1.25); every token counts 1 without a price."""
    if price is None or not price.input:
        return (usage.input_tokens + usage.output_tokens + usage.cache_read_tokens
                + usage.cache_write_tokens)
    write = price.write_price(cache_ttl)
    return round(usage.input_tokens + usage.output_tokens
                 + usage.cache_write_tokens * write / price.input
                 + usage.cache_read_tokens * price.cache_read / price.input)


def _longest_prefix(table: dict, model: str):
    keys = sorted((k for k in table if model.startswith(k)), key=len, reverse=True)
    return table[keys[0]] if keys else table.get("default")


@dataclass(frozen=True)
class AnthropicConfig:
    default_model: str = "claude-sonnet-5-5"
    max_tokens: int = 16000
    thinking: str = "adaptive"
    effort: str = ""
    cache_ttl: str = "5m"
    timeout_seconds: float = 120.0
    timeout_per_1k_tokens: float = 3.0
    max_attempts: int = 5
    backoff_base_seconds: float = 1.0
    backoff_cap_seconds: float = 30.0
    retry_after_cap_seconds: float = 60.0
    count_tokens: bool = True
    context_tokens: dict[str, int] = field(default_factory=lambda: {"default": 200000})
    cache_min_tokens: dict[str, int] = field(default_factory=lambda: {"default": 1024})
    prices: dict[str, Price] = field(default_factory=dict)
    prices_checked: str = ""

    def price(self, model: str) -> Price | None:
        """Exact model ID first, else the longest table key the ID starts with."""
        if model in self.prices:
            return self.prices[model]
        return _longest_prefix(self.prices, model)

    def cost(self, model: str, usage: Usage) -> float | None:
        price = self.price(model)
        return None if price is None else price.cost(usage, self.cache_ttl)

    def weigh(self, model: str, usage: Usage) -> int:
        return weighed_tokens(usage, self.price(model), self.cache_ttl)

    def context_window(self, model: str) -> int:
        return _longest_prefix(self.context_tokens, model)

    def cache_minimum(self, model: str) -> int:
        """The shortest prefix (tokens) the model caches."""
        return _longest_prefix(self.cache_min_tokens, model)

    def request_fields(self) -> dict:
        """Body fields every request carries: reasoning and effort (kept the same for all
        turns of a run, so they never invalidate the prompt cache)."""
        fields: dict = {"thinking": {"type": "adaptive" if self.thinking == "adaptive"
                                     else "disabled"}}
        if self.effort:
            fields["output_config"] = {"effort": self.effort}
        return fields

    def turn_timeout(self, tokens: int) -> float:
        """A turn's whole deadline, growing with what it sends and may receive."""
        return self.timeout_seconds + self.timeout_per_1k_tokens * tokens / 1000


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
    table = data.pop("prices", {})
    prices = {}
    for model, row in table.get("models", {}).items():
        try:
            prices[model] = Price(**{k: float(v) for k, v in row.items()})
        except TypeError as exc:
            raise InputError(str(path), None, f"prices.models.{model}: {exc}") from None
    known = AnthropicConfig.__dataclass_fields__
    unknown = sorted(set(data) - set(known))
    if unknown:
        raise InputError(str(path), None, f"unknown settings: {', '.join(unknown)}")
    for key, allowed in (("thinking", THINKING), ("cache_ttl", CACHE_TTLS),
                         ("effort", ("", *EFFORTS))):
        if key in data and data[key] not in allowed:
            raise InputError(str(path), None, f"{key} = {data[key]!r}: want one of "
                                              f"{', '.join(repr(a) for a in allowed)}")
    return AnthropicConfig(prices=prices, prices_checked=str(table.get("checked", "")), **data)
