"""Values a framework hands an adapter, as tether stores them."""

from __future__ import annotations

import json
from typing import Any


def jsonable(value: Any) -> Any:
    """value when it is JSON, else its text (a tool's result may be any object)."""
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)
    return value
