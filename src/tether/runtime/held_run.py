"""HeldRun: a run its caller executes itself (a framework's runner), recorded as it goes, on
any backend: the Service in-process or the HTTP client (``tether.connect``).

It starts running at once, held by this caller (a holder secret the backend hands out), so no
worker claims it; a heartbeat in this process renews its lease while it is held, so a caller
that dies leaves the run to the reaper (failed: worker_lost) like any worker's run. Steps are
recorded as they end; waiting for a person lets go of the run until ``resume``. A run cancelled
from outside (the UI, the CLI) makes the next write raise LeaseLost: the caller stops
recording it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from typing import Any

from tether.core.errors import LeaseLost, NotFound, TetherError
from tether.core.run import ErrorInfo, HeldLease, IfBusy, Run
from tether.core.status import RunStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.runtime.backend import Backend
from tether.store.base import UNSET, Unset

log = logging.getLogger("tether.held_run")


class HeldRun:
    """One run of a session, held by this caller while it executes it."""

    def __init__(self, backend: Backend, lease: HeldLease) -> None:
        self.run = lease.run
        self._backend = backend
        self._holder = lease.holder
        self._lease_seconds = lease.lease_seconds
        self._heartbeat: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._beat(), name=f"tether-held-run-{lease.run.id}"
        )

    @classmethod
    async def start(
        cls,
        backend: Backend,
        session_id: str,
        goal: str,
        *,
        agent: str,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_busy: IfBusy = IfBusy.REJECT,
        lease_seconds: float | None = None,
    ) -> HeldRun:
        """A new run of the session, running at once; another run of it going or waiting is
        refused (SessionBusy) or, with IfBusy.INTERRUPT, cancelled first. lease_seconds: how
        long it stays held if this process stops (default: the backend's lease)."""
        lease = await backend.start_held_run(
            session_id,
            goal,
            agent=agent,
            input=input,
            metadata=metadata,
            if_busy=if_busy,
            lease_seconds=lease_seconds,
        )
        return cls(backend, lease)

    @classmethod
    async def resume(
        cls, backend: Backend, run_id: str, input: Any = None, *, lease_seconds: float | None = None
    ) -> HeldRun:
        """A waiting run continued by its caller; its steps go on after the ones it has."""
        return cls(
            backend, await backend.resume_held_run(run_id, input, lease_seconds=lease_seconds)
        )

    async def step(
        self,
        kind: StepKind,
        name: str,
        input: Any = None,
        *,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
    ) -> Step:
        """Record a step that ended (failed when error is given)."""
        return await self._backend.record_held_step(
            self.run.id, self._holder, kind, name, input, output=output, error=error, usage=usage
        )

    async def wait(self, kind: str, prompt: str, **details: Any) -> Run:
        """running → waiting for a person (kind input or approval: a wait_for_<kind> step,
        completed by ``resume`` with what they sent); the run is let go."""
        await self._stop()
        self.run = await self._backend.suspend_held_run(
            self.run.id, self._holder, kind, prompt, details
        )
        return self.run

    async def finish(
        self,
        status: RunStatus = RunStatus.COMPLETED,
        *,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        """running → status (completed, failed, cancelled, timed_out)."""
        await self._stop()
        self.run = await self._backend.finish_held_run(
            self.run.id, self._holder, status, output=output, error=error
        )
        return self.run

    async def _beat(self) -> None:
        every = self._lease_seconds / 3
        while True:
            await asyncio.sleep(every)
            try:
                await self._backend.renew_held_run(
                    self.run.id, self._holder, lease_seconds=self._lease_seconds
                )
            except (LeaseLost, NotFound):  # cancelled, reaped or deleted: no longer ours
                return
            except TetherError as exc:  # the backend is unreachable for now: beat again
                log.warning("could not renew the lease of tether run %s: %s", self.run.id, exc)

    async def _stop(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is None:  # already waiting or finished: the backend refuses what comes next
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
