"""The Store protocol: everything tether persists, as atomic domain operations.

The guarantees every backend gives are written out in docs/store-contract.md; in short:

* Every method is one transaction. A state change and the event(s) describing it commit together.
* Guards live in the transaction: a write to a closed or expired session raises SessionClosed /
  SessionExpired; a status change not allowed by ``core.status`` raises InvalidTransition; a
  worker writing to a run it no longer holds raises LeaseLost. Nothing is half-written.
* At most one run per session is ``running`` or ``waiting``, enforced by the database itself.
* Event ids increase in commit order within a session; reading ``after_id`` never skips one.
* Times are passed in (``now``): the store never reads a clock.
* ``owner`` arguments scope reads and writes: another owner's object is reported as missing.
* After each commit the store publishes topics on ``changes`` (see store.changes).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, Literal, Protocol, runtime_checkable

from tether.core.event import Event
from tether.core.memory import MemoryItem, MemoryScope, MemoryWrite
from tether.core.message import Message, NewMessage, Role, StoredMessage
from tether.core.page import Page
from tether.core.run import Activity, ErrorInfo, IfBusy, Run, RunActivity
from tether.core.schedule import Schedule
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.store.changes import ChangeFeed
from tether.store.run_start import RunStart, SourceLimits

if TYPE_CHECKING:  # records of operations a read does none of: loaded where they are made
    from tether.core.api_key import ApiKey
    from tether.core.assistant import Assistant
    from tether.core.stats import RunStats
    from tether.core.webhook import WebhookDelivery
    from tether.store.checkpoint import (
        ChannelValue,
        Checkpoint,
        ConversationRanges,
        LoadedCheckpoint,
        PendingWrite,
    )


class _Unset(Enum):
    UNSET = "UNSET"


#: "Leave this field as it is" in partial updates (None is a value).
UNSET: Final = _Unset.UNSET
Unset = _Unset

#: What search_sessions sorts by: creation, last change (max of updated_at and
#: last_activity_at), last activity, id, or activity (idle, busy, waiting, error as text).
SessionSort = Literal["created_at", "updated_at", "activity_at", "id", "activity"]
#: Told of each committed event: its type and its data, with the records it is about (a Run,
#: a Step …) as they were written.
EventObserver = Callable[[str, Mapping[str, Any]], None]


@runtime_checkable
class Store(Protocol):
    """Durable sessions, runs, steps, messages, memory and events."""

    #: Wake-ups published after each commit.
    changes: ChangeFeed
    #: Where the data lives, for messages (never includes a password).
    location: str
    #: True when calls may be awaited on any event loop, from any thread (so a synchronous
    #: program can run them where it stands); False when they belong to one loop.
    any_loop: bool

    async def close(self) -> None:
        """Release connections; the store is unusable afterwards."""

    async def schema_version(self) -> int:
        """The migration version of the open database."""

    def observe(self, observer: EventObserver) -> None:
        """From now on, call observer with every event this store object commits, right after
        its transaction commits, in order (this process's writes only; an observer that
        raises is logged, never raised into the write)."""

    # -- gauges --------------------------------------------------------------------------------

    async def count_unfinished_runs(self) -> list[tuple[RunStatus, str, int]]:
        """(status, agent, count) of the runs ready, running or waiting now, of every owner."""

    async def count_active_sessions(self, *, now: datetime) -> int:
        """How many sessions of every owner are active as of now (exact expiry)."""

    async def run_stats(
        self, *, owner: str, since: datetime, until: datetime, tools: int = 10
    ) -> RunStats:
        """Owner's runs created in [since, until), aggregated in the database: counts by hour
        and status, p50/p95 durations by agent, model-call tokens by UTC day and model, and
        the tools (at most tools of them) whose calls failed most."""

    # -- sessions ------------------------------------------------------------------------------

    async def create_session(self, session: Session, *, temporary: bool = False) -> Session:
        """Insert a new session (+ session.created). AlreadyExists if the id is taken, or its
        external key by another session of the owner. temporary: made for stateless runs, it is
        among finished_temporary_sessions once its runs have ended."""

    async def get_or_create_session(self, session: Session) -> tuple[Session, bool]:
        """The owner's session with session.external_key as it is stored, with False; else
        session, inserted (+ session.created), with True. Race-free across processes: of two
        callers creating one key at once, one creates and the other gets that session."""

    async def get_session(self, session_id: str, *, owner: str | None = None) -> Session | None:
        """The stored session (expiry not applied), or None."""

    async def get_session_by_key(self, key: str, *, owner: str) -> Session | None:
        """The owner's session whose external key is key (expiry not applied), or None."""

    async def list_sessions(
        self,
        *,
        owner: str,
        now: datetime,
        status: SessionStatus | None = None,
        query: str | None = None,
        metadata: dict[str, Any] | None = None,
        app: str | None = None,
        key_prefix: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Session]:
        """Sessions of owner, newest activity first; status is judged as of now (exact expiry);
        query matches title, metadata text or external key; metadata matches top-level keys
        exactly; app exactly; key_prefix the start of the external key."""

    async def search_sessions(
        self,
        *,
        owner: str,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | None = None,
        sort: SessionSort = "created_at",
        descending: bool = True,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Session]:
        """Sessions of owner whose metadata and project match the given top-level keys exactly,
        among ids (when given), whose runs are doing `activity`; sorted by `sort` (ties by id,
        in the same direction) and paged by limit and offset, all in the database."""

    async def count_sessions(
        self,
        *,
        owner: str,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | None = None,
    ) -> int:
        """How many sessions search_sessions would find with no page."""

    async def update_session(
        self,
        session_id: str,
        *,
        owner: str | None,
        now: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        project: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | Unset | None = UNSET,
        app: str | Unset | None = UNSET,
    ) -> Session:
        """Change the given fields of an active session (+ session.updated, whose changed
        names project also by its former name, context). Not activity:
        last_activity_at (and so expiry) stays as it was. AlreadyExists when external_key is
        another session's of the owner."""

    async def close_session(self, session_id: str, *, owner: str | None, now: datetime) -> Session:
        """active → closed, cancelling its unfinished runs (+ events). Idempotent on a closed or
        expired session (returned as it is)."""

    async def delete_session(self, session_id: str, *, owner: str | None) -> None:
        """Remove the session and everything under it (runs, steps, messages, memory, events)."""

    async def expire_sessions(self, *, now: datetime, limit: int = 500) -> list[Session]:
        """Persist the expiry of sessions whose TTL passed by now (+ session.expired), cancelling
        their unfinished runs; returns what changed (at most limit)."""

    # -- messages ------------------------------------------------------------------------------

    async def add_message(
        self,
        *,
        session_id: str,
        owner: str | None,
        role: Role,
        content: str,
        now: datetime,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        item: dict[str, Any] | None = None,
    ) -> Message:
        """Append to the conversation of an active session (+ message.added)."""

    async def add_messages(
        self,
        *,
        session_id: str,
        owner: str | None,
        messages: Sequence[NewMessage],
        now: datetime,
        memory: Sequence[MemoryWrite] = (),
    ) -> list[Message]:
        """Append messages in order and set the memory items (session scope: this session's;
        user: the owner's; app: the owner's app), all in one transaction (+ message.added and
        memory.set each). messages may be empty when memory is not."""

    async def list_messages(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 100,
        after_seq: int | None = None,
        before_seq: int | None = None,
        newest_first: bool = False,
        include_removed: bool = False,
    ) -> list[Message]:
        """The conversation by seq: messages not removed (with include_removed, all of them).
        Cost depends on limit, not on the length of the conversation nor on how much of it was
        cleared. Another owner's session reads as empty."""

    async def stored_messages(
        self,
        session_id: str,
        *,
        owner: str | None,
        limit: int,
        before_seq: int | None = None,
        items: bool = True,
    ) -> list[StoredMessage]:
        """The newest limit messages of the conversation (before before_seq), newest first, as
        stored: items and metadata as JSON text, decoded by the caller, the content only of a
        message without an item; no items at all (None) unless items. One indexed read; the
        same messages list_messages gives. Another owner's session reads as empty."""

    async def pop_message(
        self, session_id: str, *, owner: str | None, now: datetime
    ) -> Message | None:
        """Take the newest message out of the conversation of an active session (+
        message.removed, activity); the message as removed, or None (and no change at all) when
        there is none. The row stays, with removed_at."""

    async def clear_messages(self, session_id: str, *, owner: str | None, now: datetime) -> int:
        """Take every message out of the conversation of an active session (+
        messages.cleared, activity); how many were taken out (0: no change at all). The rows
        stay, with removed_at."""

    # -- runs ----------------------------------------------------------------------------------

    async def create_run(
        self,
        run: Run,
        *,
        owner: str | None,
        if_busy: IfBusy,
        now: datetime,
        messages: Sequence[tuple[Role, str, dict[str, Any]]] = (),
        held_by: str | None = None,
        lease_seconds: float = 0.0,
        webhook: tuple[str, str] | None = None,
    ) -> tuple[Run, bool]:
        """Insert a ready run (seq assigned here) into an active session (+ run.created).

        An existing run with the same idempotency key is returned instead, with False. A busy
        session (a ready, running or waiting run) answers by if_busy: reject → SessionBusy;
        enqueue → accepted behind it; interrupt → the unfinished runs are cancelled first.
        messages (role, content, metadata) join the conversation in the same transaction, as
        written by the new run (+ message.added each), so no worker sees the run without them.
        held_by: the caller executes the run itself (a framework's runner), so it starts at once,
        running and leased to that worker for lease_seconds (+ run.started): no worker claims it.
        webhook (url, shape): a pending delivery of the run to url once it ends, in the same
        transaction (see due_webhook_deliveries).
        """

    async def get_run(
        self, run_id: str, *, owner: str | None = None, with_context: bool = True
    ) -> Run | None:
        """The run, or None. ``with_context=False`` leaves ``run.context`` (the assembled
        context, often the largest part of a run) unread: None."""

    async def list_runs(
        self,
        *,
        session_id: str,
        status: RunStatus | None = None,
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = False,
        with_context: bool = True,
    ) -> Page[Run]:
        """Runs of a session by seq; ``with_context=False`` as in get_run."""

    async def run_activity(
        self, session_ids: Sequence[str], *, owner: str
    ) -> dict[str, RunActivity]:
        """For each of owner's sessions given that has runs: its running, waiting and next
        ready run and its newest run, without contexts, in one read."""

    async def claim_run(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
    ) -> Run | None:
        """Atomically take the oldest startable run and lease it to worker_id (+ run.started).

        Startable: a resumed run nobody holds, or a ready run that is the first unfinished run
        of a session with no active run, whose not_before has passed. With agents, only a run
        of one of those agents (the others stay for workers that have them).
        """

    async def claim_next(
        self,
        *,
        worker_id: str,
        now: datetime,
        lease_seconds: float,
        agents: Sequence[str] | None = None,
        look: bool = True,
    ) -> tuple[Run | None, bool]:
        """claim_run, and whether another run was startable when it claimed (True when the
        store cannot tell cheaply): a worker then claims again at once, or waits for news.
        look=False: the caller expects a startable run (its last claim said so), so a store
        that looks before it claims claims at once."""

    async def renew_lease(
        self, run_id: str, *, worker_id: str, now: datetime, lease_seconds: float
    ) -> Run | None:
        """Extend worker_id's lease; None when the worker no longer holds the run."""

    async def update_run(
        self,
        run_id: str,
        *,
        worker_id: str,
        now: datetime,
        output: Any | Unset = UNSET,
        context: dict[str, Any] | Unset = UNSET,
    ) -> Run:
        """Record partial output or the context a held run started from. LeaseLost if not held."""

    async def finish_run(
        self,
        run_id: str,
        *,
        worker_id: str,
        status: RunStatus,
        now: datetime,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        """running → a terminal status (+ run.<status>); open steps are closed as failed."""

    async def suspend_run(
        self, run_id: str, *, worker_id: str, now: datetime, waiting_for: dict[str, Any]
    ) -> Run:
        """running → waiting: the lease is released (+ run.waiting)."""

    async def resume_run(
        self,
        run_id: str,
        *,
        owner: str | None,
        now: datetime,
        input: Any,
        held_by: str | None = None,
        lease_seconds: float = 0.0,
    ) -> Run:
        """waiting → running, unheld, so a worker picks it up (held_by: leased to that worker
        instead, as in create_run); the waiting step completes with input as its output (+
        step.completed, run.resumed). A run whose waiting_for says ``held`` (its caller executes
        it) is resumed held only, any other only unheld: InvalidTransition otherwise."""

    async def cancel_run(
        self, run_id: str, *, owner: str | None, now: datetime, reason: str
    ) -> Run:
        """ready|running|waiting → cancelled (+ run.cancelled); open steps are closed as
        failed(cancelled). InvalidTransition on a finished run."""

    async def release_run(self, run_id: str, *, worker_id: str, now: datetime) -> Run | None:
        """Give a held run back (worker shutting down): running → ready (+ run.requeued)."""

    async def reap_runs(self, *, now: datetime, limit: int = 100) -> list[Run]:
        """Finish what nobody will: expired leases → failed(worker_lost) or ready (retry),
        deadlines passed → timed_out. Returns the runs changed."""

    async def delete_run(self, run_id: str, *, owner: str | None) -> None:
        """Remove a finished run with its steps, memory, messages and events."""

    async def list_owner_runs(
        self,
        *,
        owner: str,
        now: datetime,
        status: RunStatus | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]:
        """Owner's runs across sessions, newest created first, without contexts: created in
        [since, until), query in the goal, agent, input, output or error; stuck keeps the ready
        runs whose agent no worker alive at now has."""

    # -- routing -------------------------------------------------------------------------------

    async def announce_worker(
        self, worker_id: str, *, agents: Sequence[str], now: datetime, expires_at: datetime
    ) -> None:
        """Record that worker_id runs with these agents until expires_at (announced again to
        stay alive); announcements expired by now are dropped."""

    async def retire_worker(self, worker_id: str) -> None:
        """Forget worker_id's announcement (it stopped)."""

    async def live_agents(self, *, now: datetime) -> set[str]:
        """The agents of the workers alive at now, together."""

    async def count_unroutable_runs(self, *, now: datetime) -> list[tuple[str, int]]:
        """(agent, count) of the ready runs, of every owner, whose agent no worker alive at now
        has."""

    async def fail_unroutable_runs(
        self, *, now: datetime, ready_since: datetime, limit: int = 100
    ) -> list[Run]:
        """ready → failed(agent_not_found) (+ run.failed) for runs ready since ready_since
        whose agent no worker alive at now has; the runs changed."""

    # -- steps ---------------------------------------------------------------------------------

    async def start_step(
        self,
        *,
        run_id: str,
        worker_id: str,
        position: int | None,
        kind: StepKind,
        name: str,
        input: Any,
        now: datetime,
        max_steps: int | None = None,
    ) -> Step:
        """Open a step on a held run (+ step.started); position None = its seq (a run its
        caller executes replays nothing). TooManySteps when the run holds max_steps already."""

    async def finish_step(
        self,
        step_id: str,
        *,
        worker_id: str,
        status: StepStatus,
        now: datetime,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
        message: tuple[Role, str, dict[str, Any]] | None = None,
    ) -> Step:
        """Close a step (+ step.<status>); usage rolls up onto the run and session; message, if
        given, is appended to the conversation in the same transaction."""

    async def record_step(
        self,
        *,
        run_id: str,
        worker_id: str,
        position: int | None,
        kind: StepKind,
        name: str,
        input: Any,
        now: datetime,
        status: StepStatus = StepStatus.COMPLETED,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
        message: tuple[Role, str, dict[str, Any]] | None = None,
        max_steps: int | None = None,
    ) -> Step:
        """Open and close a step in one write (notes, messages): one step.<status> event;
        position and max_steps as in start_step."""

    async def add_model_chunk(
        self, step_id: str, *, run_id: str, worker_id: str, index: int, text: str, now: datetime
    ) -> None:
        """Append a step.model_chunk event (a piece of a streamed model answer) for the running
        model_call step step_id of run_id; LeaseLost when the worker no longer holds the run."""

    async def list_steps(self, run_id: str) -> list[Step]:
        """Every step of a run, by seq."""

    async def page_steps(self, run_id: str, *, after_seq: int, limit: int) -> list[Step]:
        """At most limit steps of a run whose seq is above after_seq, by seq."""

    async def list_tool_calls(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        status: StepStatus | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Step]:
        """tool_call steps of a run or of a whole session (the session's tool history)."""

    # -- memory --------------------------------------------------------------------------------

    async def put_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        value: Any,
        owner: str | None,
        now: datetime,
        namespace: tuple[str, ...] = (),
        source_run_id: str | None = None,
        worker_id: str | None = None,
    ) -> MemoryItem:
        """Set a memory item (+ memory.set). Session scope needs an active session; run scope
        an unfinished run in an active session; app scope an owner. With worker_id (a write by
        a run's agent), LeaseLost unless that worker still holds source_run_id."""

    async def get_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        namespace: tuple[str, ...] = (),
        owner: str | None = None,
    ) -> MemoryItem | None:
        """One item, or None. The app scope needs the owner (scope_id is the app)."""

    async def list_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        namespace_prefix: tuple[str, ...] | None = (),
        limit: int = 1000,
        offset: int = 0,
        owner: str | None = None,
    ) -> list[MemoryItem]:
        """Items newest-updated first; namespace_prefix=None means every namespace. The app
        scope needs the owner (scope_id is the app)."""

    async def memory_of_run(
        self, run: Run, *, app: str | None = None, limit: int = 1000
    ) -> dict[MemoryScope, list[MemoryItem]]:
        """What a run starts with, in one read: the memory of its own scope, its session's, its
        owner's (user) and, if app is given, its owner's app's, each in the root namespace
        only, as list_memory gives it (newest-updated first, at most limit of each scope);
        every scope asked for is a key, with [] when it has no item."""

    async def run_start(
        self, run: Run, *, sources: SourceLimits | None = None, memory_limit: int = 1000
    ) -> RunStart | None:
        """What run starts from, in one read (one round trip): its session, the memory
        memory_of_run gives for the session's app (memory_limit per scope), the steps it
        recorded, and with sources the newest of its session's earlier runs (their summaries),
        tool calls and messages, as list_runs, list_tool_calls and list_messages give them
        newest first; None when the session is gone."""

    async def memory_of_sessions(
        self, session_ids: Sequence[str], *, owner: str
    ) -> dict[str, list[MemoryItem]]:
        """The session memory (every namespace) of each of owner's sessions given that has
        any, in one read; items newest-updated first."""

    async def layered_memory(
        self, session_id: str, *, owner: str, app: str, user_namespace: tuple[str, ...]
    ) -> list[MemoryItem]:
        """What a session of owner's app sees, in one read: the session's memory (every
        namespace), the app memory of app (its root namespace) and the owner's user memory in
        user_namespace exactly; each item once, by scope."""

    async def session_tail(
        self,
        session_id: str,
        *,
        owner: str,
        limit: int,
        items: bool,
        app: str,
        user_namespace: tuple[str, ...],
    ) -> tuple[list[StoredMessage], list[MemoryItem]]:
        """What stored_messages (the newest limit messages) and layered_memory give for one
        session of owner's app, in one read: what a framework adapter hands out for it."""

    async def delete_memory(
        self,
        *,
        scope: MemoryScope,
        scope_id: str,
        key: str,
        owner: str | None,
        now: datetime,
        namespace: tuple[str, ...] = (),
        source_run_id: str | None = None,
        worker_id: str | None = None,
    ) -> bool:
        """Remove an item (+ memory.deleted); False if it did not exist. worker_id: as in
        put_memory."""

    async def promote_memory(
        self,
        *,
        run_id: str,
        key: str,
        owner: str | None,
        now: datetime,
        as_key: str | None = None,
        worker_id: str | None = None,
    ) -> MemoryItem:
        """Copy a run's working-memory item into its session's memory, recording the source run
        (+ memory.promoted). worker_id: LeaseLost unless that worker still holds the run."""

    async def list_namespaces(
        self, *, owner: str, prefix: tuple[str, ...] = (), limit: int = 100, offset: int = 0
    ) -> list[tuple[str, ...]]:
        """Distinct user-memory namespaces under prefix."""

    # -- events --------------------------------------------------------------------------------

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]:
        """Events of a session or a run, by id, after after_id."""

    # -- api keys ------------------------------------------------------------------------------

    async def create_api_key(self, key: ApiKey, *, key_hash: str) -> ApiKey:
        """Store a new key under the SHA-256 hash of its secret. AlreadyExists on a taken id or
        hash."""

    async def get_api_key_by_hash(self, key_hash: str) -> ApiKey | None:
        """The key whose secret hashes to key_hash (revoked or not), or None."""

    async def list_api_keys(self, *, owner: str | None = None) -> list[ApiKey]:
        """Every key (of owner, if given), oldest first."""

    async def revoke_api_key(self, key_id: str, *, now: datetime) -> ApiKey | None:
        """Mark a key revoked (idempotent: the first revocation time stays) and end its UI
        sessions, in one transaction; None if unknown."""

    # -- retention -----------------------------------------------------------------------------

    async def prunable_sessions(
        self,
        *,
        closed_before: datetime | None,
        expired_before: datetime | None,
        after_id: str = "",
        limit: int = 100,
    ) -> list[str]:
        """Ids (after after_id, in order) of sessions of every owner closed before
        closed_before, or expired (persisted) with an expiry before expired_before; None leaves
        that kind out."""

    async def finished_temporary_sessions(
        self, *, idle_before: datetime, limit: int = 100
    ) -> list[str]:
        """Ids of temporary sessions (any owner's) without activity since before idle_before
        and without an unfinished run (at most limit, longest idle first)."""

    async def owner_session_ids(self, owner: str, *, limit: int = 100) -> list[str]:
        """Ids of owner's sessions (at most limit)."""

    async def erase_owner_data(self, owner: str) -> dict[str, int]:
        """Delete what owner has outside sessions, in one transaction: user and app memory, the
        events left (user and app memory writes), schedules, webhook deliveries and secrets, UI
        sessions, API keys and assistants; rows deleted by table."""

    async def count_rows(self) -> dict[str, int]:
        """Rows per table (sessions, runs, steps, messages, memory, events, api_keys)."""

    async def export_session(self, session_id: str, *, owner: str | None) -> dict[str, Any]:
        """The session with its runs, steps, messages, memory and events as one JSON value."""

    async def import_session(self, archive: dict[str, Any], *, owner: str | None) -> str:
        """Insert what export_session made (ids kept; events get new ids here), in one
        transaction, as owner when given; the session's id. AlreadyExists if it is here."""

    # -- schedules -----------------------------------------------------------------------------

    async def create_schedule(self, schedule: Schedule) -> Schedule:
        """Insert a schedule (its next_run_at computed by the caller)."""

    async def get_schedule(self, schedule_id: str, *, owner: str | None) -> Schedule | None:
        """The schedule, or None."""

    async def list_schedules(
        self,
        *,
        owner: str,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        after_id: str = "",
        limit: int = 50,
    ) -> list[Schedule]:
        """The owner's schedules by id after after_id, narrowed by the arguments given."""

    async def update_schedule(self, schedule: Schedule) -> Schedule | None:
        """Write the owner's schedule's fields (all but last_run_id and created_at); None when
        it is not there."""

    async def delete_schedule(self, schedule_id: str, *, owner: str) -> bool:
        """Delete the owner's schedule; False when it was not there. Its runs stay."""

    async def due_schedules(self, *, now: datetime, limit: int = 100) -> list[Schedule]:
        """Enabled schedules whose next_run_at has come by now, earliest first."""

    async def fire_schedule(
        self,
        schedule: Schedule,
        *,
        next_run_at: datetime | None,
        run: Run,
        session: Session | None,
        now: datetime,
    ) -> Run | None:
        """Claim the tick schedule.next_run_at (as read by due_schedules) and create its run, in
        one transaction: the schedule's next_run_at moves to next_run_at only if it still is
        that tick and the schedule is enabled, so of many callers exactly one wins; the others
        get None. The winner inserts session first when given (+ session.created), then run
        (enqueued behind the session's unfinished runs; + run.created) and records it as
        last_run_id. A run that cannot be created (a closed or missing session) raises, and
        nothing is written."""

    async def skip_schedule_tick(
        self, schedule: Schedule, *, next_run_at: datetime | None, enabled: bool
    ) -> bool:
        """Claim the tick as fire_schedule does, without a run (and pause the schedule unless
        enabled); False when another caller claimed it first."""

    # -- webhooks ------------------------------------------------------------------------------

    async def due_webhook_deliveries(
        self, *, now: datetime, limit: int = 20
    ) -> list[WebhookDelivery]:
        """Pending deliveries whose run has ended and whose next_attempt_at has come by now,
        earliest first (with their run's session)."""

    async def claim_webhook_delivery(
        self, delivery: WebhookDelivery, *, lease_until: datetime, now: datetime
    ) -> WebhookDelivery | None:
        """Take the delivery for one attempt: its next_attempt_at moves from the value read to
        lease_until and its attempts count up, only if it still is that value (of many callers
        one wins; the others get None). A caller that dies mid-attempt leaves it to be taken
        again after lease_until."""

    async def end_webhook_attempt(
        self,
        delivery: WebhookDelivery,
        *,
        outcome: str,
        next_attempt_at: datetime | None,
        status_code: int | None,
        error: str | None,
        now: datetime,
    ) -> bool:
        """Record the attempt claimed (delivery as claim_webhook_delivery returned it) with a
        run.webhook event, in one transaction: outcome delivered or failed ends the delivery,
        retrying leaves it pending until next_attempt_at. False when the attempt is no longer
        this caller's (its lease passed and another caller took it)."""

    async def webhook_secret(self, owner: str, *, candidate: str, now: datetime) -> str:
        """The owner's webhook signing secret; candidate becomes it when the owner has none."""

    async def rotate_webhook_secret(self, owner: str, *, secret: str, now: datetime) -> str:
        """Replace the owner's webhook signing secret with secret."""

    # -- ui sessions ---------------------------------------------------------------------------

    async def create_ui_session(
        self, token_hash: str, *, key: ApiKey, created_at: datetime, expires_at: datetime
    ) -> None:
        """Store a web UI session of key (its owner's) under the SHA-256 hash of its token;
        sessions expired by created_at are dropped in the same transaction."""

    async def ui_session_owner(self, token_hash: str, *, now: datetime) -> str | None:
        """The owner of the UI session whose token hashes to token_hash, or None when there is
        none: never made, ended, expired by now, or its key revoked."""

    async def end_ui_session(self, token_hash: str) -> None:
        """End a UI session (idempotent)."""

    # -- checkpoints of graphs -----------------------------------------------------------------

    async def put_checkpoint(
        self,
        checkpoint: Checkpoint,
        *,
        owner: str | None,
        now: datetime,
        values: Sequence[ChannelValue] = (),
        conversation: Sequence[ConversationRanges] = (),
    ) -> dict[str, tuple[tuple[int, int], ...]]:
        """Store a checkpoint of an active session (replacing one with the same ids) with the
        channel values it brings; the new messages of its conversation values join the
        session's conversation in the same transaction. The ranges each conversation value
        holds in the end, by channel."""

    async def put_checkpoint_writes(
        self,
        *,
        session_id: str,
        checkpoint_ns: str,
        checkpoint_id: str,
        writes: Sequence[PendingWrite],
        owner: str | None,
        now: datetime,
    ) -> None:
        """Store pending writes of a checkpoint: a stored one is kept, a special one (idx < 0)
        replaced."""

    async def load_checkpoints(
        self,
        *,
        owner: str,
        session_id: str | None = None,
        checkpoint_ns: str | None = None,
        checkpoint_id: str | None = None,
        before_id: str | None = None,
        limit: int = 1,
        with_values: bool = True,
    ) -> list[LoadedCheckpoint]:
        """The owner's checkpoints, newest id first, narrowed by the arguments given, with their
        channel values and pending writes (unless not with_values)."""

    async def delete_checkpoints_of_runs(self, run_ids: Sequence[str], *, owner: str) -> None:
        """Delete the owner's checkpoints made by these runs, with their writes."""

    async def prune_checkpoints(
        self, session_id: str, *, owner: str, keep_latest: bool, now: datetime
    ) -> None:
        """Delete a session's checkpoints (all, or all but the newest of each namespace)."""

    async def copy_checkpoints(
        self, source_id: str, target_id: str, *, owner: str, now: datetime
    ) -> None:
        """Copy one session's checkpoints into another, with the conversation they hold."""

    # -- assistants ----------------------------------------------------------------------------

    async def create_assistant(self, assistant: Assistant) -> Assistant:
        """Insert the assistant and its first version (assistant.version). AlreadyExists if
        its id is taken."""

    async def get_assistant(self, assistant_id: str, *, owner: str) -> Assistant | None:
        """The owner's assistant as its runs see it (the chosen version), or None."""

    async def list_assistants(self, *, owner: str, limit: int = 1000) -> list[Assistant]:
        """The owner's assistants, oldest first (at most limit)."""

    async def update_assistant(
        self, assistant_id: str, *, owner: str, changes: Mapping[str, Any], now: datetime
    ) -> Assistant:
        """Add a version: the chosen one with changes (graph_id, name, description, config,
        context, metadata) applied, numbered after the last; it becomes the chosen one.
        NotFound if the owner has no such assistant."""

    async def set_assistant_version(
        self, assistant_id: str, version: int, *, owner: str, now: datetime
    ) -> Assistant:
        """Make an existing version the one runs use. NotFound for an unknown assistant or
        version."""

    async def list_assistant_versions(
        self, assistant_id: str, *, owner: str, limit: int, offset: int = 0
    ) -> list[Assistant]:
        """The assistant's versions, newest first. NotFound for an unknown assistant."""

    async def delete_assistant(self, assistant_id: str, *, owner: str) -> None:
        """Remove the assistant and its versions. NotFound for an unknown one."""
