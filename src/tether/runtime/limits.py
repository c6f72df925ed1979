"""Input checks shared by every edge: each failure is a UsageError naming the field."""

from __future__ import annotations

import json
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from tether.core.errors import UsageError

E = TypeVar("E", bound=StrEnum)

MAX_TITLE = 500
MAX_GOAL = 20_000
MAX_KEY = 256
MAX_OWNER = 256
MAX_CONTENT = 1_000_000
MAX_JSON = 1_000_000
MAX_PAGE = 1000
MAX_SECONDS = 366 * 24 * 3600
#: The longest TTL a session may have (null = never expires).
MAX_TTL = 100 * MAX_SECONDS


def text(name: str, value: Any, maximum: int) -> str:
    """value, or UsageError unless it is a string of at most maximum characters."""
    if not isinstance(value, str):
        raise UsageError(f"{name} must be a string")
    if len(value) > maximum:
        raise UsageError(f"{name} is longer than {maximum} characters")
    return value


def title(value: Any) -> str | None:
    return None if value is None else text("title", value, MAX_TITLE)


def reason(value: Any) -> str:
    """A cancel reason."""
    return text("reason", value, MAX_TITLE)


def owner(value: Any) -> str:
    """value as given, or UsageError when it cannot name an owner."""
    text = value if isinstance(value, str) else ""
    if not 0 < len(text) <= MAX_OWNER or not text.isprintable() or text != text.strip():
        raise UsageError(
            f"owner must be 1 to {MAX_OWNER} printable characters without surrounding spaces"
        )
    return text


def goal(value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError("goal must be a non-empty string: say what the run should do")
    if len(value) > MAX_GOAL:
        raise UsageError(f"goal is longer than {MAX_GOAL} characters")
    return value


def content(value: Any) -> str:
    return text("content", value, MAX_CONTENT)


def ttl(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise UsageError("ttl_seconds must be a positive whole number of seconds, or null")
    if value > MAX_TTL:
        raise UsageError("ttl_seconds is too large (use null for a session that never expires)")
    return value


def seconds(name: str, value: Any) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise UsageError(f"{name} must be a positive number of seconds")
    if value > MAX_SECONDS:
        raise UsageError(f"{name} must be at most {MAX_SECONDS} seconds")
    return float(value)


def moment(name: str, value: Any) -> datetime | None:
    """An aware datetime (a time zone is required: tether keeps UTC), or None."""
    if value is None:
        return None
    if not isinstance(value, datetime) or value.utcoffset() is None:
        raise UsageError(f"{name} must be a time with a time zone (e.g. 2026-11-29T14:00:00Z)")
    return value


def positive_int(name: str, value: Any, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise UsageError(f"{name} must be a whole number from 1 to {maximum}")
    return value


def page_size(value: Any) -> int:
    return positive_int("limit", value, MAX_PAGE)


def key(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_KEY:
        raise UsageError(f"{name} must be a non-empty string of at most {MAX_KEY} characters")
    return value


def json_value(value: Any) -> Any:
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"value is not JSON: {exc}") from exc
    if len(text) > MAX_JSON:
        raise UsageError(f"value is larger than {MAX_JSON} bytes of JSON")
    return value


def mapping(name: str, value: Any) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"{name} must be a JSON object")
    try:
        json_value(value)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}") from exc
    return value


def enum(kind: type[E], value: Any, name: str) -> E | None:
    if value is None or value == "":
        return None
    try:
        return kind(value)
    except ValueError:
        allowed = ", ".join(m.value for m in kind)
        raise UsageError(f"{name} must be one of {allowed} (got {value!r})") from None


def namespace(value: Any) -> tuple[str, ...]:
    labels = tuple(value or ())
    for label in labels:
        if not isinstance(label, str) or not label or "\x1f" in label:
            raise UsageError("namespace labels must be non-empty strings")
    return labels
