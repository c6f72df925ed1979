"""FastAPI's own telemetry, turned off where a FastAPI version has it.

Recent FastAPI versions report each request as a span (plus spans of its dependencies and
endpoint) whenever a global tracer provider is set, as ``tether serve --otel`` does. tether's
``ServerSpans`` reports requests with every FastAPI version, only when tether's tracing is on;
both together would report every request twice.
"""

from __future__ import annotations

import inspect
from typing import Any

from fastapi import FastAPI


def without_native_tracing() -> dict[str, Any]:
    """Keyword arguments of FastAPI() that turn its own request tracing off (none when the
    installed FastAPI has no such thing)."""
    if "telemetry" not in inspect.signature(FastAPI.__init__).parameters:
        return {}
    return {"telemetry": {"tracing": False, "operation_spans": False}}
