"""ApiSettings: how the HTTP service behaves (the CLI fills it from flags and TETHER_* vars)."""

from __future__ import annotations

from dataclasses import dataclass

from tether.core.redaction import Redactor
from tether.runtime.settings import RuntimeSettings
from tether.store.factory import DEFAULT_DB

#: The default limit of a request body: 1 MiB.
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
#: Where the defaults shared with the runtime come from.
_RUNTIME = RuntimeSettings()


@dataclass(frozen=True, slots=True)
class ApiSettings:
    """Every field has a production default."""

    #: The database: a SQLite path or a postgresql:// URL.
    db: str = DEFAULT_DB
    #: SQLite's durability: "normal" or "full" (PostgreSQL's is the server's own).
    durability: str = "normal"
    #: Runs the embedded worker executes at once; 0 = no embedded worker (use `tether worker`).
    workers: int = _RUNTIME.concurrency
    #: False = no API keys: every request acts for the owner "local" (loopback only).
    auth: bool = True
    #: Host names (and addresses) answered besides the loopback ones: a name, an address,
    #: ``*.domain`` or ``*`` (any); other Host headers get 421.
    allowed_hosts: tuple[str, ...] = ()
    #: Seconds a request head (request line and headers) may take to arrive before the
    #: connection is closed (slow clients cannot hold connections open).
    header_timeout: float = 10.0
    #: False = no interactive API docs at /docs (the spec stays at /openapi.json).
    docs: bool = True
    #: Request bodies larger than this are refused with 413.
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    #: Seconds of silence after which an SSE stream sends a heartbeat comment.
    heartbeat_seconds: float = 15.0
    #: The longest a long-poll (GET /v1/runs/{id}/wait) may hold a request.
    max_wait_seconds: float = 300.0
    #: On shutdown, how long running runs may take to finish before they are handed back.
    shutdown_grace: float = _RUNTIME.shutdown_grace
    #: Seconds a ready run whose agent no running worker has waits before it fails with
    #: agent_not_found (None = forever).
    unroutable_after: float | None = _RUNTIME.unroutable_after
    #: Delete sessions closed longer ago than this many seconds, periodically (None = keep).
    prune_closed_after: float | None = None
    #: Delete sessions expired longer ago than this many seconds, periodically (None = keep).
    prune_expired_after: float | None = None
    #: How often the pruning above runs.
    prune_interval: float = 3600.0
    #: Serve GET /metrics (Prometheus text format; needs the ``metrics`` extra).
    metrics: bool = False
    #: The Bearer token GET /metrics requires; None = answer loopback clients only.
    metrics_token: str | None = None
    #: What replaces secrets in what the embedded worker's runs record (NO_REDACTION: none).
    redactor: Redactor = _RUNTIME.redactor
    #: Folders the coder agent's workspaces must lie in (RuntimeSettings.workspace_roots);
    #: None = the runtime settings' own.
    workspace_roots: tuple[str, ...] | None = None
    #: Webhook hosts and networks (CIDRs) allowed besides public addresses
    #: (RuntimeSettings.webhook_allow).
    webhook_allow: tuple[str, ...] = ()
