"""What a LangGraph client may send: checks that name the field, and the options tether refuses.

The official client sends only the keys its caller set, plus a few defaults (``stream_mode``,
``stream_subgraphs: false``, ``stream_resumable: false``). Defaults and options tether honours
by design are accepted; an option for a feature tether does not provide is refused with a 422
naming it, never stored and silently ignored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from tether.core.errors import UsageError
from tether.runtime import limits

V = TypeVar("V")

#: The largest offset a search takes (a database counts rows in 64 bits).
MAX_OFFSET = 2**31
#: The stream modes tether produces, in the SDK's names.
STREAM_MODES = ("values", "updates", "messages-tuple", "messages", "custom")
#: The stream modes the SDK knows and tether does not produce.
_OTHER_MODES = (
    "events",
    "tasks",
    "checkpoints",
    "debug",
    "tools",
    "lifecycle",
)


class UnsupportedOption(UsageError):
    """This option asks for a feature tether does not provide."""

    code = "unsupported_option"
    http_status = 422

    def __init__(self, option: str, why: str) -> None:
        super().__init__(f"{option} is not supported by tether: {why}", option=option)
        self.option = option


def refuse(option: str, why: str) -> UnsupportedOption:
    return UnsupportedOption(option, why)


def check_keys(where: str, body: Mapping[str, Any], allowed: Iterable[str]) -> None:
    """Refuse keys this endpoint does not know (a newer client's option, a typo)."""
    unknown = sorted(set(body) - set(allowed))
    if unknown:
        raise refuse(
            ", ".join(f"{where}.{k}" for k in unknown),
            "tether does not know this option, so it cannot honour it",
        )


def obj(body: Any, name: str = "body") -> dict[str, Any]:
    if body is None:
        return {}
    if not isinstance(body, dict):
        raise UsageError(f"{name} must be a JSON object")
    return body


def _optional(body: Mapping[str, Any], key: str, where: str, kind: type[V], what: str) -> V | None:
    """body[key] when it is a kind (None when absent or null), else UsageError naming it."""
    value = body.get(key)
    if value is None:
        return None
    if not isinstance(value, kind):
        raise UsageError(f"{where}.{key} must be {what}")
    return value


def opt_dict(body: Mapping[str, Any], key: str, where: str = "body") -> dict[str, Any] | None:
    return _optional(body, key, where, dict, "a JSON object")


def opt_str(body: Mapping[str, Any], key: str, where: str = "body") -> str | None:
    return _optional(body, key, where, str, "a string")


def opt_bool(body: Mapping[str, Any], key: str, where: str = "body") -> bool | None:
    return _optional(body, key, where, bool, "true or false")


def one_of(value: Any, allowed: Iterable[str], field: str) -> str:
    choices = tuple(allowed)
    if value not in choices:
        raise UsageError(f"{field} must be one of {', '.join(choices)} (got {value!r})")
    return str(value)


def page(body: Mapping[str, Any], *, default_limit: int, where: str = "body") -> tuple[int, int]:
    """limit and offset of a search body."""
    limit = body.get("limit", default_limit)
    offset = body.get("offset", 0)
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 1000:
        raise UsageError(f"{where}.limit must be a whole number from 1 to 1000")
    if isinstance(offset, bool) or not isinstance(offset, int) or not 0 <= offset <= MAX_OFFSET:
        raise UsageError(f"{where}.offset must be a whole number from 0 to {MAX_OFFSET}")
    return limit, offset


def stream_modes(
    value: Any, field: str = "body.stream_mode", served: tuple[str, ...] = STREAM_MODES
) -> list[str]:
    """The stream modes asked for (a string or a list; empty values are ignored), checked
    against those served (a graph's runs serve more than a tether agent's)."""
    if value is None:
        return []
    modes = [value] if isinstance(value, str) else value
    if not isinstance(modes, list) or not all(isinstance(m, str) for m in modes):
        raise UsageError(f"{field} must be a stream mode or a list of them")
    chosen: list[str] = []
    for mode in modes:
        if not mode or mode in chosen:
            continue
        if mode in _OTHER_MODES and mode not in served:
            raise refuse(
                f"{field} {mode!r}",
                f"tether streams {', '.join(served)} for this assistant",
            )
        if mode not in served:
            raise UsageError(
                f"{field} {mode!r} is not a stream mode (tether streams {', '.join(served)})"
            )
        chosen.append(mode)
    return chosen


def ttl_seconds(value: Any, field: str = "body.ttl") -> int | None:
    """A thread TTL ``{"ttl": minutes, "strategy": "delete"}`` (or minutes) in seconds."""
    if value is None:
        return None
    if isinstance(value, dict):
        check_keys(field, value, ("ttl", "strategy"))
        strategy = value.get("strategy", "delete")
        if strategy != "delete":
            raise refuse(
                f"{field}.strategy {strategy!r}",
                "a thread past its TTL expires (becomes read-only, kept for audit); "
                "only the strategy 'delete' maps onto that",
            )
        minutes, name = value.get("ttl"), f"{field}.ttl"
    else:
        minutes, name = value, field
    if isinstance(minutes, bool) or not isinstance(minutes, int | float) or not minutes > 0:
        raise UsageError(f"{name} must be a positive number of minutes")
    if minutes > limits.MAX_TTL / 60:  # (also keeps 1e308 minutes from overflowing)
        raise UsageError(f"{name} must be at most {limits.MAX_TTL // 60} minutes")
    return max(1, round(minutes * 60))
