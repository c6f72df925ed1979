"""Workers: claim ready runs, execute up to N at once, reap what other workers lost.

A worker runs embedded (started by the runtime or ``tether serve``) or alone (``tether
worker``). Many workers, in one process or many, may share a store: claiming is atomic, leases
are renewed by heartbeats, and any worker's reaper finishes the runs of a worker that died.
A worker claims only runs of the agents it has, and announces them in the store while it runs;
a run whose agent no running worker has stays ready, and fails with agent_not_found once it
waited ``unroutable_after`` seconds. Every worker also fires due schedules (runtime.schedules)
and delivers the webhooks of ended runs (runtime.webhooks).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import logging
import os
import socket
from datetime import datetime, timedelta

from tether.core.clock import Clock, SystemClock
from tether.core.errors import StoreError
from tether.core.ids import new_id
from tether.core.run import Run
from tether.runtime import log_context, stateless
from tether.runtime.agent import AgentRegistry
from tether.runtime.executor import Executor, ModelResolver
from tether.runtime.instruments import Instruments, installed
from tether.runtime.models.catalog import model_catalog
from tether.runtime.schedules import fire_due_schedules
from tether.runtime.settings import RuntimeSettings
from tether.runtime.webhooks import WebhookPolicy, deliver_due_webhooks
from tether.store.base import Store
from tether.store.changes import RUNS_TOPIC

log = logging.getLogger("tether.worker")


def default_worker_id() -> str:
    """host:pid:random, so a reader of the database can tell who held a run."""
    return f"{socket.gethostname()}:{os.getpid()}:{new_id()[-8:]}"


class Worker:
    """Claims and executes runs until stopped."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        *,
        clock: Clock | None = None,
        settings: RuntimeSettings | None = None,
        models: ModelResolver | None = None,
        worker_id: str | None = None,
        reap: bool = True,
        instruments: Instruments | None = None,
    ) -> None:
        self.store = store
        self.settings = settings or RuntimeSettings()
        self.clock = clock or SystemClock()
        self.worker_id = worker_id or default_worker_id()
        self._instruments = instruments
        self._executor = Executor(
            store,
            agents,
            clock=self.clock,
            settings=self.settings,
            # Without models=, the settings every entry point reads (TETHER_MODEL_*).
            models=model_catalog() if models is None else models,
            instruments=instruments,
        )
        self._agents = agents
        self._renew_at: datetime | None = None
        self._claims = itertools.count(1)
        self._reap = reap
        self._active: set[asyncio.Task[None]] = set()
        self._stopping = asyncio.Event()
        self._main: asyncio.Task[None] | None = None

    @property
    def active_runs(self) -> int:
        return len(self._active)

    def start(self) -> asyncio.Task[None]:
        """Run in the background of the current event loop."""
        if self._main is None:
            self._main = asyncio.get_running_loop().create_task(self.run(), name="tether worker")
        return self._main

    async def run(self) -> None:
        """Claim and execute until stop() is called."""
        await self._announce()
        tasks = [
            asyncio.create_task(self._claim_loop(), name="claim"),
            asyncio.create_task(self._announce_loop(), name="announce"),
        ]
        if self._reap:
            tasks.append(asyncio.create_task(self._reap_loop(), name="reaper"))
        tasks.append(asyncio.create_task(self._schedule_loop(), name="schedules"))
        tasks.append(asyncio.create_task(self._webhook_loop(), name="webhooks"))
        try:
            await self._stopping.wait()
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(asyncio.CancelledError):
                    await task

    async def stop(self, grace: float | None = None) -> None:
        """Stop claiming, let running runs finish within grace seconds, then hand the rest
        back to the queue (they resume elsewhere, replaying what they recorded)."""
        self._stopping.set()
        if self._main is not None:
            with contextlib.suppress(asyncio.CancelledError):
                await self._main
        active = set(self._active)
        if active:
            grace = self.settings.shutdown_grace if grace is None else grace
            _, pending = await asyncio.wait(active, timeout=grace)
            for task in pending:
                task.cancel()
            for task in pending:
                with contextlib.suppress(asyncio.CancelledError):
                    await task
        try:
            await self.store.retire_worker(self.worker_id)
        except StoreError as exc:  # its announcement expires by itself
            log.warning("could not retire worker %s: %s", self.worker_id, exc)
        log.info("worker %s stopped", self.worker_id)

    async def _announce(self) -> None:
        """Tell the store which agents this worker has, for one lease period (again once a
        third of it passed, by the worker's clock)."""
        now = self.clock.now()
        if self._renew_at is not None and now < self._renew_at:
            return
        self._renew_at = now + timedelta(seconds=self.settings.lease_seconds / 3)
        try:
            await self.store.announce_worker(
                self.worker_id,
                agents=list(self._agents),
                now=now,
                expires_at=now + timedelta(seconds=self.settings.lease_seconds),
            )
        except StoreError as exc:
            log.warning("announcing worker %s failed, retrying: %s", self.worker_id, exc)

    async def _announce_loop(self) -> None:
        while True:
            await asyncio.sleep(self.settings.lease_seconds / 3)
            await self._announce()

    async def _claim_loop(self) -> None:
        settings = self.settings
        changes = self.store.changes
        more = False  # the last claim said another run was startable: claim without a look
        while not self._stopping.is_set():
            cursor = changes.cursor()
            if len(self._active) < settings.concurrency:
                try:
                    run, more = await self.store.claim_next(
                        # One holder id per claim: guards then tell executions apart even
                        # when this worker claims a run it held (and lost) before.
                        worker_id=f"{self.worker_id}/{next(self._claims)}",
                        now=self.clock.now(),
                        lease_seconds=settings.lease_seconds,
                        agents=list(self._agents),
                        look=not more,
                    )
                except StoreError as exc:
                    log.warning("claiming failed, retrying: %s", exc)
                    run, more = None, False
                except Exception:  # never let the claim loop die: log and keep going
                    log.exception("claiming crashed, retrying")
                    run, more = None, False
                if run is not None:
                    task = asyncio.create_task(self._executor.execute(run), name=f"exec {run.id}")
                    self._active.add(task)
                    task.add_done_callback(functools.partial(self._done, run))
                if more:
                    continue
            # Nothing more to claim as of the last claim (or no free slot): a run that
            # becomes claimable after the cursor wakes this wait.
            more = False
            await changes.wait([RUNS_TOPIC], settings.poll_interval, since=cursor)

    def _done(self, run: Run, task: asyncio.Task[None]) -> None:
        full = len(self._active) >= self.settings.concurrency
        self._active.discard(task)
        if full:  # the claim loop stopped claiming: a slot is free again
            self.store.changes.publish([RUNS_TOPIC])
        if not task.cancelled() and task.exception() is not None:
            log.error(
                "execution of run %s crashed",
                run.id,
                exc_info=task.exception(),
                extra=log_context.ids(run),
            )

    async def _fail_unroutable(self) -> list[Run]:
        """Fail the runs that waited too long for a worker with their agent."""
        waited = self.settings.unroutable_after
        if waited is None:
            return []
        await self._announce()  # this worker is alive whatever the clock did meanwhile
        now = self.clock.now()
        failed = await self.store.fail_unroutable_runs(
            now=now, ready_since=now - timedelta(seconds=waited)
        )
        for run in failed:
            log.warning(
                "run %s failed: no running worker has agent %r",
                run.id,
                run.agent,
                extra=log_context.ids(run),
            )
        return failed

    async def _reap_loop(self) -> None:
        settings = self.settings
        loop = asyncio.get_running_loop()
        next_sweep = loop.time()
        while True:
            try:
                reaped = await self.store.reap_runs(now=self.clock.now())
                for run in reaped:
                    log.info(
                        "reaped run %s: now %s",
                        run.id,
                        run.status.value,
                        extra=log_context.ids(run),
                    )
                instruments = self._instruments or installed()
                instruments.runs_reaped(reaped)  # at once: a failure below must not lose them
                instruments.runs_reaped(await self._fail_unroutable())
                if loop.time() >= next_sweep:
                    await self.store.expire_sessions(now=self.clock.now())
                    await stateless.sweep(
                        self.store, self.clock, idle_seconds=settings.sweep_interval
                    )
                    next_sweep = loop.time() + settings.sweep_interval
            except StoreError as exc:
                log.warning("reaping failed, retrying: %s", exc)
            except Exception:  # never let the reaper die: log and keep going
                log.exception("reaping crashed, retrying")
            await asyncio.sleep(settings.reap_interval)

    async def _schedule_loop(self) -> None:
        """Fire the schedules whose tick has come (any worker may: each tick fires once)."""
        while True:
            try:
                for run in await fire_due_schedules(self.store, now=self.clock.now()):
                    log.info(
                        "schedule %s created run %s",
                        run.metadata.get("schedule_id"),
                        run.id,
                        extra=log_context.ids(run),
                    )
            except StoreError as exc:
                log.warning("firing schedules failed, retrying: %s", exc)
            except Exception:  # never let the scheduler die: log and keep going
                log.exception("firing schedules crashed, retrying")
            await asyncio.sleep(self.settings.schedule_interval)

    async def _webhook_loop(self) -> None:
        """Deliver the webhooks of ended runs, and retry the ones whose time has come."""
        policy = WebhookPolicy(self.settings.webhook_allow)
        while True:
            try:
                await deliver_due_webhooks(self.store, clock=self.clock, policy=policy)
            except StoreError as exc:
                log.warning("delivering webhooks failed, retrying: %s", exc)
            except Exception:  # never let the deliveries die: log and keep going
                log.exception("delivering webhooks crashed, retrying")
            await asyncio.sleep(self.settings.webhook_interval)
