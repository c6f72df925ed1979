"""Log lines as an operator reads them: plain text, or one JSON object per line.

``configure("json")`` (``--log-format json``) makes every line of the process (tether's, an
agent's, uvicorn's server and access logs) one JSON object on standard error::

    {"time": "2025-01-02T03:04:05.678Z", "level": "info", "logger": "tether.executor",
     "message": "run 0193… failed: ValueError: boom", "run_id": "0193…", "session_id": "0193…"}

Every line about a run carries ``run_id`` and ``session_id`` (logged while the run executes, or
passed with ``extra=log_context.ids(run)``); an access line carries ``client``, ``method``,
``path``, ``http_version`` and ``status``; with tracing on, lines logged inside a span carry
its ``trace_id`` and ``span_id``. Other ``extra=`` fields are kept as they are. The plain
format is the same facts on one line of text, the ids at its end.
"""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any, Literal

from tether.core.errors import UsageError
from tether.runtime import log_context
from tether.telemetry import tracing_enabled

LogFormat = Literal["plain", "json"]
FORMATS: tuple[LogFormat, ...] = ("plain", "json")

#: Attributes every LogRecord has (anything else on a record came with extra=), and uvicorn's
#: colourised copy of its message.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {
    "message",
    "asctime",
    "taskName",
    "color_message",
}
_ACCESS_FIELDS = ("client", "method", "path", "http_version", "status")


class JsonFormatter(logging.Formatter):
    """One JSON object per record."""

    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {
            "time": _time(record),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        data.update(_fields(record, access=True))
        if record.exc_info:
            data["exception"] = self.formatException(record.exc_info)
        elif record.stack_info:
            data["stack"] = self.formatStack(record.stack_info)
        return json.dumps(data, ensure_ascii=False, default=str)


class PlainFormatter(logging.Formatter):
    """``<time> <LEVEL> <logger> <message> [key=value …]`` on one line (tracebacks after it)."""

    def format(self, record: logging.LogRecord) -> str:
        fields = _fields(record, access=False)  # the access line's message says it already
        line = f"{_time(record)} {record.levelname} {record.name} {record.getMessage()}"
        if fields:
            line += " [" + " ".join(f"{k}={v}" for k, v in fields.items()) + "]"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        elif record.stack_info:
            line += "\n" + self.formatStack(record.stack_info)
        return line


def configure(log_format: str = "plain", level: int = logging.INFO) -> None:
    """Send every log line of this process to standard error in log_format (replacing the
    handlers the root logger had)."""
    if log_format not in FORMATS:
        raise UsageError(f"the log format must be plain or json, not {log_format!r}")
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter() if log_format == "json" else PlainFormatter())
    root = logging.getLogger()
    for old in list(root.handlers):
        root.removeHandler(old)
    root.addHandler(handler)
    root.setLevel(level)


def _time(record: logging.LogRecord) -> str:
    moment = datetime.fromtimestamp(record.created, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def _fields(record: logging.LogRecord, *, access: bool) -> dict[str, Any]:
    """What a line says besides its message: the run it is about, the request it answered
    (access), the span it is in, and any extra= fields."""
    fields: dict[str, Any] = dict(log_context.current() or {})
    fields.update({k: v for k, v in vars(record).items() if k not in _STANDARD})
    if access:
        fields.update(_request(record))
    if tracing_enabled():
        fields.update(_span_ids())
    return fields


def _request(record: logging.LogRecord) -> dict[str, Any]:
    """The fields of an access line (uvicorn logs them as its message's arguments)."""
    args = record.args
    if record.name != "uvicorn.access" or not isinstance(args, tuple):
        return {}
    if len(args) != len(_ACCESS_FIELDS):
        return {}
    return dict(zip(_ACCESS_FIELDS, args, strict=True))


def _span_ids() -> dict[str, str]:
    from opentelemetry import trace

    context = trace.get_current_span().get_span_context()
    if not context.is_valid:
        return {}
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}
