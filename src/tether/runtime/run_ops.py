"""Runs: the Service's operations on them (create, read, wait for, cancel, resume, delete),
the owner's webhook secret, live agents and run statistics."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any, Unpack

from tether.core.clock import Clock
from tether.core.errors import NotFound, UsageError
from tether.core.ids import new_id
from tether.core.message import Role
from tether.core.page import Page
from tether.core.run import HeldLease, IfBusy, Run, RunOptionFields, RunOptions
from tether.core.session import Session
from tether.core.status import RunStatus
from tether.runtime import limits
from tether.runtime.agent import AgentRegistry
from tether.runtime.held_ops import holder_id, new_holder
from tether.runtime.instruments import Instruments, installed
from tether.runtime.run_shapes import webhook_shape
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.changes import run_status_topic

if TYPE_CHECKING:  # the overview's record: made by the store, when asked
    from tether.core.stats import RunStats

#: The longest period the overview aggregates (31 days).
MAX_STATS_HOURS = 31 * 24


class RunOps:
    """The run operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str
    agents: AgentRegistry
    settings: RuntimeSettings
    instruments: Instruments | None
    get_session: Callable[[str], Awaitable[Session]]

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
            from tether.runtime.webhooks import WebhookPolicy

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
        from tether.runtime.webhooks import new_secret

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
