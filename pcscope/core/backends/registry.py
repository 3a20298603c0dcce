"""Backends by name: ``offline`` (the default), ``scripted:<modes>``, ``anthropic:<model>``,
``openai:<model>`` (an OpenAI-compatible server), ``replay:<file>``.

A name is ``<kind>[:<argument>]``. Each kind lives in a module that exposes
``create(argument: str, options: BackendOptions) -> Backend``; the module is imported only
when its kind is asked for, so optional backends (and their dependencies) cost nothing
until used. Other code can add kinds with ``register(kind, "package.module")``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Any

from pcscope.core.contract.backend import Backend
from pcscope.core.errors import UsageError

DEFAULT = "offline"


@dataclass(frozen=True)
class BackendOptions:
    """What a backend may need beyond its name (given by the CLI or the TUI)."""

    offline_only: bool = False  # refuse any backend that would use the network
    record: str | None = None  # where a recording backend writes request/response pairs
    extra: dict[str, Any] = field(default_factory=dict)


_MODULES: dict[str, str] = {
    "offline": "pcscope.core.backends.offline",
    "scripted": "pcscope.core.backends.doubles.scripted",
    "anthropic": "pcscope.core.backends.llm.anthropic",
    "openai": "pcscope.core.backends.llm.openai_compat",
    "replay": "pcscope.core.backends.doubles.replay",
}
_LOCAL = {"offline", "scripted", "replay"}


def register(kind: str, module: str) -> None:
    _MODULES[kind] = module


def kinds() -> list[str]:
    return sorted(_MODULES)


def check(name: str | None, options: BackendOptions | None = None) -> tuple[str, str]:
    """(kind, argument) of a backend name, or a UsageError for an unknown kind or a network
    backend under ``offline_only`` — without building anything (fail before indexing)."""
    options = options or BackendOptions()
    kind, _, argument = (name or DEFAULT).partition(":")
    if kind not in _MODULES:
        raise UsageError(f"unknown model {name!r} (kinds: {', '.join(kinds())})")
    if options.offline_only and kind not in _LOCAL:
        raise UsageError(f"--offline refuses the network backend {name!r}")
    return kind, argument


def backend_for(name: str | None, options: BackendOptions | None = None) -> Backend:
    options = options or BackendOptions()
    kind, argument = check(name, options)
    module_name = _MODULES[kind]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name != module_name:
            raise
        raise UsageError(f"model kind {kind!r} is not available in this build") from None
    return module.create(argument, options)
