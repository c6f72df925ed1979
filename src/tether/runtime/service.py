"""Service: the library API of tether, in one async facade over a Store.

Every edge (the sync facade, the HTTP API, the CLI, the UI) is a thin layer over this class. It
validates input, applies exact expiry on reads, scopes everything to one owner, and leaves
atomicity to the store. ``for_owner`` gives the same service seen by another owner.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from tether.core.clock import Clock, SystemClock
from tether.core.errors import NotFound, UsageError
from tether.core.event import TERMINAL_RUN_EVENTS, Event
from tether.core.ids import new_id
from tether.core.memory import MemoryItem, MemoryScope
from tether.core.message import Role
from tether.core.page import Page
from tether.core.run import (
    HeldLease,
    IfBusy,
    Run,
    RunOptionFields,
    RunOptions,
)
from tether.core.stats import RunStats
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step
from tether.runtime import limits
from tether.runtime.agent import AgentRegistry, default_registry
from tether.runtime.held_ops import HeldRunOps, holder_id, new_holder
from tether.runtime.instruments import Instruments, installed
from tether.runtime.message_ops import MessageOps
from tether.runtime.run_shapes import webhook_shape
from tether.runtime.schedules import ScheduleOps
from tether.runtime.search_ops import SearchOps
from tether.runtime.session_ops import SessionOps
from tether.runtime.settings import RuntimeSettings
from tether.runtime.webhooks import WebhookPolicy, new_secret
from tether.store.base import Store
from tether.store.changes import run_status_topic, run_topic, session_topic
from tether.store.cursors import decode_cursor, encode_cursor

if TYPE_CHECKING:
    from tether.runtime.executor import ModelResolver


class Service(SessionOps, SearchOps, MessageOps, ScheduleOps, HeldRunOps):
    """Sessions, runs, steps, memory, tool history, context and events for one owner (and
    schedules: runtime.schedules; runs their caller executes: runtime.held_ops)."""

    def __init__(
        self,
        store: Store,
        *,
        agents: AgentRegistry | None = None,
        clock: Clock | None = None,
        settings: RuntimeSettings | None = None,
        models: ModelResolver | None = None,
        owner: str | None = None,
        instruments: Instruments | None = None,
    ) -> None:
        self.store = store
        self.agents = agents or _builtin_agents()
        self.clock = clock or SystemClock()
        self.settings = settings or RuntimeSettings()
        self.models = models
        self.owner = limits.owner(self.settings.owner if owner is None else owner)
        #: Where runs created here are reported (None: the instruments installed when it
        #: happens).
        self.instruments = instruments

    def for_owner(self, owner: str) -> Service:
        """The same service, acting for another owner."""
        return Service(
            self.store,
            agents=self.agents,
            clock=self.clock,
            settings=self.settings,
            models=self.models,
            owner=owner,
            instruments=self.instruments,
        )

    async def close(self) -> None:
        """Close the store (every service sharing it becomes unusable)."""
        await self.store.close()

    # -- runs ----------------------------------------------------------------------------------

    async def create_run(
        self,
        session_id: str,
        goal: str,
        *,
        options: RunOptions | None = None,
        messages: Sequence[tuple[Role | str, str, dict[str, Any] | None]] = (),
        held_by: str | None = None,
        lease_seconds: float | None = None,
        **fields: Unpack[RunOptionFields],
    ) -> Run:
        """Accept a new run (ready) in an active session; a worker executes it. Its options are
        options, or the defaults with fields set (see RunOptions). messages (role, content,
        metadata) join the conversation with it, atomically, as its own. held_by: the caller
        executes it (start_held_run), so it starts at once, leased to that worker id for
        lease_seconds (default: the settings'), and its agent need not be one of this
        service's."""
        opts = RunOptions.of(options, **fields)
        agent_name = opts.agent or self.settings.default_agent
        if held_by is None:
            self.agents.get(agent_name)
        elif opts.if_busy in (IfBusy.ENQUEUE, IfBusy.ENQUEUE.value):
            raise UsageError("a run its caller executes starts at once: if_busy cannot be enqueue")
        now = self.clock.now()
        run = Run(
            id=new_id(),
            session_id=session_id,
            owner=self.owner,
            seq=0,
            agent=agent_name,
            goal=limits.goal(goal),
            status=RunStatus.READY,
            created_at=now,
            updated_at=now,
            input=limits.mapping("input", opts.input),
            max_attempts=limits.positive_int("max_attempts", opts.max_attempts, 100),
            metadata=limits.mapping("metadata", opts.metadata),
            timeout_seconds=limits.seconds("timeout_seconds", opts.timeout_seconds),
            wait_timeout_seconds=limits.seconds("wait_timeout_seconds", opts.wait_timeout_seconds),
            idempotency_key=limits.key("idempotency_key", opts.idempotency_key),
            not_before=(
                None
                if not opts.after_seconds
                else now
                + timedelta(seconds=limits.seconds("after_seconds", opts.after_seconds) or 0)
            ),
        )
        written = [
            (
                limits.enum(Role, role, "role") or Role.USER,
                limits.content(content),
                limits.mapping("metadata", metadata),
            )
            for role, content, metadata in messages
        ]
        chosen = limits.enum(IfBusy, opts.if_busy, "if_busy") or IfBusy.REJECT
        webhook = None
        if opts.webhook is not None:
            policy = WebhookPolicy(self.settings.webhook_allow)
            await asyncio.to_thread(policy.check, opts.webhook)
            webhook = (opts.webhook, webhook_shape(run))
        with (self.instruments or installed()).creating_run(run) as traceparent:
            created, _ = await self.store.create_run(
                replace(run, traceparent=traceparent),
                owner=self.owner,
                if_busy=chosen,
                now=now,
                messages=written,
                held_by=held_by,
                lease_seconds=lease_seconds or self.settings.lease_seconds,
                webhook=webhook,
            )
        return created

    async def webhook_secret(self, *, rotate: bool = False) -> str:
        """The secret the owner's webhooks are signed with (made on first use); with rotate, a
        new one (the old one no longer signs anything)."""
        now = self.clock.now()
        if rotate:
            return await self.store.rotate_webhook_secret(self.owner, secret=new_secret(), now=now)
        return await self.store.webhook_secret(self.owner, candidate=new_secret(), now=now)

    async def get_run(self, run_id: str) -> Run:
        run = await self.store.get_run(run_id, owner=self.owner)
        if run is None:
            raise NotFound("run", run_id)
        return run

    async def _run_without_context(self, run_id: str) -> Run:
        run = await self.store.get_run(run_id, owner=self.owner, with_context=False)
        if run is None:
            raise NotFound("run", run_id)
        return run

    async def list_runs(
        self,
        session_id: str,
        *,
        status: RunStatus | str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = False,
        with_context: bool = True,
    ) -> Page[Run]:
        """The session's runs by seq (Run 1, 2, 3 …); with_context=False leaves their
        assembled contexts unread (None)."""
        await self.get_session(session_id)
        return await self.store.list_runs(
            session_id=session_id,
            status=limits.enum(RunStatus, status, "status"),
            limit=limits.page_size(limit),
            cursor=cursor,
            newest_first=newest_first,
            with_context=with_context,
        )

    async def list_all_runs(
        self,
        *,
        status: RunStatus | str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]:
        """The owner's runs across sessions, newest first, without their contexts: created in
        [since, until), query in the goal, agent, input, output or error; stuck = only the
        ready runs whose agent no running worker has (they fail after unroutable_after)."""
        return await self.store.list_owner_runs(
            owner=self.owner,
            now=self.clock.now(),
            status=limits.enum(RunStatus, status, "status"),
            agent=limits.text("agent", agent, limits.MAX_KEY) if agent else None,
            since=limits.moment("since", since),
            until=limits.moment("until", until),
            query=limits.text("query", query, limits.MAX_KEY) if query else None,
            stuck=stuck,
            limit=limits.page_size(limit),
            cursor=cursor,
        )

    async def live_agents(self) -> set[str]:
        """The agents the running workers (of every process sharing the store) have."""
        return await self.store.live_agents(now=self.clock.now())

    async def run_stats(self, *, hours: int = 24) -> RunStats:
        """The owner's runs of the last hours whole hours (the current one included), counted
        by hour and status, with durations by agent, tokens by day and model, failing tools."""
        if not 1 <= hours <= MAX_STATS_HOURS:
            raise UsageError(f"hours must be between 1 and {MAX_STATS_HOURS}, not {hours}")
        hour = self.clock.now().replace(minute=0, second=0, microsecond=0)
        since = hour - timedelta(hours=hours - 1)
        return await self.store.run_stats(
            owner=self.owner, since=since, until=hour + timedelta(hours=1)
        )

    async def wait_run(self, run_id: str, *, timeout: float | None = None) -> Run:
        """Wait until the run is terminal or waiting for a person (or timeout passes); the run
        as it then is."""
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        changes = self.store.changes
        while True:
            cursor = changes.cursor()
            # Status checks skip the run's (possibly large) context; the answer has it.
            run = await self._run_without_context(run_id)
            if run.is_terminal or run.status is RunStatus.WAITING:
                run = await self.get_run(run_id)
                if run.is_terminal or run.status is RunStatus.WAITING:
                    return run
            pause = self.settings.poll_interval
            if deadline is not None:
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return run
                pause = min(pause, remaining)
            await changes.wait([run_status_topic(run_id)], pause, since=cursor)

    async def cancel_run(self, run_id: str, *, reason: str = "cancelled by request") -> Run:
        """Cancel a ready, running or waiting run; InvalidTransition if it already finished."""
        return await self.store.cancel_run(
            run_id, owner=self.owner, now=self.clock.now(), reason=limits.reason(reason)
        )

    async def resume_run(self, run_id: str, input: Any = None) -> Run:
        """Continue a waiting run with what it asked for; a worker goes on with it (a run its
        caller executes is resumed by resume_held_run: InvalidTransition)."""
        return await self.store.resume_run(
            run_id, owner=self.owner, now=self.clock.now(), input=limits.json_value(input)
        )

    # -- runs their caller executes (runtime.held_run) -----------------------------------------

    async def start_held_run(
        self,
        session_id: str,
        goal: str,
        *,
        agent: str,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_busy: IfBusy | str = IfBusy.REJECT,
        timeout_seconds: float | None = None,
        lease_seconds: float | None = None,
    ) -> HeldLease:
        """A new run of the session that its caller executes (a framework's runner): running at
        once, leased to a new holder (the secret every write of it gives), never claimed by a
        worker. A busy session answers by if_busy: reject (SessionBusy) or interrupt."""
        holder = new_holder()
        lease = limits.held_lease(lease_seconds, self.settings.lease_seconds)
        run = await self.create_run(
            session_id,
            goal,
            agent=limits.key("agent", agent) or "",
            input=input,
            metadata=metadata,
            if_busy=if_busy,
            timeout_seconds=timeout_seconds,
            held_by=holder_id(self.owner, holder),
            lease_seconds=lease,
        )
        return HeldLease(run, holder, lease)

    async def delete_run(self, run_id: str) -> None:
        """Remove a finished run and what it wrote."""
        await self.store.delete_run(run_id, owner=self.owner)

    async def list_steps(self, run_id: str) -> list[Step]:
        await self._run_without_context(run_id)
        return await self.store.list_steps(run_id)

    async def page_steps(
        self, run_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[Step]:
        """A page of the run's steps by seq, read from the store a page at a time."""
        size = limits.page_size(limit)
        after = 0 if cursor is None else decode_cursor(cursor, int)[0]
        await self._run_without_context(run_id)
        rows = await self.store.page_steps(run_id, after_seq=after, limit=size + 1)
        more = len(rows) > size
        return Page(rows[:size], encode_cursor(rows[size - 1].seq) if more else None)

    async def list_tool_calls(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        status: StepStatus | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Step]:
        """Tool history of one run, or of a whole session (aggregated over its runs); since and
        until bound when the calls started (since included, until not)."""
        if session_id is not None:
            await self.get_session(session_id)
        elif run_id is not None:
            await self._run_without_context(run_id)
        else:
            raise UsageError("give a session_id or a run_id")
        return await self.store.list_tool_calls(
            session_id=session_id,
            run_id=run_id or None,
            tool=tool or None,
            status=limits.enum(StepStatus, status, "status"),
            since=limits.moment("since", since),
            until=limits.moment("until", until),
            limit=limits.page_size(limit),
            cursor=cursor,
            newest_first=newest_first,
        )

    # -- memory --------------------------------------------------------------------------------

    async def list_session_memory(self, session_id: str) -> list[MemoryItem]:
        await self.get_session(session_id)
        return await self.store.list_memory(scope=MemoryScope.SESSION, scope_id=session_id)

    async def get_session_memory(self, session_id: str, key: str) -> MemoryItem:
        await self.get_session(session_id)
        return _found(
            await self.store.get_memory(scope=MemoryScope.SESSION, scope_id=session_id, key=key),
            key,
        )

    async def set_session_memory(self, session_id: str, key: str, value: Any) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.SESSION,
            scope_id=session_id,
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
        )

    async def delete_session_memory(self, session_id: str, key: str) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.SESSION,
            scope_id=session_id,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_run_memory(self, run_id: str) -> list[MemoryItem]:
        await self._run_without_context(run_id)
        return await self.store.list_memory(scope=MemoryScope.RUN, scope_id=run_id)

    async def promote_memory(
        self, run_id: str, key: str, *, as_key: str | None = None
    ) -> MemoryItem:
        """Copy a run's working-memory item into its session's memory (recorded with the run)."""
        return await self.store.promote_memory(
            run_id=run_id,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
            as_key=limits.key("as_key", as_key),
        )

    async def list_user_memory(
        self, *, namespace: tuple[str, ...] | None = (), limit: int = 1000, offset: int = 0
    ) -> list[MemoryItem]:
        return await self.store.list_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            namespace_prefix=None if namespace is None else limits.namespace(namespace),
            limit=limit,
            offset=offset,
        )

    async def get_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> MemoryItem:
        return _found(
            await self.store.get_memory(
                scope=MemoryScope.USER,
                scope_id=self.owner,
                key=key,
                namespace=limits.namespace(namespace),
            ),
            key,
        )

    async def set_user_memory(
        self, key: str, value: Any, *, namespace: tuple[str, ...] = ()
    ) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
            namespace=limits.namespace(namespace),
        )

    async def delete_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.USER,
            scope_id=self.owner,
            key=key,
            owner=self.owner,
            now=self.clock.now(),
            namespace=limits.namespace(namespace),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_app_memory(self, app: str) -> list[MemoryItem]:
        """Memory every session of the owner's app shares, newest first."""
        return await self.store.list_memory(
            scope=MemoryScope.APP, scope_id=limits.app(app) or "", owner=self.owner
        )

    async def get_app_memory(self, app: str, key: str) -> MemoryItem:
        return _found(
            await self.store.get_memory(
                scope=MemoryScope.APP, scope_id=limits.app(app) or "", key=key, owner=self.owner
            ),
            key,
        )

    async def set_app_memory(self, app: str, key: str, value: Any) -> MemoryItem:
        return await self.store.put_memory(
            scope=MemoryScope.APP,
            scope_id=limits.app(app) or "",
            key=limits.key("key", key) or "",
            value=limits.json_value(value),
            owner=self.owner,
            now=self.clock.now(),
        )

    async def delete_app_memory(self, app: str, key: str) -> None:
        deleted = await self.store.delete_memory(
            scope=MemoryScope.APP,
            scope_id=limits.app(app) or "",
            key=key,
            owner=self.owner,
            now=self.clock.now(),
        )
        if not deleted:
            raise NotFound("memory item", key)

    async def list_user_namespaces(
        self, *, prefix: tuple[str, ...] = (), limit: int = 100, offset: int = 0
    ) -> list[tuple[str, ...]]:
        return await self.store.list_namespaces(
            owner=self.owner, prefix=prefix, limit=limit, offset=offset
        )

    # -- events --------------------------------------------------------------------------------

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]:
        await self._check_stream_target(session_id, run_id)
        return await self.store.list_events(
            session_id=session_id, run_id=run_id, after_id=after_id, limit=limits.page_size(limit)
        )

    async def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncGenerator[Event | None, None]:
        """Events as they commit, from after after_id, each exactly once and in order. Yields
        None every heartbeat seconds of silence. A run's stream ends after its terminal event;
        any stream ends when its session or run is deleted."""
        await self._check_stream_target(session_id, run_id)
        topic = run_topic(run_id) if run_id else session_topic(session_id or "")
        changes = self.store.changes
        loop = asyncio.get_running_loop()
        last = after_id or 0
        quiet_since = loop.time()
        while True:
            cursor = changes.cursor()
            events = await self.store.list_events(
                session_id=session_id if run_id is None else None,
                run_id=run_id,
                after_id=last,
            )
            for event in events:
                last = event.id
                yield event
                if run_id is not None and event.type in TERMINAL_RUN_EVENTS:
                    return
            if events:
                quiet_since = loop.time()
                continue
            if run_id is not None:
                run = await self.store.get_run(run_id, owner=self.owner, with_context=False)
                if run is None:
                    return  # deleted meanwhile: nothing more will come
                if run.is_terminal:
                    # The terminal event commits with the status: it may have landed just
                    # after the read above, so read once more before ending.
                    for event in await self.store.list_events(run_id=run_id, after_id=last):
                        yield event
                        if event.type in TERMINAL_RUN_EVENTS:
                            break
                    return
            elif await self.store.get_session(session_id or "", owner=self.owner) is None:
                return  # deleted meanwhile: nothing more will come
            pause = self.settings.poll_interval
            if heartbeat is not None:
                pause = min(pause, max(0.0, quiet_since + heartbeat - loop.time()))
            await changes.wait([topic], pause, since=cursor)
            if heartbeat is not None and loop.time() - quiet_since >= heartbeat:
                quiet_since = loop.time()
                yield None

    async def _check_stream_target(self, session_id: str | None, run_id: str | None) -> None:
        if (session_id is None) == (run_id is None):
            raise UsageError("give exactly one of session_id and run_id")
        if session_id is not None:
            await self.get_session(session_id)
        else:
            await self._run_without_context(run_id or "")


#: The longest period the overview aggregates (31 days).
MAX_STATS_HOURS = 31 * 24


def _found(item: MemoryItem | None, key: str) -> MemoryItem:
    if item is None:
        raise NotFound("memory item", key)
    return item


def _builtin_agents() -> AgentRegistry:
    from tether.runtime import builtin

    builtin.register(default_registry)
    return default_registry
