"""``tether serve``: the HTTP service on uvicorn, with the embedded worker (imported lazily,
so the rest of the CLI starts fast)."""

from __future__ import annotations

import ipaddress
import logging
from pathlib import Path
from typing import Annotated

import typer

from tether.api.settings import ApiSettings
from tether.cli import durations
from tether.cli.app import (
    DbOption,
    DurabilityOption,
    UnroutableAfterOption,
    fail,
    finite,
    handles_errors,
)
from tether.cli.graphs import GraphOption, LangGraphConfigOption, register_graphs
from tether.cli.observe import LogFormatOption, MetricsTokenOption, OtelOption, start_observing
from tether.cli.redaction import RedactOption, RedactPatternOption, redactor
from tether.cli.roots import WorkspaceRootOption, announce, workspace_roots
from tether.cli.webhooks import WebhookAllowOption, webhook_allow
from tether.core import hosts
from tether.core.errors import MissingExtra
from tether.core.hosts import AllowedHosts
from tether.store.factory import (
    check_durability,
    is_postgres,
    open_store,
    redact_url,
    sqlite_path,
)

log = logging.getLogger("tether.serve")


def is_loopback(host: str) -> bool:
    """True for addresses only this machine can reach (127.0.0.0/8, ::1, localhost)."""
    return hosts.is_loopback(host.strip("[]").lower())


def allowed_hosts(given: list[str], bound: str) -> tuple[str, ...]:
    """The hosts answered besides loopback ones: those given (repeated, or comma-separated;
    TETHER_ALLOWED_HOSTS may separate them with spaces too), and the address bound when it is
    a specific one."""
    entries = [entry.strip() for value in given for entry in value.split(",") if entry.strip()]
    try:
        if not ipaddress.ip_address(bound.strip("[]")).is_unspecified:
            entries.append(bound)
    except ValueError:
        entries.append(bound)  # a name to bind to is a name clients use
    return AllowedHosts.of(entries).extra


#: The defaults of the options (the settings' own).
_DEFAULTS = ApiSettings()


async def _has_keys(db: str, durability: str) -> bool:
    """Whether db holds an active API key; opening it (and migrating it) before uvicorn starts
    makes a database that cannot be opened one clear line, not a failed startup."""
    from tether.runtime.api_keys import ApiKeys

    store = open_store(db, durability=durability)
    try:
        return await ApiKeys(store).any_active()
    finally:
        await store.close()


def _age(text: str | None, option: str) -> float | None:
    return None if text is None else durations.seconds(text, option=option)


