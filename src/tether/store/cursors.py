"""Opaque page cursors: the last item's sort key, base64 of JSON, checked when read back."""

from __future__ import annotations

import base64
import json
from typing import Any

from tether.core.errors import UsageError

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def encode_cursor(*parts: Any) -> str:
    """An opaque page cursor."""
    raw = json.dumps(list(parts), separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str, *kinds: type) -> list[Any]:
    """The parts encode_cursor was given, one of each kind (int or str); UsageError for
    anything else, so a forged cursor never reaches the database."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        parts = json.loads(base64.urlsafe_b64decode(padded.encode()))
    except (ValueError, TypeError, RecursionError) as exc:  # (nested too deep for json)
        raise UsageError(f"invalid cursor {cursor!r}") from exc
    if not isinstance(parts, list) or len(parts) != len(kinds):
        raise UsageError(f"invalid cursor {cursor!r}")
    for part, kind in zip(parts, kinds, strict=True):
        if type(part) is not kind or (
            isinstance(part, int) and not _INT64_MIN <= part <= _INT64_MAX
        ):
            raise UsageError(f"invalid cursor {cursor!r}")
    return parts
