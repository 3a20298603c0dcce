"""JSON that stays JSON: NaN and ±Infinity (which json.dumps would write as bare words no
JSON parser accepts) become null — a figure that cannot be computed is absent."""

from __future__ import annotations

import json
import math
from typing import Any


def finite(data: Any) -> Any:
    """``data`` with every non-finite float replaced by None (containers rebuilt only
    when they hold one)."""
    if isinstance(data, float):
        return data if math.isfinite(data) else None
    if isinstance(data, dict):
        return {k: finite(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [finite(v) for v in data]
    return data


def dumps(data: Any, **options: Any) -> str:
    """json.dumps of ``data`` made finite; never writes NaN or Infinity."""
    try:
        return json.dumps(data, allow_nan=False, **options)
    except ValueError:  # a non-finite float somewhere: the rare case pays for the walk
        return json.dumps(finite(data), allow_nan=False, **options)