@handles_errors
def serve(
    host: Annotated[
        str, typer.Option(envvar="TETHER_HOST", help="Address to bind (loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(envvar="TETHER_PORT", min=0, max=65535, help="Port (0 = any free).")
    ] = 8080,
    db: DbOption = _DEFAULTS.db,
    durability: DurabilityOption = _DEFAULTS.durability,
    workers: Annotated[
        int,
        typer.Option(
            envvar="TETHER_WORKERS",
            min=0,
            help="Runs the embedded worker executes at once; 0 = none (use `tether worker`).",
        ),
    ] = _DEFAULTS.workers,
    no_auth: Annotated[
        bool,
        typer.Option(
            "--no-auth",
            envvar="TETHER_NO_AUTH",
            help="No API keys: every request acts for the owner 'local' (loopback only).",
        ),
    ] = False,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allowed-host",
            envvar="TETHER_ALLOWED_HOSTS",
            help="A Host name (or address) to answer besides loopback ones; repeatable; "
            "*.domain for its subdomains, * for any. Other hosts get 421 (DNS rebinding).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int,
        typer.Option(envvar="TETHER_MAX_BODY_BYTES", min=1, help="Larger bodies get 413."),
    ] = _DEFAULTS.max_body_bytes,
    heartbeat_seconds: Annotated[
        float,
        typer.Option(
            envvar="TETHER_HEARTBEAT_SECONDS",
            min=0.1,
            max=3600,
            callback=finite,
            help="Seconds of silence after which an SSE stream sends a heartbeat comment.",
        ),
    ] = _DEFAULTS.heartbeat_seconds,
    header_timeout: Annotated[
        float,
        typer.Option(
            envvar="TETHER_HEADER_TIMEOUT",
            min=0.1,
            max=3600,
            callback=finite,
            help="Seconds a request's head may take to arrive before its connection is closed.",
        ),
    ] = _DEFAULTS.header_timeout,
    docs: Annotated[
        bool,
        typer.Option(envvar="TETHER_DOCS", help="Serve the interactive API docs at /docs."),
    ] = _DEFAULTS.docs,
    shutdown_grace: Annotated[
        float,
        typer.Option(
            envvar="TETHER_SHUTDOWN_GRACE",
            min=0,
            max=86400,
            callback=finite,
            help="On stop, seconds running runs get to finish before they are handed back.",
        ),
    ] = _DEFAULTS.shutdown_grace,
    access_log: Annotated[bool, typer.Option(help="Log every request.")] = True,
    agents: Annotated[
        str | None,
        typer.Option(envvar="TETHER_AGENTS", help="Comma-separated modules that register agents."),
    ] = None,
    graph: GraphOption = None,
    langgraph_config: LangGraphConfigOption = None,
    log_format: LogFormatOption = "plain",
    otel: OtelOption = False,
    metrics: Annotated[
        bool,
        typer.Option(
            "--metrics",
            envvar="TETHER_METRICS",
            help="Serve GET /metrics in the Prometheus format (extra: metrics).",
        ),
    ] = False,
    metrics_token: MetricsTokenOption = None,
    unroutable_after: UnroutableAfterOption = "1h",
    prune_closed_after: Annotated[
        str | None,
        typer.Option(
            envvar="TETHER_PRUNE_CLOSED_AFTER",
            help="Every hour, delete sessions closed longer ago than this (90d …).",
        ),
    ] = None,
    prune_expired_after: Annotated[
        str | None,
        typer.Option(
            envvar="TETHER_PRUNE_EXPIRED_AFTER",
            help="Every hour, delete sessions expired longer ago than this (30d …).",
        ),
    ] = None,
    redact: RedactOption = True,
    redact_pattern: RedactPatternOption = None,
    workspace_root: WorkspaceRootOption = None,
    webhook_allowed: WebhookAllowOption = None,
) -> None:
    """Serve the HTTP API (/v1, SSE streams, /docs) with an embedded worker."""
    import asyncio

    from tether import telemetry

    try:
        from tether.api.server import serve as run
    except ModuleNotFoundError as exc:
        raise MissingExtra("tether serve", "server", exc.name) from exc
    check_durability(durability)
    grace = durations.grace(unroutable_after, option="--unroutable-after")
    prune_closed = _age(prune_closed_after, "--prune-closed-after")
    prune_expired = _age(prune_expired_after, "--prune-expired-after")
    extra_hosts = allowed_hosts(allowed_host or [], host)
    redacting = redactor(redact, redact_pattern)
    roots = workspace_roots(workspace_root)
    loopback = is_loopback(host)
    if no_auth and not loopback:
        fail(f"--no-auth is only allowed on a loopback address (127.0.0.1, ::1), not {host}")
    if no_auth and hosts.ANY in extra_hosts:
        fail("--no-auth cannot answer any host (--allowed-host '*'): any web page could drive it")
    start_observing(log_format, otel=otel)
    exists = is_postgres(db) or Path(sqlite_path(db)).exists()  # don't create it just to refuse
    has_keys = (exists or loopback or no_auth) and asyncio.run(_has_keys(db, durability))
    if not no_auth and not has_keys:
        shown = redact_url(db)  # a PostgreSQL password stays out of terminals and logs
        if not loopback:
            fail(
                f"refusing to serve on {host} without API keys: create one with "
                f"`tether keys create --owner NAME --db {shown}`, or bind 127.0.0.1"
            )
        log.warning(
            "no API keys yet: every request will get 401 until you run "
            "`tether keys create --owner NAME --db %s` (or serve with --no-auth)",
            shown,
        )
    from tether.config import import_agents, model_catalog

    import_agents(agents)
    for name in register_graphs(graph, langgraph_config):
        log.info("serving LangGraph graph %s", name)
    announce(log, roots)

    settings = ApiSettings(
        db=db,
        durability=durability,
        workers=workers,
        auth=not no_auth,
        allowed_hosts=extra_hosts,
        max_body_bytes=max_body_bytes,
        header_timeout=header_timeout,
        docs=docs,
        shutdown_grace=shutdown_grace,
        heartbeat_seconds=heartbeat_seconds,
        metrics=metrics or metrics_token is not None,
        metrics_token=metrics_token,
        unroutable_after=grace,
        prune_closed_after=prune_closed,
        prune_expired_after=prune_expired,
        redactor=redacting,
        workspace_roots=roots,
        webhook_allow=webhook_allow(webhook_allowed),
    )
    try:
        run(
            settings,
            host=host,
            port=port,
            access_log=access_log,
            models=model_catalog(),
            log_format=log_format,
        )
    finally:
        telemetry.disable_tracing()  # the spans that ended are exported before the exit
