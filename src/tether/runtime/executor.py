"""Execute one claimed run: build its context, call its agent, record how it ended.

While the agent runs, a keeper task renews the lease and watches the run; if the run is
cancelled, reaped or finished elsewhere, the agent is cancelled within ``watch_interval``
(immediately when the change happened in this process).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import LeaseLost, SessionExpired, StoreError, TetherError, UsageError
from tether.core.run import ErrorInfo, Run
from tether.core.serde import to_data
from tether.core.status import RunStatus
from tether.runtime import log_context
from tether.runtime.agent import AgentRegistry
from tether.runtime.api_keys import ApiKeys
from tether.runtime.confinement import Confinement
from tether.runtime.context_assembly import SOURCES, assemble_context
from tether.runtime.instruments import (
    LOST,
    RELEASED,
    UNRECORDED,
    Ending,
    Instruments,
    installed,
)
from tether.runtime.models.base import Model
from tether.runtime.run_context import RunContext, RunSuspended
from tether.runtime.settings import RuntimeSettings
from tether.runtime.tools import ToolRegistry
from tether.store.base import Store
from tether.store.changes import run_status_topic

log = logging.getLogger("tether.executor")

#: Tries to record a run's end before leaving it to the reaper (about 3 s of backoff).
_FINISH_ATTEMPTS = 7
#: The error type of a run whose own outcome the store refused.
_UNSTORABLE = "InvalidOutput"

ModelResolver = Callable[[Run], Model | None]


class Executor:
    """Runs claimed runs to their end (or to waiting)."""

    def __init__(
        self,
        store: Store,
        agents: AgentRegistry,
        *,
        clock: Clock,
        settings: RuntimeSettings,
        models: ModelResolver | None = None,
        instruments: Instruments | None = None,
    ) -> None:
        self._store = store
        self._agents = agents
        self._clock = clock
        self._settings = settings
        self._models = models
        self._instruments = instruments
        self._confinement = Confinement.of(
            settings.workspace_roots, database=store.location, keyed=ApiKeys(store).any_active
        )

    async def execute(self, run: Run) -> None:
        """Drive run to a terminal status or to waiting. Cancelling this coroutine (worker
        shutdown past its grace period) hands the run back to the queue.

        The execution is reported to the instruments (the given ones, else those installed)
        and everything logged meanwhile is about the run."""
        instruments = self._instruments or installed()
        ending = Ending()
        with log_context.about(run), instruments.execution(run, ending):
            await self._execute(run, ending, instruments)

    async def _execute(self, run: Run, ending: Ending, instruments: Instruments) -> None:
        lost, querying, recording = asyncio.Event(), asyncio.Event(), asyncio.Event()
        agent_task = asyncio.create_task(
            self._drive(run, ending, recording, instruments), name=f"run {run.id}"
        )
        keeper = asyncio.create_task(
            self._keep(run, agent_task, lost, querying, recording, ending),
            name=f"keeper {run.id}",
        )
        try:
            await asyncio.shield(agent_task)
        except asyncio.CancelledError:
            if lost.is_set():
                return  # cancelled, reaped or finished elsewhere: nothing left to record
            if not agent_task.done():
                ending.status = RELEASED
                agent_task.cancel()
                with contextlib.suppress(BaseException):
                    await agent_task
                with contextlib.suppress(TetherError):
                    await self._store.release_run(
                        run.id, worker_id=_holder(run), now=self._clock.now()
                    )
            raise
        finally:
            # The agent is done. A keeper waiting for news is cancelled; one in the middle of a
            # query ends on its own right after it: cancelling a query would make the driver ask
            # the server to cancel it (PostgreSQL: a new connection), once per run.
            if not querying.is_set():
                keeper.cancel()
            try:
                await asyncio.wait({keeper})  # a cancellation of execute itself goes on
            except asyncio.CancelledError:
                keeper.cancel()
                raise
            if not keeper.cancelled() and keeper.exception() is not None:
                log.error("the lease keeper of run %s failed", run.id, exc_info=keeper.exception())

    async def _keep(
        self,
        run: Run,
        agent_task: asyncio.Task[None],
        lost: asyncio.Event,
        querying: asyncio.Event,
        recording: asyncio.Event,
        ending: Ending,
    ) -> None:
        """Renew the lease and cancel the agent once the run is no longer ours; querying is
        set while it reads or writes the store. A change the execution made itself (its end
        being recorded, a suspension) is left to it: the keeper may read that change before
        the agent hears its write was committed (on PostgreSQL it reads on another connection),
        and a run taken meanwhile shows the agent as LeaseLost on that write."""
        settings = self._settings
        renew_every = settings.lease_seconds / 3
        loop = asyncio.get_running_loop()
        next_renewal = loop.time() + renew_every
        while not agent_task.done():
            cursor = self._store.changes.cursor()
            # Never past the renewal: a watch_interval longer than a third of the lease would
            # let the lease expire under a live execution.
            until_renewal = max(0.0, next_renewal - loop.time())
            await self._store.changes.wait(
                [run_status_topic(run.id)],
                min(settings.watch_interval, until_renewal),
                since=cursor,
            )
            if agent_task.done():  # woken by the run's own last write
                return
            querying.set()
            renewing = loop.time() >= next_renewal
            try:
                if renewing:
                    current = await self._store.renew_lease(
                        run.id,
                        worker_id=_holder(run),
                        now=self._clock.now(),
                        lease_seconds=settings.lease_seconds,
                    )
                    next_renewal = loop.time() + renew_every
                else:
                    current = await self._store.get_run(run.id, with_context=False)
            except StoreError as exc:  # the database hiccuped: the lease outlives it
                log.warning("lease check failed for run %s: %s", run.id, exc)
                if renewing:  # tried again after a watch, not at once in a loop
                    next_renewal = loop.time() + min(settings.watch_interval, renew_every)
                continue
            finally:
                querying.clear()
            # Each claim has its own holder id, and the attempt is compared too: a run reaped
            # for a retry and claimed again by this very worker is not this execution's.
            still_ours = (
                current is not None
                and current.status is RunStatus.RUNNING
                and current.worker_id == _holder(run)
                and current.attempt == run.attempt
            )
            if not still_ours and not agent_task.done():
                if recording.is_set() or _suspended(current, run):
                    return
                lost.set()
                agent_task.cancel()
                _taken(None if current is None else current.status.value, ending)
                return

    async def _drive(
        self, run: Run, ending: Ending, recording: asyncio.Event, instruments: Instruments
    ) -> None:
        try:
            ctx = await self._prepare(run, instruments)
        except LeaseLost as exc:
            _taken(exc.details.get("status"), ending)
            return
        except Exception as exc:
            await self._finish(run, ending, recording, RunStatus.FAILED, error=ErrorInfo.of(exc))
            return
        timeout = run.timeout_seconds
        try:
            async with asyncio.timeout(timeout) as deadline:
                output = await self._agents.get(run.agent)(ctx)
            await ctx.flush()
        except RunSuspended:
            ending.status = RunStatus.WAITING.value
            with contextlib.suppress(Exception):
                await ctx.flush()
            return
        except LeaseLost as exc:
            _taken(exc.details.get("status"), ending)
            return
        except SessionExpired:
            # The session expired under the run: persisting the expiry cancels its runs (this
            # one included), as closing would have.
            ending.status = RunStatus.CANCELLED.value
            with contextlib.suppress(StoreError):
                await self._store.expire_sessions(now=self._clock.now())
            return
        except TimeoutError as exc:
            await _settle(ctx)
            if deadline.expired():
                await self._finish(
                    run,
                    ending,
                    recording,
                    RunStatus.TIMED_OUT,
                    error=ErrorInfo("timeout", f"the run exceeded its {timeout:g} s timeout"),
                )
            else:
                await self._finish(
                    run,
                    ending,
                    recording,
                    RunStatus.FAILED,
                    error=ErrorInfo.of(exc, ctx.failed_step_id),
                )
            return
        except Exception as exc:
            # a tool error the agent let through names the tool's step
            error = ErrorInfo.of(exc, getattr(exc, "step_id", None) or ctx.failed_step_id)
            shown = self._settings.redactor.text(error.message)
            log.info("run %s failed: %s: %s", run.id, error.type, shown)
            await _settle(ctx)
            await self._finish(run, ending, recording, RunStatus.FAILED, error=error)
            return
        await self._finish(run, ending, recording, RunStatus.COMPLETED, output=to_data(output))

    async def _prepare(self, run: Run, instruments: Instruments) -> RunContext:
        store = self._store
        self._agents.get(run.agent)  # fail early, before any context work, if it is unknown
        context = run.context
        # One read: the agent's memory views and the context it starts from share the memory.
        start = await store.run_start(run, sources=SOURCES if context is None else None)
        if start is None:
            raise LeaseLost(f"session {run.session_id} is gone")
        session, memory = start.session, start.memory
        if context is None:
            context = await assemble_context(
                store,
                session,
                budget_tokens=self._settings.context_budget_tokens,
                before_seq=run.seq,
                now=self._clock.now(),
                memory=memory,
                sources=start.sources,
            )
            run = await store.update_run(
                run.id, worker_id=_holder(run), now=self._clock.now(), context=context
            )
        return RunContext(
            tools=ToolRegistry(self._agents.tools(run.agent)),
            store=store,
            clock=self._clock,
            run=run,
            session=session,
            worker_id=_holder(run),
            recorded=start.steps,
            context=context,
            memory=memory,
            model=self._models(run) if self._models else None,
            instruments=instruments,
            redactor=self._settings.redactor,
            confinement=self._confinement,
        )

    async def _finish(
        self,
        run: Run,
        ending: Ending,
        recording: asyncio.Event,
        status: RunStatus,
        *,
        output: Any = None,
        error: ErrorInfo | None = None,
    ) -> None:
        """Record how the run ended (recording set meanwhile), retrying while the database is
        briefly unavailable (if it stays down, the lease expires and the reaper ends the run).
        An outcome the store refuses (an output that is not JSON, say) ends the run failed,
        saying why."""
        recording.set()
        redactor = self._settings.redactor
        if error is not None:
            error = replace(error, message=redactor.text(error.message))
        kwargs: dict[str, Any] = {"error": error}
        if status is RunStatus.COMPLETED:
            kwargs["output"] = redactor.data(output)
        for attempt in range(_FINISH_ATTEMPTS):
            try:
                await self._store.finish_run(
                    run.id, worker_id=_holder(run), status=status, now=self._clock.now(), **kwargs
                )
                ending.status, ending.error = status.value, error
                return
            except LeaseLost as exc:
                _taken(exc.details.get("status"), ending)
                return
            except UsageError as exc:
                if status is RunStatus.FAILED and error is not None and error.type == _UNSTORABLE:
                    log.error("could not record run %s as failed: %s", run.id, exc)
                    return
                what = "the agent's output" if status is RunStatus.COMPLETED else "the outcome"
                message = f"{what} cannot be stored: {exc}"
                unstorable = ErrorInfo(_UNSTORABLE, message)
                await self._finish(run, ending, recording, RunStatus.FAILED, error=unstorable)
                return
            except StoreError as exc:
                if attempt + 1 == _FINISH_ATTEMPTS:
                    log.error("could not record run %s as %s: %s", run.id, status.value, exc)
                    return
                await asyncio.sleep(0.05 * 2**attempt)


def _taken(status: str | None, ending: Ending) -> None:
    """The run is no longer this execution's: cancelled (status), or else its lease was lost,
    unless the execution had already ended it itself (the keeper may notice a run this very
    execution just suspended)."""
    if ending.status == UNRECORDED:
        ending.status = RunStatus.CANCELLED.value if status == RunStatus.CANCELLED.value else LOST


def _suspended(current: Run | None, run: Run) -> bool:
    """Whether the run is waiting in this attempt: only its execution can have suspended it
    (anyone else taking the run ends it, or requeues it as the next attempt)."""
    return (
        current is not None
        and current.status is RunStatus.WAITING
        and current.attempt == run.attempt
    )


def _holder(run: Run) -> str:
    """Who holds a claimed run: the worker id plus a per-claim suffix."""
    if run.worker_id is None:
        raise LeaseLost(f"run {run.id} is not held by anyone")
    return run.worker_id


async def _settle(ctx: RunContext) -> None:
    """Commit the memory writes the agent made before it failed (working memory is kept for
    audit), while the run is still open to them; a write refused now is dropped."""
    with contextlib.suppress(Exception):
        await ctx.flush()
