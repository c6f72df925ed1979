"""A stateful property test over the Service and the Store.

Hypothesis drives random sequences of: create session, add a message (or a batch of them), pop
the newest message or clear the conversation, write session memory,
create a run (each if_busy), claim / record a step / suspend / resume / finish / cancel runs as a
worker (or as a late, confused one), close sessions, let time pass on the manual clock, sweep,
write run memory and promote it. A small model predicts what each operation must do (accept, or
refuse with which error; which events it appends; which status every session then has) and, after
every step, one invariant reads the whole database and checks:

* never two active (running/waiting) runs in one session;
* run seq and message seq are 1..n in every session, run_count agrees; the conversation is
  exactly the messages added and not popped or cleared (removed ones stay, with removed_at);
* every terminal run has ended_at, no other run has;
* a session's status never changes because of a run; expiry is exact and monotonic;
* event ids strictly increase, and every state change appended exactly its events;
* closed and expired sessions refuse writes (messages, memory, runs);
* claim_run takes exactly the run the queue rules say, and nothing when none is startable.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, TypeVar

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)

from tests.support import LEASE_SECONDS, TEST_SETTINGS, Backend
from tether.core.clock import ManualClock
from tether.core.errors import (
    Conflict,
    InvalidTransition,
    LeaseLost,
    SessionBusy,
    SessionClosed,
    SessionExpired,
)
from tether.core.event import Event
from tether.core.memory import MemoryScope
from tether.core.run import ErrorInfo, IfBusy, Run
from tether.core.session import Session
from tether.core.status import RUN_ACTIVE, RUN_UNFINISHED, RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime import builtin
from tether.runtime.agent import AgentRegistry
from tether.runtime.service import Service
from tether.store.base import Store

T = TypeVar("T")
WORKER = "sm-worker"
ACTIVE, CLOSED, EXPIRED = SessionStatus.ACTIVE, SessionStatus.CLOSED, SessionStatus.EXPIRED
REFUSAL: dict[SessionStatus, type[Conflict]] = {CLOSED: SessionClosed, EXPIRED: SessionExpired}
OUTCOMES = [RunStatus.COMPLETED, RunStatus.FAILED, RunStatus.TIMED_OUT]

MACHINE_SETTINGS = settings(
    max_examples=50,
    stateful_step_count=30,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@dataclass
class SessionModel:
    ttl: int | None
    #: Activity that certainly counted (messages, runs created, memory writes, resumes).
    last_sure: datetime
    #: The latest moment that may have counted (run events touch a session "softly").
    last_maybe: datetime
    closed: bool = False
    #: Expiry persisted (by the sweep, or by closing an expired session).
    expired: bool = False
    #: The status read after the previous step.
    observed: SessionStatus = ACTIVE
    #: Seqs of the messages in the conversation (added, not popped or cleared).
    live: list[int] = field(default_factory=list)
    #: Messages ever added (the last seq).
    added: int = 0


@dataclass
class RunModel:
    session_id: str
    open_steps: int = 0
    wait_step: str | None = None
    memory_keys: set[str] = field(default_factory=set)


@dataclass
class Snapshot:
    """What the database held after the previous step (for preconditions and draws)."""

    sessions: dict[str, Session] = field(default_factory=dict)
    status: dict[str, SessionStatus] = field(default_factory=dict)
    runs: dict[str, list[Run]] = field(default_factory=dict)

    def all_runs(self) -> list[Run]:
        return [r for runs in self.runs.values() for r in runs]


class SessionsAndRuns(RuleBasedStateMachine):
    def __init__(self, open_store: Callable[[], Store]) -> None:
        super().__init__()
        self.loop = asyncio.new_event_loop()
        self.clock = ManualClock()
        self.store = open_store()
        self.service = Service(
            self.store,
            agents=builtin.register(AgentRegistry()),
            clock=self.clock,
            settings=TEST_SETTINGS,
            owner="alice",
        )
        self.model: dict[str, SessionModel] = {}
        self.run_models: dict[str, RunModel] = {}
        self.seen_event: dict[str, int] = {}
        self.max_event_id = 0
        self.snap = Snapshot()

    def teardown(self) -> None:
        self.loop.run_until_complete(self.store.close())
        self.loop.close()

    # -- helpers -------------------------------------------------------------------------------

    def a(self, coro: Coroutine[Any, Any, T]) -> T:
        return self.loop.run_until_complete(coro)

    def raises(self, error: type[BaseException], coro: Coroutine[Any, Any, Any]) -> BaseException:
        try:
            self.a(coro)
        except error as exc:
            return exc
        raise AssertionError(f"expected {error.__name__}")

    def status(self, session_id: str) -> SessionStatus:
        """The session's status as read now (exact expiry)."""
        return self.a(self.service.get_session(session_id)).status

    def run(self, run_id: str) -> Run:
        found = self.a(self.store.get_run(run_id))
        assert found is not None
        return found

    def unfinished(self, session_id: str) -> list[Run]:
        page = self.a(self.store.list_runs(session_id=session_id, limit=1000))
        return [r for r in page.data if r.status in RUN_UNFINISHED]

    def held(self, run_id: str) -> bool:
        run = self.run(run_id)
        return run.status is RunStatus.RUNNING and run.worker_id == WORKER

    def expect_events(self, expected: dict[str, list[str]]) -> None:
        """Exactly these events were appended since the previous check, in every session."""

        async def new_events() -> dict[str, list[Event]]:
            return {
                sid: await self.store.list_events(
                    session_id=sid, after_id=self.seen_event[sid], limit=10_000
                )
                for sid in self.model
            }

        new_ids: list[int] = []
        for session_id, events in self.a(new_events()).items():
            assert [e.type for e in events] == expected.get(session_id, []), session_id
            if events:
                self.seen_event[session_id] = events[-1].id
            new_ids.extend(e.id for e in events)
        # Ids increase in commit order: everything new is newer than everything seen before.
        assert all(i > self.max_event_id for i in new_ids)
        self.max_event_id = max([self.max_event_id, *new_ids])

    def touch(self, session_id: str) -> None:
        """A write that is activity: the session's expiry moves to now + TTL, exactly."""
        m = self.model[session_id]
        m.last_sure = m.last_maybe = now = self.clock.now()
        stored = self.a(self.store.get_session(session_id))
        assert stored is not None and stored.last_activity_at == now
        if m.ttl is not None:
            assert stored.expires_at == now + timedelta(seconds=m.ttl)

    def soft_touch(self, session_id: str, status_before: SessionStatus) -> None:
        """A run event: may count as activity, but never on a session that is not active."""
        if status_before is ACTIVE:
            self.model[session_id].last_maybe = self.clock.now()

    def closing_events(self, run_id: str) -> list[str]:
        """Closing a run's open steps: tool calls become in_doubt, the wait step failed."""
        rm = self.run_models[run_id]
        return ["step.in_doubt"] * rm.open_steps + ["step.failed"] * (rm.wait_step is not None)

    def closed_steps(self, run_id: str) -> None:
        rm = self.run_models[run_id]
        rm.open_steps = 0
        rm.wait_step = None

    def cancellations(self, session_id: str) -> list[str]:
        """The events cancelling a session's unfinished runs, and forget their open steps."""
        types: list[str] = []
        for run in self.unfinished(session_id):
            types += [*self.closing_events(run.id), "run.cancelled"]
            self.closed_steps(run.id)
        return types

    # -- what the snapshot says ------------------------------------------------------------------

    def writable(self) -> list[str]:
        return [sid for sid, status in self.snap.status.items() if status is ACTIVE]

    def runs_in(self, *statuses: RunStatus, held: bool = False) -> list[str]:
        return [
            r.id
            for r in self.snap.all_runs()
            if r.status in statuses and (not held or r.worker_id == WORKER)
        ]

    def in_limbo(self) -> list[str]:
        """Unfinished runs of sessions that read as expired but were not swept yet."""
        return [
            r.id
            for sid, runs in self.snap.runs.items()
            if self.snap.sessions[sid].status is ACTIVE and self.snap.status[sid] is EXPIRED
            for r in runs
            if r.status in RUN_UNFINISHED
        ]

    def startable(self) -> tuple[Run | None, bool]:
        """The run claim_run must take next (and whether it is a resumed one)."""
        everything = self.snap.all_runs()
        resumed = [r for r in everything if r.status is RunStatus.RUNNING and r.worker_id is None]
        if resumed:
            return min(resumed, key=lambda r: r.updated_at), True
        ready = []
        for r in everything:
            if r.status is not RunStatus.READY or self.snap.status[r.session_id] is not ACTIVE:
                continue  # a ready run of an expired session never starts
            same = self.snap.runs[r.session_id]
            if any(o.status in RUN_ACTIVE for o in same):
                continue
            if any(o.status in RUN_UNFINISHED and o.seq < r.seq for o in same):
                continue
            ready.append(r)
        if not ready:
            return None, False
        return min(ready, key=lambda r: (r.created_at, r.id)), False

    def has_held(self) -> bool:
        return bool(self.runs_in(RunStatus.RUNNING, held=True))

    def has_waiting(self) -> bool:
        return bool(self.runs_in(RunStatus.WAITING))

    def has_runs(self) -> bool:
        return bool(self.run_models)

    # -- sessions ------------------------------------------------------------------------------

    @initialize()
    def first_sessions(self) -> None:
        """Start with one session of each TTL and a run in each, so things get going at once."""
        for ttl in (60, None, 120):
            self.create_session(ttl)
        for session_id in list(self.model):
            self._create_run(session_id, IfBusy.REJECT)

    @precondition(lambda self: len(self.model) < 8 and len(self.writable()) < 3)
    @rule(ttl=st.sampled_from([60, None, 120]))
    def create_session(self, ttl: int | None) -> None:
        session = self.a(self.service.create_session(title="s", ttl_seconds=ttl))
        now = self.clock.now()
        self.model[session.id] = SessionModel(ttl, now, now)
        self.seen_event[session.id] = 0
        self.expect_events({session.id: ["session.created"]})

    @precondition(lambda self: bool(self.writable()))
    @rule(
        data=st.data(),
        what=st.sampled_from(["message", "batch", "pop", "clear", "a", "b", "close"]),
    )
    def write(self, data: st.DataObject, what: str) -> None:
        """Add a message (or a batch), pop or clear, write session memory or close the session
        (while another one stays open). Writes to closed or expired sessions: the invariant."""
        session_id = data.draw(st.sampled_from(self.writable()))
        before = self.status(session_id)
        assert before is ACTIVE
        m = self.model[session_id]
        if what in ("message", "batch"):
            size = 1 if what == "message" else data.draw(st.integers(1, 4))
            if what == "message":
                added = [self.a(self.service.add_message(session_id, "user", "hi"))]
            else:
                batch = [{"content": f"m{n}"} for n in range(size)]
                added = self.a(self.service.add_messages(session_id, batch))
            assert [msg.seq for msg in added] == list(range(m.added + 1, m.added + size + 1))
            m.added += size
            m.live.extend(msg.seq for msg in added)
            self.touch(session_id)
            self.expect_events({session_id: ["message.added"] * size})
        elif what == "pop":
            popped = self.a(self.service.pop_message(session_id))
            if not m.live:
                assert popped is None
                self.expect_events({})  # nothing to take out: nothing changed
                return
            assert popped is not None and popped.seq == m.live.pop()
            assert popped.removed_at == self.clock.now()
            self.touch(session_id)
            self.expect_events({session_id: ["message.removed"]})
        elif what == "clear":
            removed = self.a(self.service.clear_messages(session_id))
            assert removed == len(m.live)
            if removed:
                m.live.clear()
                self.touch(session_id)
                self.expect_events({session_id: ["messages.cleared"]})
            else:
                self.expect_events({})
        elif what in ("a", "b"):
            self.a(self.service.set_session_memory(session_id, what, 1))
            self.touch(session_id)
            self.expect_events({session_id: ["memory.set"]})
        elif len(self.writable()) >= 2:
            expected = [*self.cancellations(session_id), "session.closed"]
            self.model[session_id].closed = True
            closed = self.a(self.service.close_session(session_id))
            assert closed.status is CLOSED and closed.closed_at == self.clock.now()
            self.expect_events({session_id: expected})

    @rule(
        seconds=st.sampled_from([1, 10, 30, 60, 4000]),
        then=st.sampled_from(["late run event", "sweep", "sweep in batches of 1", "nothing"]),
        data=st.data(),
    )
    def time_passes(self, seconds: int, then: str, data: st.DataObject) -> None:
        """Advance the clock, then: sweep; or, before any sweep, let something happen to a run
        of a session that has just expired (its worker does not know): it must not revive it."""
        self.clock.advance(seconds)
        if then == "late run event":
            limbo = [
                r.id
                for session_id in self.model
                if self.status(session_id) is EXPIRED
                for r in self.unfinished(session_id)
            ]
            if limbo:
                run_id = data.draw(st.sampled_from(limbo))
                op = data.draw(st.sampled_from(["cancel", "work", "resume", "memory"]))
                self._late_event(run_id, op, data)
        elif then != "nothing":
            self._sweep(500 if then == "sweep" else 1)

    def _late_event(self, run_id: str, op: str, data: st.DataObject) -> None:
        if op == "cancel":
            self._cancel(run_id)
        elif op == "resume":
            self._resume(run_id)
        elif op == "memory":
            self._set_run_memory(run_id, "x")
        else:
            self._work(run_id, data.draw(st.sampled_from(["step", "suspend", *OUTCOMES])))

    def _sweep(self, batch: int) -> None:
        expected: dict[str, list[str]] = {}
        for session_id, m in self.model.items():
            stored = self.a(self.store.get_session(session_id))
            assert stored is not None
            if stored.status is ACTIVE and self.status(session_id) is EXPIRED:
                expected[session_id] = [*self.cancellations(session_id), "session.expired"]
                m.expired = True
        swept = self.a(self.service.sweep_expired(limit=batch))
        assert {s.id for s in swept} == set(expected)
        assert all(s.status is EXPIRED for s in swept)
        self.expect_events(expected)

    # -- runs ----------------------------------------------------------------------------------

    @precondition(lambda self: bool(self.writable()))
    @rule(data=st.data(), if_busy=st.sampled_from(list(IfBusy)))
    def create_run(self, data: st.DataObject, if_busy: IfBusy) -> None:
        self._create_run(data.draw(st.sampled_from(self.writable())), if_busy)

    def _create_run(self, session_id: str, if_busy: IfBusy) -> None:
        before = self.status(session_id)
        assert before is ACTIVE
        unfinished = self.unfinished(session_id)
        create = self.service.create_run(session_id, "goal", agent="echo", if_busy=if_busy)
        if unfinished and if_busy is IfBusy.REJECT:
            busy = self.raises(SessionBusy, create)
            assert isinstance(busy, SessionBusy)
            active = [r for r in unfinished if r.status in RUN_ACTIVE]
            assert busy.active_run_id == (active or unfinished)[0].id
            assert busy.active_run_id in str(busy)
            self.expect_events({})
            return
        expected = self.cancellations(session_id) if if_busy is IfBusy.INTERRUPT else []
        run = self.a(create)
        assert run.status is RunStatus.READY
        self.touch(session_id)
        self.run_models[run.id] = RunModel(session_id)
        self.expect_events({session_id: [*expected, "run.created"]})
        stored = self.a(self.store.get_session(session_id))
        assert stored is not None and stored.run_count == run.seq

    def claim_next(self) -> Run | None:
        return self.a(
            self.store.claim_run(
                worker_id=WORKER, now=self.clock.now(), lease_seconds=LEASE_SECONDS
            )
        )

    @precondition(lambda self: self.startable()[0] is not None)
    @rule()
    def claim(self) -> None:
        expected, resumed = self.startable()
        assert expected is not None
        before = self.status(expected.session_id)
        claimed = self.claim_next()
        assert claimed is not None and claimed.id == expected.id
        assert claimed.status is RunStatus.RUNNING and claimed.worker_id == WORKER
        self.soft_touch(claimed.session_id, before)
        self.expect_events({} if resumed else {claimed.session_id: ["run.started"]})
        assert self.status(claimed.session_id) is before

    @precondition(has_held)
    @rule(data=st.data(), op=st.sampled_from(["suspend", "step", *OUTCOMES]))
    def work(self, data: st.DataObject, op: str) -> None:
        """The worker holding a run records a step, waits for a person, or ends the run."""
        self._work(data.draw(st.sampled_from(self.runs_in(RunStatus.RUNNING, held=True))), op)

    def _work(self, run_id: str, op: str) -> None:
        if op == "step":
            self._open_tool_step(run_id)
        elif op == "suspend":
            self._suspend(run_id)
        else:
            self._finish(run_id, RunStatus(op))

    @precondition(has_waiting)
    @rule(data=st.data(), op=st.sampled_from(["resume", "cancel"]))
    def answer(self, data: st.DataObject, op: str) -> None:
        """The person a run waits for answers it, or cancels it instead."""
        run_id = data.draw(st.sampled_from(self.runs_in(RunStatus.WAITING)))
        if op == "resume":
            self._resume(run_id)
        else:
            self._cancel(run_id)

    @precondition(lambda self: bool(self.in_limbo()))
    @rule(data=st.data(), op=st.sampled_from(["cancel", "work", "resume", "memory"]))
    def limbo(self, data: st.DataObject, op: str) -> None:
        """Between exact expiry and the sweep, runs of an expired session still get events (a
        worker finishing, a person cancelling): none of them may bring the session back."""
        self._late_event(data.draw(st.sampled_from(self.in_limbo())), op, data)

    @precondition(has_runs)
    @rule(data=st.data(), op=st.sampled_from(["x", "y", "promote"]))
    def run_memory(self, data: st.DataObject, op: str) -> None:
        """Write a run's working memory (refused once it ended), or promote an item of it."""
        run_id = data.draw(st.sampled_from(sorted(self.run_models)))
        keys = sorted(self.run_models[run_id].memory_keys)
        if op == "promote" and keys:
            self._promote(run_id, keys[0])
        else:
            self._set_run_memory(run_id, "x" if op == "promote" else op)

    @precondition(has_runs)
    @rule(data=st.data(), op=st.sampled_from(["step", "finish", "suspend", "resume", "cancel"]))
    def late_or_confused(self, data: st.DataObject, op: str) -> None:
        """A worker or person acting on any run: refused unless the run is in the right state."""
        run_id = data.draw(st.sampled_from(sorted(self.run_models)))
        if op == "resume":
            self._resume(run_id)
        elif op == "cancel":
            self._cancel(run_id)
        else:
            self._work(run_id, RunStatus.FAILED.value if op == "finish" else op)

    # -- what each run operation must do -------------------------------------------------------

    def _open_tool_step(self, run_id: str) -> None:
        rm = self.run_models[run_id]
        start = self.store.start_step(
            run_id=run_id,
            worker_id=WORKER,
            position=len(self.a(self.store.list_steps(run_id))) + 1,
            kind=StepKind.TOOL_CALL,
            name="run_command",
            input={"arguments": {}},
            now=self.clock.now(),
        )
        if not self.held(run_id):
            self.raises(LeaseLost, start)
            self.expect_events({})
            return
        before = self.status(rm.session_id)
        self.a(start)
        rm.open_steps += 1
        self.expect_events({rm.session_id: ["step.started"]})
        assert self.status(rm.session_id) is before

    def _finish(self, run_id: str, outcome: RunStatus) -> None:
        rm = self.run_models[run_id]
        before = self.status(rm.session_id)
        finish = self.store.finish_run(
            run_id,
            worker_id=WORKER,
            status=outcome,
            now=self.clock.now(),
            error=None if outcome is RunStatus.COMPLETED else ErrorInfo("E", "ended"),
        )
        if not self.held(run_id):
            self.raises(LeaseLost, finish)
            self.expect_events({})
            return
        run = self.a(finish)
        assert run.status is outcome and run.ended_at == self.clock.now()
        expected = [*self.closing_events(run_id), f"run.{outcome.value}"]
        self.closed_steps(run_id)
        self.soft_touch(rm.session_id, before)
        self.expect_events({rm.session_id: expected})
        assert self.status(rm.session_id) is before, "a run outcome changed the session"

    def _cancel(self, run_id: str) -> None:
        rm = self.run_models[run_id]
        before = self.status(rm.session_id)
        current = self.run(run_id)
        cancel = self.service.cancel_run(run_id)
        if current.status not in RUN_UNFINISHED:
            error = self.raises(InvalidTransition, cancel)
            assert f"from {current.status.value} to cancelled" in str(error)
            self.expect_events({})
            return
        run = self.a(cancel)
        assert run.status is RunStatus.CANCELLED and run.ended_at == self.clock.now()
        expected = [*self.closing_events(run_id), "run.cancelled"]
        self.closed_steps(run_id)
        self.soft_touch(rm.session_id, before)
        self.expect_events({rm.session_id: expected})
        assert self.status(rm.session_id) is before, "cancelling a run changed the session"

    def _suspend(self, run_id: str) -> None:
        rm = self.run_models[run_id]
        if not self.held(run_id):
            suspend = self.store.suspend_run(
                run_id, worker_id=WORKER, now=self.clock.now(), waiting_for={"kind": "input"}
            )
            self.raises(LeaseLost, suspend)
            self.expect_events({})
            return
        before = self.status(rm.session_id)
        step = self.a(
            self.store.start_step(
                run_id=run_id,
                worker_id=WORKER,
                position=len(self.a(self.store.list_steps(run_id))) + 1,
                kind=StepKind.MESSAGE,
                name="wait_for_input",
                input={"prompt": "go on?"},
                now=self.clock.now(),
            )
        )
        run = self.a(
            self.store.suspend_run(
                run_id,
                worker_id=WORKER,
                now=self.clock.now(),
                waiting_for={"kind": "input", "step_id": step.id},
            )
        )
        assert run.status is RunStatus.WAITING and run.worker_id is None
        rm.wait_step = step.id
        self.soft_touch(rm.session_id, before)
        self.expect_events({rm.session_id: ["step.started", "run.waiting"]})
        assert self.status(rm.session_id) is before

    def _resume(self, run_id: str) -> None:
        rm = self.run_models[run_id]
        before = self.status(rm.session_id)
        current = self.run(run_id)
        resume = self.service.resume_run(run_id, "yes")
        if current.status is not RunStatus.WAITING:
            error = self.raises(InvalidTransition, resume)
            assert f"is {current.status.value}" in str(error) or (
                f"has finished ({current.status.value})" in str(error)
            )
            assert "only a waiting run can be resumed" in str(error)
            assert isinstance(error, InvalidTransition)
            assert (error.current, error.target) == (current.status.value, "running")
            self.expect_events({})
            return
        if before is not ACTIVE:
            self.raises(REFUSAL[before], resume)
            self.expect_events({})
            return
        run = self.a(resume)
        assert run.status is RunStatus.RUNNING and run.worker_id is None
        assert rm.wait_step is not None
        steps = {s.id: s for s in self.a(self.store.list_steps(run_id))}
        assert steps[rm.wait_step].status is StepStatus.COMPLETED
        assert steps[rm.wait_step].output == {"input": "yes"}
        rm.wait_step = None
        self.touch(rm.session_id)
        self.expect_events({rm.session_id: ["step.completed", "run.resumed"]})

    def _set_run_memory(self, run_id: str, key: str) -> None:
        rm = self.run_models[run_id]
        before = self.status(rm.session_id)
        current = self.run(run_id)
        put = self.store.put_memory(
            scope=MemoryScope.RUN,
            scope_id=run_id,
            key=key,
            value=key,
            owner="alice",
            now=self.clock.now(),
        )
        if current.is_terminal:
            error = self.raises(Conflict, put)
            assert "read-only" in str(error)
            self.expect_events({})
        elif before is not ACTIVE:
            self.raises(REFUSAL[before], put)
            self.expect_events({})
        else:
            self.a(put)
            rm.memory_keys.add(key)
            self.touch(rm.session_id)
            self.expect_events({rm.session_id: ["memory.set"]})

    def _promote(self, run_id: str, key: str) -> None:
        rm = self.run_models[run_id]
        before = self.status(rm.session_id)
        promote = self.service.promote_memory(run_id, key)
        if before is not ACTIVE:
            self.raises(REFUSAL[before], promote)
            self.expect_events({})
            return
        item = self.a(promote)
        assert item.source_run_id == run_id
        assert item.scope is MemoryScope.SESSION and item.scope_id == rm.session_id
        self.touch(rm.session_id)
        self.expect_events({rm.session_id: ["memory.promoted"]})

    # -- the invariant -------------------------------------------------------------------------

    @invariant()
    def database_agrees(self) -> None:
        """Read everything back and check it (one pass; also refreshes the snapshot)."""
        self.snap = self.a(self._check())
        if self.startable()[0] is None:  # nothing startable: claiming finds nothing
            assert self.claim_next() is None
        self.expect_events({})

    async def _check(self) -> Snapshot:
        snap = Snapshot()
        now = self.clock.now()
        for session_id, m in self.model.items():
            stored = await self.store.get_session(session_id)
            assert stored is not None
            status = stored.as_of(now).status
            snap.sessions[session_id], snap.status[session_id] = stored, status

            runs = (await self.store.list_runs(session_id=session_id, limit=1000)).data
            snap.runs[session_id] = runs
            assert [r.seq for r in runs] == list(range(1, len(runs) + 1))
            assert stored.run_count == len(runs)
            assert sum(r.status in RUN_ACTIVE for r in runs) <= 1, "two active runs"
            for r in runs:
                assert (r.ended_at is not None) == r.is_terminal, r
                assert (r.worker_id is not None) <= (r.status is RunStatus.RUNNING), r

            everything = await self.store.list_messages(
                session_id, limit=10_000, include_removed=True
            )
            assert [msg.seq for msg in everything] == list(range(1, m.added + 1))
            live = await self.store.list_messages(session_id, limit=10_000)
            assert [msg.seq for msg in live] == m.live
            assert [msg.seq for msg in everything if msg.removed_at is None] == m.live
            newest = await self.store.list_messages(session_id, limit=2, newest_first=True)
            assert [msg.seq for msg in newest] == m.live[::-1][:2]

            events = await self.store.list_events(session_id=session_id, limit=10_000)
            ids = [e.id for e in events]
            assert ids == sorted(set(ids))
            assert events[0].type == "session.created"

            # The session's status: what the model says, and never back once it ended.
            if m.closed:
                assert status is CLOSED
            elif m.expired:
                assert status is EXPIRED
            elif m.ttl is None:
                assert status is ACTIVE
            elif now >= m.last_maybe + timedelta(seconds=m.ttl):
                assert status is EXPIRED, "expiry is exact on read"
            elif now < m.last_sure + timedelta(seconds=m.ttl):
                assert status is ACTIVE, "activity pushes expiry back"
            if m.observed is not ACTIVE:
                assert status is m.observed, "closed and expired are terminal"
            m.observed = status

            # Closed and expired sessions refuse every write.
            if status is not ACTIVE:
                await self._refuses_writes(session_id, REFUSAL[status])
                if stored.status is not ACTIVE:  # closing again changes nothing
                    again = await self.service.close_session(session_id)
                    assert again.status is status and again.updated_at == stored.updated_at
        return snap

    async def _refuses_writes(self, session_id: str, error: type[Conflict]) -> None:
        writes: list[Callable[[], Coroutine[Any, Any, Any]]] = [
            lambda: self.service.add_message(session_id, "user", "x"),
            lambda: self.service.add_messages(session_id, [{"content": "x"}]),
            lambda: self.service.pop_message(session_id),
            lambda: self.service.clear_messages(session_id),
            lambda: self.service.set_session_memory(session_id, "k", "v"),
            lambda: self.service.create_run(session_id, "g", if_busy="enqueue"),
        ]
        for write in writes:
            try:
                await write()
            except error:
                continue
            raise AssertionError(f"session {session_id} took a write: expected {error.__name__}")


def test_sessions_and_runs_state_machine(backend: Backend) -> None:
    run_state_machine_as_test(
        # Hypothesis calls any factory of machines, though its annotation says a class.
        lambda: SessionsAndRuns(lambda: backend.open(backend.scratch_url())),  # type: ignore[arg-type]
        settings=MACHINE_SETTINGS,
    )
