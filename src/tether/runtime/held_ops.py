"""Runs their caller executes itself (a framework's runner): the Service's operations on them
once they are held (runtime.held_run is the caller's side), and the holders' secrets.

A held run is leased to a holder: a secret the caller is given when the run starts or resumes
and gives with every write. The store knows the holder by a digest of it and the owner, so
the run's worker_id, which its readers see, never gives the secret away; a secret given by
another owner, or a worker's id, holds nothing. A write the holder may no longer make (the run
was cancelled, reaped, ended) is LeaseLost; a run of another owner is NotFound, as a random id.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import replace
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import LeaseLost, NotFound, UsageError
from tether.core.run import ErrorInfo, HeldLease, Run
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.core.step import WAIT_PREFIX, Step, StepKind
from tether.core.usage import Usage
from tether.runtime import limits
from tether.runtime.settings import RuntimeSettings
from tether.store.base import UNSET, Store, Unset

#: What a held run may wait for a person for.
WAIT_KINDS = ("input", "approval")
#: What every holder's worker id starts with (a worker's never does: host:pid:random).
HOLDER_PREFIX = "held:"


def new_holder() -> str:
    """A new secret for one hold of a run."""
    return "th_" + secrets.token_urlsafe(24)


def holder_id(owner: str, holder: str) -> str:
    """The worker id the store records for holder, given by owner."""
    return HOLDER_PREFIX + hashlib.sha256(f"{owner}\0{holder}".encode()).hexdigest()[:40]


class HeldRunOps:
    """The operations of Service on held runs (Service provides these attributes and starts
    them: start_held_run)."""

    store: Store
    clock: Clock
    owner: str
    settings: RuntimeSettings

    async def resume_held_run(
        self, run_id: str, input: Any = None, *, lease_seconds: float | None = None
    ) -> HeldLease:
        """Continue a waiting run its caller executes, held by a new holder; its waiting step
        completes with input. A run a worker executes: InvalidTransition."""
        holder = new_holder()
        lease = limits.held_lease(lease_seconds, self.settings.lease_seconds)
        run = await self.store.resume_run(
            run_id,
            owner=self.owner,
            now=self.clock.now(),
            input=limits.json_value(input),
            held_by=holder_id(self.owner, holder),
            lease_seconds=lease,
        )
        return HeldLease(run, holder, lease)

    async def record_held_step(
        self,
        run_id: str,
        holder: str,
        kind: StepKind | str,
        name: str,
        input: Any = None,
        *,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
    ) -> Step:
        """Record a step that ended (failed when error is given) on a run holder holds;
        LeaseLost when it no longer does (cancelled, reaped, ended), TooManySteps past
        limits.MAX_HELD_STEPS."""
        redact = self.settings.redactor
        try:
            return await self.store.record_step(
                run_id=run_id,
                worker_id=self._holder(holder),
                position=None,
                kind=limits.enum(StepKind, kind, "kind") or StepKind.NOTE,
                name=limits.key("name", name) or "",
                input=redact.data(limits.json_value(input)),
                now=self.clock.now(),
                status=StepStatus.COMPLETED if error is None else StepStatus.FAILED,
                output=redact.data(limits.json_value(output)),
                error=self._redacted(error),
                usage=limits.usage(usage),
                max_steps=limits.MAX_HELD_STEPS,
            )
        except LeaseLost:
            raise await self._not_held(run_id, holder) from None

    async def renew_held_run(
        self, run_id: str, holder: str, *, lease_seconds: float | None = None
    ) -> Run:
        """The heartbeat of a run holder holds: its lease runs lease_seconds from now again;
        LeaseLost when it no longer holds it."""
        renewed = await self.store.renew_lease(
            run_id,
            worker_id=self._holder(holder),
            now=self.clock.now(),
            lease_seconds=limits.held_lease(lease_seconds, self.settings.lease_seconds),
        )
        if renewed is None:
            raise await self._not_held(run_id, holder)
        return renewed

    async def suspend_held_run(
        self,
        run_id: str,
        holder: str,
        kind: str,
        prompt: str,
        details: dict[str, Any] | None = None,
    ) -> Run:
        """running → waiting for a person (kind input or approval) with a wait_for_<kind> step,
        which resume_held_run completes; the holder lets go of the run."""
        if kind not in WAIT_KINDS:
            raise UsageError(f"kind must be one of {', '.join(WAIT_KINDS)}, not {kind!r}")
        worker_id, now = self._holder(holder), self.clock.now()
        prompt = self.settings.redactor.text(limits.text("prompt", prompt, limits.MAX_CONTENT))
        shown = self.settings.redactor.data(limits.mapping("details", details))
        try:
            step = await self.store.start_step(
                run_id=run_id,
                worker_id=worker_id,
                position=None,
                kind=StepKind.MESSAGE,
                name=f"{WAIT_PREFIX}{kind}",
                input={**shown, "prompt": prompt},
                now=now,
                max_steps=limits.MAX_HELD_STEPS,
            )
            waiting_for = {**shown, "kind": kind, "prompt": prompt, "step_id": step.id}
            return await self.store.suspend_run(
                run_id, worker_id=worker_id, now=now, waiting_for={**waiting_for, "held": True}
            )
        except LeaseLost:
            raise await self._not_held(run_id, holder) from None

    async def finish_held_run(
        self,
        run_id: str,
        holder: str,
        status: RunStatus | str = RunStatus.COMPLETED,
        *,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        """running → status (completed, failed, cancelled, timed_out) of a run holder holds;
        LeaseLost when it no longer holds it (finished already, cancelled, reaped)."""
        ended = limits.enum(RunStatus, status, "status")
        if ended not in RUN_TERMINAL:
            shown = ", ".join(s.value for s in RunStatus if s in RUN_TERMINAL)
            raise UsageError(
                f"status must be one of {shown}, not {getattr(status, 'value', status)!r}"
            )
        redact = self.settings.redactor
        try:
            return await self.store.finish_run(
                run_id,
                worker_id=self._holder(holder),
                status=ended,
                now=self.clock.now(),
                output=output if output is UNSET else redact.data(limits.json_value(output)),
                error=self._redacted(error),
            )
        except LeaseLost:
            raise await self._not_held(run_id, holder) from None

    def _holder(self, holder: str) -> str:
        """The worker id of holder (none given: one that holds nothing)."""
        return holder_id(self.owner, holder if isinstance(holder, str) else "")

    def _redacted(self, error: ErrorInfo | None) -> ErrorInfo | None:
        if error is None:
            return None
        return replace(error, message=self.settings.redactor.text(error.message))

    async def _not_held(self, run_id: str, holder: str) -> LeaseLost:
        """Why holder could not write to run_id (NotFound for a run of another owner)."""
        run = await self.store.get_run(run_id, owner=self.owner, with_context=False)
        if run is None:
            raise NotFound("run", run_id)
        why = (
            "the holder given does not hold it (it was cancelled, reaped, ended or resumed "
            "elsewhere): stop recording it"
            if holder
            else "no holder was given: only the caller holding a run writes to it"
        )
        return LeaseLost(
            f"run {run_id} is {run.status.value} and {why}",
            run_id=run_id,
            run_status=run.status.value,
        )
