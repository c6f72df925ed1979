"""ExternalRun: a run its caller executes itself (a framework's runner), recorded as it goes.

It starts running at once, leased to this process, so no worker claims it; a heartbeat renews
the lease while it is held, so a process that dies leaves the run to the reaper (failed:
worker_lost) like any worker's run. Steps are recorded as they end; waiting for a person
releases the lease until ``resume``. A run cancelled from outside (the UI, the CLI) makes the
next write raise LeaseLost: the caller stops recording it.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from tether.core.ids import new_id
from tether.core.run import ErrorInfo, IfBusy, Run
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.runtime.service import Service
from tether.store.base import UNSET, Unset


class ExternalRun:
    """One run of a session, held by this process while the caller executes it."""

    def __init__(self, service: Service, run: Run, worker_id: str, position: int = 0) -> None:
        self.run = run
        self._service = service
        self._worker_id = worker_id
        self._position = position
        self._heartbeat: asyncio.Task[None] | None = asyncio.get_running_loop().create_task(
            self._beat(), name=f"tether-external-run-{run.id}"
        )

    @classmethod
    async def start(
        cls,
        service: Service,
        session_id: str,
        goal: str,
        *,
        agent: str,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_busy: IfBusy = IfBusy.REJECT,
    ) -> ExternalRun:
        """A new run of the session, running at once; another run of it going or waiting is
        refused (SessionBusy) or, with IfBusy.INTERRUPT, cancelled first."""
        worker_id = f"external-{new_id()}"
        run = await service.create_run(
            session_id,
            goal,
            agent=agent,
            input=input,
            metadata=metadata,
            if_busy=if_busy,
            held_by=worker_id,
        )
        return cls(service, run, worker_id)

    @classmethod
    async def resume(cls, service: Service, run_id: str, input: Any = None) -> ExternalRun:
        """A waiting run continued by its caller; its steps go on after the ones it has."""
        worker_id = f"external-{new_id()}"
        run = await service.resume_run(run_id, input, held_by=worker_id)
        steps = await service.list_steps(run_id)
        return cls(service, run, worker_id, max((s.position for s in steps), default=0))

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
        self._position += 1
        return await self._service.store.record_step(
            run_id=self.run.id,
            worker_id=self._worker_id,
            position=self._position,
            kind=kind,
            name=name,
            input=input,
            now=self._service.clock.now(),
            status=StepStatus.FAILED if error is not None else StepStatus.COMPLETED,
            output=output,
            error=error,
            usage=usage,
        )

    async def wait(self, kind: str, prompt: str, **details: Any) -> Run:
        """running → waiting for a person (a wait_for_<kind> step, completed by ``resume``
        with what they sent); the lease is let go."""
        self._position += 1
        step = await self._service.store.start_step(
            run_id=self.run.id,
            worker_id=self._worker_id,
            position=self._position,
            kind=StepKind.MESSAGE,
            name=f"wait_for_{kind}",
            input={"prompt": prompt, **details},
            now=self._service.clock.now(),
        )
        await self._stop()
        self.run = await self._service.store.suspend_run(
            self.run.id,
            worker_id=self._worker_id,
            now=self._service.clock.now(),
            waiting_for={"kind": kind, "prompt": prompt, "step_id": step.id, **details},
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
        self.run = await self._service.store.finish_run(
            self.run.id,
            worker_id=self._worker_id,
            status=status,
            now=self._service.clock.now(),
            output=output,
            error=error,
        )
        return self.run

    async def _beat(self) -> None:
        every = self._service.settings.lease_seconds / 3
        while True:
            await asyncio.sleep(every)
            renewed = await self._service.store.renew_lease(
                self.run.id,
                worker_id=self._worker_id,
                now=self._service.clock.now(),
                lease_seconds=self._service.settings.lease_seconds,
            )
            if renewed is None:  # cancelled or reaped: no longer ours
                return

    async def _stop(self) -> None:
        task, self._heartbeat = self._heartbeat, None
        if task is None:  # already waiting or finished: the store refuses what comes next
            return
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
