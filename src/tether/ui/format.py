"""Jinja filters: durations, TTLs, relative expiry, JSON, structured items and one-line texts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tether.core.clock import to_iso
from tether.core.step import Step, StepKind

_UNITS = ((86400, "d"), (3600, "h"), (60, "min"), (1, "s"))


def duration(seconds: float | None) -> str:
    """1.2 s, 350 ms, 3 min 4 s, 2 h 5 min, 4 d 1 h; — when unknown."""
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.0f} s" if seconds == int(seconds) else f"{seconds:.1f} s"
    parts = []
    left = int(seconds)
    for size, unit in _UNITS:
        if left >= size:
            parts.append(f"{left // size} {unit}")
            left %= size
        if len(parts) == 2:
            break
    return " ".join(parts)


def ttl(seconds: int | None) -> str:
    """A session's TTL: never, or a whole duration."""
    return "never expires" if seconds is None else duration(seconds)


def expires_in(moment: datetime | None, now: datetime) -> str:
    """How long until moment (29 d 23 h), or never when there is none."""
    if moment is None:
        return "never"
    left = (moment - now).total_seconds()
    return "now" if left <= 0 else duration(left)


def iso(moment: datetime | None) -> str:
    return to_iso(moment) or ""


def utc(moment: datetime | None) -> str:
    """The text shown before the browser converts it to its own time zone."""
    return "—" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S UTC")


def pretty(value: Any) -> str:
    """Indented JSON."""
    return json.dumps(value, indent=2, ensure_ascii=False, default=str, sort_keys=True)


def as_given(value: Any) -> str:
    """Indented JSON with its keys in their own order (a structured item, shown as added)."""
    return json.dumps(value, indent=2, ensure_ascii=False)


def item_label(item: dict[str, Any]) -> str:
    """What a structured item is, in a few words: its type, the tool it calls, its call id."""
    parts = [str(item.get("type") or "item")]
    if isinstance(item.get("name"), str):
        parts.append(item["name"])
    if isinstance(item.get("call_id"), str):
        parts.append(f"call {item['call_id']}")
    return oneline(" · ".join(parts), 120)


def compact(value: Any, limit: int = 120) -> str:
    """JSON (or text) on one line, cut at limit characters."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return oneline(text, limit)


def oneline(text: str | None, limit: int = 160) -> str:
    """The first line of text, cut at limit characters."""
    first = (text or "").strip().splitlines()[0] if (text or "").strip() else ""
    return first if len(first) <= limit else first[: limit - 1] + "…"


def fields(value: Any) -> list[tuple[str, str]]:
    """A record shown field by field: texts as they are (newlines kept), the rest as JSON."""
    if isinstance(value, dict) and value:
        return [(str(k), v if isinstance(v, str) else pretty(v)) for k, v in value.items()]
    return [("", value if isinstance(value, str) else pretty(value))]


def arguments(value: Any) -> Any:
    """What a tool was called with: a tool-call step's input without its call id."""
    if isinstance(value, dict) and set(value) <= {"arguments", "call_id"} and "arguments" in value:
        return value["arguments"]
    return value


def step_preview(step: Step) -> str:
    """One line about a step: a tool's arguments, what a model answered, a note's input."""
    if step.kind is StepKind.TOOL_CALL:
        return compact(arguments(step.input), 90)
    output = step.output if isinstance(step.output, dict) else {}
    if step.kind is StepKind.MODEL_CALL:
        calls = [c.get("name", "?") for c in output.get("tool_calls") or [] if isinstance(c, dict)]
        if calls:
            return "asks for " + ", ".join(calls)
        return oneline(str(output.get("content") or ""), 90)
    shown = step.input if step.input is not None else step.output
    return "" if shown is None else compact(shown, 90)


FILTERS = {
    "duration": duration,
    "ttl": ttl,
    "iso": iso,
    "utc": utc,
    "pretty": pretty,
    "as_given": as_given,
    "item_label": item_label,
    "compact": compact,
    "oneline": oneline,
    "fields": fields,
    "arguments": arguments,
    "step_preview": step_preview,
}
