"""What the long-running commands (``serve``, ``worker``) share to be watched: the log format,
tracing and the metrics token."""

from __future__ import annotations

from typing import Annotated

import typer


def log_format(value: str) -> str:
    """A log format: plain or json."""
    from tether.telemetry import logs

    if value not in logs.FORMATS:
        raise typer.BadParameter(f"{value!r} is not one of plain, json", param_hint="--log-format")
    return value


def metrics_token(token: str | None) -> str | None:
    """The metrics token without surrounding blanks; a blank one is refused."""
    if token is None:
        return None
    if not token.strip():
        raise typer.BadParameter("the metrics token is empty", param_hint="--metrics-token")
    return token.strip()


LogFormatOption = Annotated[
    str,
    typer.Option(
        envvar="TETHER_LOG_FORMAT",
        help="plain, or json: one JSON object per line (access log included).",
        show_default=True,
        callback=log_format,
    ),
]
OtelOption = Annotated[
    bool,
    typer.Option(
        "--otel",
        envvar="TETHER_OTEL",
        help="Report traces over OTLP/HTTP, configured by the OTEL_* variables (extra: otel).",
    ),
]
MetricsTokenOption = Annotated[
    str | None,
    typer.Option(
        envvar="TETHER_METRICS_TOKEN",
        help="Bearer token GET /metrics requires (without one, loopback clients only).",
        callback=metrics_token,
    ),
]


def start_observing(chosen: str, *, otel: bool) -> None:
    """Set up the process's logs (first, so everything after is in the format) and tracing."""
    from tether import telemetry
    from tether.telemetry import logs

    logs.configure(chosen)
    if otel:
        telemetry.enable_tracing()
