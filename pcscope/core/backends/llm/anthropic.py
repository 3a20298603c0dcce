"""The Claude backend (``--model anthropic:<model id>``): ``ModelBackend`` over the
``anthropic`` SDK's streaming Messages API.

The key is read from ``ANTHROPIC_API_KEY`` only, handed to the SDK in memory, and scrubbed
from every error text; nothing here writes it. ``ANTHROPIC_BASE_URL`` points the SDK at
any Messages-API-compatible endpoint.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from pcscope.core.backends.llm.anthropic_config import AnthropicConfig, load_config
from pcscope.core.backends.llm.messages_client import ModelClient, SdkClient
from pcscope.core.backends.llm.model_backend import ModelBackend, Secret
from pcscope.core.backends.llm.trace import Tracer
from pcscope.core.errors import UsageError

KEY_ENV = "ANTHROPIC_API_KEY"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"


def anthropic_backend(model: str | None = None, *, offline: bool = False,
                      config: AnthropicConfig | None = None, concurrency: int = 8,
                      trace_dir: Path | None = None, run_id: str = "run",
                      wrap: Callable[[ModelClient], ModelClient] | None = None,
                      environ: dict[str, str] | None = None) -> ModelBackend:
    """``anthropic:<model>`` from the environment: key, optional base URL; none on disk."""
    env = os.environ if environ is None else environ
    config = config or load_config()
    model = model or config.default_model
    name = f"anthropic:{model}"
    if offline:
        raise UsageError(f"--offline refuses the network backend {name}")
    key = env.get(KEY_ENV, "")
    if not key:
        raise UsageError(f"{name} needs the API key in the {KEY_ENV} environment variable")
    secret = Secret(key)
    client: ModelClient = SdkClient(key, base_url=env.get(BASE_URL_ENV) or None,
                                    timeout=config.timeout_seconds,
                                    count_tokens=config.count_tokens,
                                    turn_timeout=config.turn_timeout)
    tracer = Tracer(trace_dir, run_id, scrub=secret.scrub)
    return ModelBackend(name, model, client, config, concurrency=concurrency, tracer=tracer,
                        secret=secret, wrap=wrap)


def overridden(config: AnthropicConfig, extra: dict) -> AnthropicConfig:
    """The config with the command line's reasoning and caching choices applied."""
    chosen = {k: extra[k] for k in ("thinking", "effort", "cache_ttl") if extra.get(k)}
    return replace(config, **chosen) if chosen else config


def create(argument: str, options) -> ModelBackend | object:
    """Registry hook for ``anthropic:<model id>`` (empty id: the configured default).

    ``options.record`` records every exchange; ``options.extra`` may hold ``concurrency``,
    ``trace_dir``, a ``redactor`` (``--redact``), which wraps the backend, and the
    ``thinking``, ``effort`` and ``cache_ttl`` settings the command line overrides.
    """
    from pcscope.core.backends.doubles.replay import Recorder

    extra = options.extra
    config = overridden(load_config(), extra)
    redactor = extra.get("redactor")
    recorder = (Recorder(Path(options.record), max_tokens=config.max_tokens,
                         redacted=redactor is not None) if options.record else None)
    trace_dir = extra.get("trace_dir")
    backend = anthropic_backend(argument or None, offline=options.offline_only, config=config,
                                concurrency=int(extra.get("concurrency", 8)),
                                trace_dir=Path(trace_dir) if trace_dir else None,
                                wrap=recorder.wrap if recorder else None)
    if redactor is None:
        return backend
    from pcscope.core.backends.llm.redact import RedactingBackend

    return RedactingBackend(backend, redactor)
