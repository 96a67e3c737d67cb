"""Values as the Pulumi engine carries them (shared by the invoke readers and the component tests)."""
from __future__ import annotations

from typing import Any


def engine_numbers(value: Any) -> Any:
    """The engine carries every number as a float; request bodies have ints."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: engine_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [engine_numbers(v) for v in value]
    return value
