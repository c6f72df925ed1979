"""Input checks shared by every edge: each failure is a UsageError naming the field."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from datetime import datetime
from enum import StrEnum
from typing import Any, TypeVar

from tether.core.errors import UsageError
from tether.core.items import item_role, item_text
from tether.core.memory import MemoryScope, MemoryWrite
from tether.core.message import NewMessage, Role
from tether.core.usage import Usage

E = TypeVar("E", bound=StrEnum)

MAX_TITLE = 500
MAX_GOAL = 20_000
MAX_KEY = 256
MAX_OWNER = 256
MAX_CONTENT = 1_000_000
MAX_JSON = 1_000_000
MAX_PAGE = 1000
MAX_OFFSET = 2**62
MAX_SECONDS = 366 * 24 * 3600
#: The longest lease a caller executing a run itself may ask for (a dead holder's run waits
#: this long for the reaper).
MAX_HELD_LEASE = 3600
#: The steps a run its caller executes may hold (each up to MAX_JSON of input and output); the
#: step past it is TooManySteps.
MAX_HELD_STEPS = 10_000
#: The longest TTL a session may have (null = never expires).
MAX_TTL = 100 * MAX_SECONDS
#: A session's external key: any text but NUL, this many characters at most.
MAX_EXTERNAL_KEY = 256
MAX_APP = 256
#: Messages one batch append may hold.
MAX_BATCH = 1000
#: How deeply a structured item, or any JSON value tether keeps, may nest lists and objects
#: (deeper ones would be stored, then fail every read that renders them).
MAX_ITEM_DEPTH = 100
#: The tokens (and model requests) one recorded step may count, each: far above any model
#: call, and low enough that no number of steps can overflow the 64-bit totals of a run or a
#: session (2**53 a step overflowed them in 1024 steps).
MAX_STEP_USAGE = 10**9
_MESSAGE_FIELDS = frozenset({"role", "content", "metadata", "item"})
#: Roles by value, for the role of a message given as a string (a Role is one too).
_ROLES = {role.value: role for role in Role}
_ROLE_TYPES = (str, Role)


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


def held_lease(value: Any, default: float) -> float:
    """The lease of a run its caller executes: value seconds (1 to MAX_HELD_LEASE), or default."""
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 1:
        raise UsageError("lease_seconds must be a number of seconds, at least 1")
    if value > MAX_HELD_LEASE:
        raise UsageError(f"lease_seconds must be at most {MAX_HELD_LEASE} seconds")
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


def seq(name: str, value: Any) -> int:
    """A position in a sequence (a message's seq): a whole number from 1 to 2**62."""
    return positive_int(name, value, 2**62)


def page_size(value: Any) -> int:
    return positive_int("limit", value, MAX_PAGE)


def offset(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_OFFSET:
        raise UsageError(f"offset must be a whole number from 0 to {MAX_OFFSET}")
    return value


def key(name: str, value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > MAX_KEY:
        raise UsageError(f"{name} must be a non-empty string of at most {MAX_KEY} characters")
    return value


def json_value(value: Any) -> Any:
    """value, or UsageError unless it is JSON of at most MAX_JSON bytes nesting at most
    MAX_ITEM_DEPTH levels."""
    _shallow(value)
    try:
        text = json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UsageError(f"value is not JSON: {exc}") from exc
    if len(text) > MAX_JSON:
        raise UsageError(f"value is larger than {MAX_JSON} bytes of JSON")
    return value


def _shallow(value: Any) -> None:
    """UsageError when value nests lists and objects deeper than MAX_ITEM_DEPTH levels (looked
    at level by level, without recursion, so any depth is refused in words)."""
    level = [value] if isinstance(value, dict | list | tuple) else []
    for _ in range(MAX_ITEM_DEPTH):
        level = [
            inner
            for outer in level
            for inner in (outer.values() if isinstance(outer, dict) else outer)
            if isinstance(inner, dict | list | tuple)
        ]
        if not level:
            return
    raise UsageError(f"value nests deeper than {MAX_ITEM_DEPTH} levels")


def usage(value: Usage | None) -> Usage | None:
    """A step's usage, or UsageError unless each count is a whole number from 0 to
    MAX_STEP_USAGE."""
    if value is None:
        return None
    for field in ("input_tokens", "output_tokens", "requests"):
        count = getattr(value, field)
        if isinstance(count, bool) or not isinstance(count, int):
            raise UsageError(f"usage.{field} must be a whole number")
        if not 0 <= count <= MAX_STEP_USAGE:
            raise UsageError(f"usage.{field} must be from 0 to {MAX_STEP_USAGE}")
    return value


def mapping(name: str, value: Any) -> dict[str, Any]:
    if value is None or (type(value) is dict and not value):
        return {}
    if type(value) is dict and not value:
        return value
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        raise UsageError(f"{name} must be a JSON object")
    try:
        json_value(value)
    except UsageError as exc:
        raise UsageError(f"{name}: {exc}") from exc
    return value


def external_key(value: Any) -> str | None:
    """A session's external key: 1 to MAX_EXTERNAL_KEY characters of any Unicode text but NUL
    (compared exactly: no case folding, no normalisation), or None."""
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= MAX_EXTERNAL_KEY:
        raise UsageError(
            f"external_key must be a non-empty string of at most {MAX_EXTERNAL_KEY} characters"
        )
    if "\x00" in value:
        raise UsageError("external_key cannot contain NUL (U+0000) characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise UsageError("external_key is not valid Unicode (a lone surrogate)") from None
    return value


def app(value: Any) -> str | None:
    """An app name: 1 to MAX_APP printable characters, no "/", no surrounding spaces; or None."""
    if value is None:
        return None
    name = value if isinstance(value, str) else ""
    if (
        not 0 < len(name) <= MAX_APP
        or not name.isprintable()
        or name != name.strip()
        or "/" in name
    ):
        raise UsageError(
            f"app must be 1 to {MAX_APP} printable characters, without '/' or surrounding spaces"
        )
    return name


def item(value: Any) -> dict[str, Any]:
    """A structured conversation item: a JSON object made only of what JSON holds exactly
    (objects with string keys, lists, strings, finite numbers, booleans, null), so that it
    comes back as it was given."""
    if not isinstance(value, dict):
        raise UsageError("item must be a JSON object")
    _plain_json(value, "item", 0)
    json_value(value)
    return value


def _plain_json(value: Any, where: str, depth: int) -> None:
    if depth > MAX_ITEM_DEPTH:
        raise UsageError(f"{where} nests deeper than {MAX_ITEM_DEPTH} levels")
    kind = type(value)
    if kind is dict:
        for key, inner in value.items():
            if type(key) is not str:
                raise UsageError(f"{where} has a key that is not a string ({key!r})")
            _plain_json(inner, f"{where}.{key}", depth + 1)
    elif kind is list:
        for index, inner in enumerate(value):
            _plain_json(inner, f"{where}[{index}]", depth + 1)
    elif kind not in (str, int, float, bool, type(None)):
        raise UsageError(f"{where} holds a {kind.__name__}, which JSON cannot hold exactly")


def new_message(
    role: Any, content: Any, metadata: Any = None, item_value: Any = None
) -> NewMessage:
    """A message to append. With an item, a missing role or content comes from it (see
    core.items); without one, the role defaults to user and the content is required."""
    checked = None if item_value is None else item(item_value)
    chosen = _ROLES.get(role) if type(role) in _ROLE_TYPES else None  # (most roles: at once)
    if chosen is None:
        if role is None or role == "":
            chosen = Role.USER if checked is None else item_role(checked)
        else:
            chosen = enum(Role, role, "role") or Role.USER
    if content is None and checked is not None:
        content = item_text(checked)
    made: Any = _new(_NewMessageSlots)  # NewMessage(...), without its frozen __init__
    made.role = chosen
    # (text and mapping, without a call for the most common values: a batch checks hundreds)
    short = type(content) is str and len(content) <= MAX_CONTENT
    made.content = content if short else text("content", content, MAX_CONTENT)
    made.metadata = {} if metadata is None else mapping("metadata", metadata)
    made.item = checked
    made.__class__ = NewMessage
    new: NewMessage = made
    return new


class _NewMessageSlots:
    """NewMessage's slots without its frozen __setattr__: a message to append is made in one
    (plain attribute stores, about three times cheaper than the frozen dataclass's __init__;
    a batch makes a hundred) and becomes a NewMessage by __class__ assignment, which Python
    allows between classes of the same slot layout."""

    __slots__ = NewMessage.__slots__


_new = object.__new__


def batch(messages: Any) -> list[NewMessage]:
    """The messages of a batch append: 1 to MAX_BATCH objects with role, content, metadata and
    item fields (as one message takes)."""
    if isinstance(messages, str | bytes | Mapping) or not isinstance(messages, Iterable):
        raise UsageError("messages must be a list of message objects")
    given = list(messages)
    if not 0 < len(given) <= MAX_BATCH:
        raise UsageError(f"a batch holds 1 to {MAX_BATCH} messages (got {len(given)})")
    checked = []
    for index, raw in enumerate(given):
        if type(raw) is not dict:
            if isinstance(raw, NewMessage):
                raw = {
                    "role": raw.role,
                    "content": raw.content,
                    "metadata": raw.metadata,
                    "item": raw.item,
                }
            elif not isinstance(raw, Mapping):
                raise UsageError(f"messages[{index}] must be a message object")
        if not _MESSAGE_FIELDS.issuperset(raw):
            unknown = set(raw) - _MESSAGE_FIELDS
            raise UsageError(
                f"messages[{index}] has unknown fields: {', '.join(sorted(map(str, unknown)))}"
            )
        try:
            checked.append(
                new_message(
                    raw.get("role"), raw.get("content"), raw.get("metadata"), raw.get("item")
                )
            )
        except UsageError as exc:
            raise UsageError(f"messages[{index}]: {exc}") from exc
    return checked


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


def memory_writes(writes: Any, *, session_id: str, owner: str) -> list[MemoryWrite]:
    """Memory items set beside an append to session_id: up to MAX_BATCH of this session's,
    the owner's user memory or the owner's apps', each checked as a single write is."""
    given = list(writes)
    if len(given) > MAX_BATCH:
        raise UsageError(f"an append sets at most {MAX_BATCH} memory items (got {len(given)})")
    checked = []
    for write in given:
        if not isinstance(write, MemoryWrite):
            raise UsageError("memory items must be MemoryWrite values")
        expected = {MemoryScope.SESSION: session_id, MemoryScope.USER: owner}
        if write.scope is MemoryScope.APP:
            scope_id = app(write.scope_id) or ""
        elif write.scope in expected and write.scope_id == expected[write.scope]:
            scope_id = write.scope_id
        else:
            raise UsageError(
                f"an append to session {session_id} sets this session's, the owner's user or"
                f" an app's memory (not {write.scope.value} {write.scope_id!r})"
            )
        checked.append(
            MemoryWrite(
                write.scope,
                scope_id,
                key("key", write.key) or "",
                json_value(write.value),
                namespace(write.namespace),
            )
        )
    return checked
