"""RuntimeSettings: the knobs of the service and its workers (no environment parsing here)."""

from __future__ import annotations

from dataclasses import dataclass

from tether.core.redaction import DEFAULT_REDACTOR, Redactor

#: The token budget of the context a run starts from, unless settings or a caller say.
DEFAULT_BUDGET_TOKENS = 8000


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """How the runtime behaves; every field has a production default."""

    #: Owner used by the library when no API key says otherwise.
    owner: str = "local"
    #: Agent a run gets when it names none.
    default_agent: str = "echo"
    #: Runs a worker executes at once.
    concurrency: int = 8
    #: A run's lease; a worker that stops renewing it for this long is considered lost.
    lease_seconds: float = 15.0
    #: How often a worker looks for work when nothing woke it (other processes, delayed runs).
    poll_interval: float = 0.5
    #: How often a run's holder checks it is still wanted (cancellation from other processes).
    watch_interval: float = 0.25
    #: How often the reaper looks for lost runs and passed deadlines.
    reap_interval: float = 1.0
    #: How often a worker looks for schedules whose next tick has come.
    schedule_interval: float = 1.0
    #: Webhook hosts (names) and networks (CIDRs) allowed besides public addresses.
    webhook_allow: tuple[str, ...] = ()
    #: How often a worker looks for webhooks to deliver (ended runs, retries that are due).
    webhook_interval: float = 1.0
    #: How often expired sessions are persisted as expired (events included), which also
    #: cancels the runs still going in them.
    sweep_interval: float = 5.0
    #: How long a ready run whose agent no running worker has waits for one before it fails
    #: with agent_not_found; None = it waits forever.
    unroutable_after: float | None = 3600.0
    #: Grace period for running runs when a worker is asked to stop.
    shutdown_grace: float = 10.0
    #: Token budget of the context a run starts from.
    context_budget_tokens: int = DEFAULT_BUDGET_TOKENS
    #: What replaces secrets in everything a run records (steps, tool calls, messages it says,
    #: memory it writes, its output and error) before it is stored; NO_REDACTION for none.
    redactor: Redactor = DEFAULT_REDACTOR
    #: Folders a workspace agent's workspace must lie in (``tether serve --workspace-root``);
    #: None = none configured: any workspace while the database holds no active API key, no
    #: workspace once it does.
    workspace_roots: tuple[str, ...] | None = None
