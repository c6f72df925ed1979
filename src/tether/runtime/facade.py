"""The library as people use it: ``tether.open(...)`` → sessions and runs as objects.

Handles are the core records (a SessionHandle *is* a Session) bound to the runtime, with the
operations that concern them: ``session.runs.create(...).wait()``, ``session.memory[k] = v``,
``run.steps``, ``session.tool_calls(tool=…)``, ``session.close()``.
"""

from __future__ import annotations

import dataclasses
from abc import abstractmethod
from collections.abc import Coroutine, Iterator, MutableMapping
from pathlib import Path
from typing import Any, TypeVar

from tether.core.clock import Clock
from tether.core.errors import NotFound, UsageError
from tether.core.event import Event
from tether.core.memory import MemoryItem
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.run import IfBusy, Run
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step
from tether.runtime.agent import AgentRegistry
from tether.runtime.backend import Backend
from tether.runtime.executor import ModelResolver
from tether.runtime.loop_thread import LoopThread
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.runtime.worker import Worker
from tether.store.base import UNSET, Store, Unset

T = TypeVar("T")
R = TypeVar("R", Session, Run)


def _bind(cls: type[Any], record: Any, tt: Tether) -> Any:
    handle = cls(**{f.name: getattr(record, f.name) for f in dataclasses.fields(record)})
    object.__setattr__(handle, "_tt", tt)
    return handle


def _all_pages(fetch: Any, limit: int | None) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = fetch(cursor)
        items.extend(page.data)
        if page.next_cursor is None or (limit is not None and len(items) >= limit):
            return items[:limit] if limit is not None else items
        cursor = page.next_cursor


class Tether:
    """tether for synchronous programs, over any Backend; see ``tether.open`` and
    ``tether.connect``."""

    def __init__(self, backend: Backend, worker: Worker | None = None) -> None:
        self.backend = backend
        self._loop = LoopThread()
        self._worker = worker
        if worker is not None:
            self._call(self._start_worker(worker))
        self.sessions = Sessions(self)
        self.runs = Runs(self)
        self.user_memory = UserMemory(self)

    @property
    def service(self) -> Backend:
        """The backend (a Service on a local database, an AsyncClient over HTTP)."""
        return self.backend

    @staticmethod
    async def _start_worker(worker: Worker) -> None:
        worker.start()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        return self._loop.call(coro)

    def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
    ) -> Iterator[Event]:
        """Events of a session or a run as they happen (a run's stream ends after its terminal
        event; a session's goes on until the caller stops)."""
        stream = self.backend.stream_events(session_id=session_id, run_id=run_id, after_id=after_id)
        for event in self._loop.iterate(stream):
            if event is not None:
                yield event

    def sweep_expired(self) -> list[Session]:
        """Persist the expiry of every session past its TTL (with session.expired events)."""
        if not isinstance(self.backend, Service):
            raise UsageError("sweeping expired sessions needs the database, not a server")
        return self._call(self.backend.sweep_expired())

    def close(self, grace: float | None = None) -> None:
        """Stop the embedded worker (letting runs finish within grace) and release the backend."""
        if self._loop.loop.is_closed():
            return
        if self._worker is not None:
            self._call(self._worker.stop(grace))
        self._call(self.backend.close())
        self._loop.stop()

    def __enter__(self) -> Tether:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open(
    db: str | Path | Store = "tether.db",
    *,
    owner: str | None = None,
    worker: bool = True,
    clock: Clock | None = None,
    settings: RuntimeSettings | None = None,
    agents: AgentRegistry | None = None,
    models: ModelResolver | None = None,
    durability: str = "normal",
) -> Tether:
    """Open tether on a database (a SQLite path, ``:memory:``, or a ``postgresql://`` URL).

    With ``worker=True`` an embedded worker executes runs in the background.
    """
    from tether.store.factory import open_store

    store = db if isinstance(db, Store) else open_store(db, durability=durability)
    service = Service(
        store, agents=agents, clock=clock, settings=settings, models=models, owner=owner
    )
    embedded = None
    if worker:
        embedded = Worker(
            store, service.agents, clock=service.clock, settings=service.settings, models=models
        )
    return Tether(service, worker=embedded)


# -- sessions --------------------------------------------------------------------------------


class Sessions:
    """``tt.sessions``: create, find and list sessions."""

    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    def create(
        self,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        context: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
    ) -> SessionHandle:
        """Open a session (TTL 30 days unless given; None = never expires)."""
        s = self._tt._call(
            self._tt.backend.create_session(
                title=title, metadata=metadata, context=context, ttl_seconds=ttl_seconds
            )
        )
        return SessionHandle.bind(s, self._tt)

    def get(self, session_id: str) -> SessionHandle:
        return SessionHandle.bind(
            self._tt._call(self._tt.backend.get_session(session_id)), self._tt
        )

    def list(
        self,
        *,
        status: SessionStatus | str | None = None,
        query: str | None = None,
        limit: int | None = 100,
    ) -> list[SessionHandle]:
        """Sessions, newest activity first (at most limit; None = all)."""
        backend = self._tt.backend

        def fetch(cursor: str | None) -> Page[Session]:
            return self._tt._call(
                backend.list_sessions(status=status, query=query, limit=100, cursor=cursor)
            )

        return [SessionHandle.bind(s, self._tt) for s in _all_pages(fetch, limit)]


class Runs:
    """``tt.runs``: find a run by id."""

    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    def get(self, run_id: str) -> RunHandle:
        return RunHandle.bind(self._tt._call(self._tt.backend.get_run(run_id)), self._tt)


class SessionHandle(Session):
    """A Session bound to the runtime."""

    __slots__ = ("_tt",)
    _tt: Tether

    @classmethod
    def bind(cls, session: Session, tt: Tether) -> SessionHandle:
        handle: SessionHandle = _bind(cls, session, tt)
        return handle

    @property
    def memory(self) -> SessionMemory:
        """Session memory as a mapping: every run of the session sees it."""
        return SessionMemory(self._tt, self.id)

    @property
    def runs(self) -> SessionRuns:
        return SessionRuns(self._tt, self.id)

    @property
    def messages(self) -> SessionMessages:
        return SessionMessages(self._tt, self.id)

    def tool_calls(
        self,
        *,
        tool: str | None = None,
        run_id: str | None = None,
        status: StepStatus | str | None = None,
    ) -> list[Step]:
        """The session's tool history, aggregated over its runs, oldest first."""
        backend = self._tt.backend

        def fetch(cursor: str | None) -> Page[Step]:
            return self._tt._call(
                backend.list_tool_calls(
                    session_id=self.id,
                    run_id=run_id,
                    tool=tool,
                    status=status,
                    limit=500,
                    cursor=cursor,
                )
            )

        return _all_pages(fetch, None)

    def assembled_context(self, budget_tokens: int | None = None) -> dict[str, Any]:
        """The context the next run would start from."""
        return self._tt._call(self._tt.backend.get_context(self.id, budget_tokens=budget_tokens))

    def events(self, after_id: int | None = None) -> list[Event]:
        return self._tt._call(self._tt.backend.list_events(session_id=self.id, after_id=after_id))

    def stream(self, after_id: int | None = None) -> Iterator[Event]:
        """The session's events as they happen, until the caller stops."""
        return self._tt.stream_events(session_id=self.id, after_id=after_id)

    def refresh(self) -> SessionHandle:
        return self._tt.sessions.get(self.id)

    def update(
        self,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        context: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
    ) -> SessionHandle:
        s = self._tt._call(
            self._tt.backend.update_session(
                self.id, title=title, metadata=metadata, context=context, ttl_seconds=ttl_seconds
            )
        )
        return SessionHandle.bind(s, self._tt)

    def close(self) -> SessionHandle:
        """Close the session (only the user or expiry ends one); unfinished runs are cancelled."""
        return SessionHandle.bind(self._tt._call(self._tt.backend.close_session(self.id)), self._tt)

    def delete(self) -> None:
        self._tt._call(self._tt.backend.delete_session(self.id))


class SessionRuns:
    """``session.runs``: start and list the runs of one session."""

    def __init__(self, tt: Tether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    def create(
        self,
        goal: str,
        *,
        agent: str | None = None,
        input: dict[str, Any] | None = None,
        if_busy: IfBusy | str = IfBusy.REJECT,
        timeout_seconds: float | None = None,
        wait_timeout_seconds: float | None = None,
        idempotency_key: str | None = None,
        max_attempts: int = 1,
        metadata: dict[str, Any] | None = None,
    ) -> RunHandle:
        """Start a run; it is ``ready`` until a worker picks it up."""
        run = self._tt._call(
            self._tt.backend.create_run(
                self._session_id,
                goal,
                agent=agent,
                input=input,
                if_busy=if_busy,
                timeout_seconds=timeout_seconds,
                wait_timeout_seconds=wait_timeout_seconds,
                idempotency_key=idempotency_key,
                max_attempts=max_attempts,
                metadata=metadata,
            )
        )
        return RunHandle.bind(run, self._tt)

    def list(self, *, status: RunStatus | str | None = None) -> list[RunHandle]:
        """Every run of the session, Run 1 first."""
        backend = self._tt.backend

        def fetch(cursor: str | None) -> Page[Run]:
            return self._tt._call(
                backend.list_runs(self._session_id, status=status, limit=500, cursor=cursor)
            )

        return [RunHandle.bind(r, self._tt) for r in _all_pages(fetch, None)]

    def __iter__(self) -> Iterator[RunHandle]:
        return iter(self.list())


class SessionMessages:
    """``session.messages``: the conversation."""

    def __init__(self, tt: Tether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    def add(self, role: Role | str, content: str, **metadata: Any) -> Message:
        return self._tt._call(
            self._tt.backend.add_message(self._session_id, role, content, metadata=metadata)
        )

    def list(self) -> list[Message]:
        backend = self._tt.backend

        def fetch(cursor: str | None) -> Page[Message]:
            return self._tt._call(
                backend.list_messages(self._session_id, limit=1000, cursor=cursor)
            )

        return _all_pages(fetch, None)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.list())


class RunHandle(Run):
    """A Run bound to the runtime."""

    __slots__ = ("_tt",)
    _tt: Tether

    @classmethod
    def bind(cls, run: Run, tt: Tether) -> RunHandle:
        handle: RunHandle = _bind(cls, run, tt)
        return handle

    def wait(self, timeout: float | None = None) -> RunHandle:
        """Block until the run is terminal or waiting for a person (or timeout passes)."""
        run = self._tt._call(self._tt.backend.wait_run(self.id, timeout=timeout))
        return RunHandle.bind(run, self._tt)

    @property
    def steps(self) -> list[Step]:
        """Model calls, tool calls (call and result together), messages and notes, in order."""
        return self._tt._call(self._tt.backend.list_steps(self.id))

    def tool_calls(self, *, tool: str | None = None) -> list[Step]:
        page = self._tt._call(
            self._tt.backend.list_tool_calls(run_id=self.id, tool=tool, limit=1000)
        )
        return page.data

    @property
    def memory(self) -> RunMemory:
        """This run's working memory (read-only from outside; promote what sessions need)."""
        return RunMemory(self._tt, self.id)

    def events(self, after_id: int | None = None) -> list[Event]:
        return self._tt._call(self._tt.backend.list_events(run_id=self.id, after_id=after_id))

    def stream(self, after_id: int | None = None) -> Iterator[Event]:
        """The run's events as they happen, ending after its terminal event."""
        return self._tt.stream_events(run_id=self.id, after_id=after_id)

    def refresh(self) -> RunHandle:
        return self._tt.runs.get(self.id)

    def cancel(self, reason: str = "cancelled by request") -> RunHandle:
        return RunHandle.bind(
            self._tt._call(self._tt.backend.cancel_run(self.id, reason=reason)), self._tt
        )

    def resume(self, input: Any = None) -> RunHandle:
        return RunHandle.bind(self._tt._call(self._tt.backend.resume_run(self.id, input)), self._tt)


# -- memory mappings -------------------------------------------------------------------------


class _MemoryMapping(MutableMapping[str, Any]):
    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    @abstractmethod
    def _items(self) -> list[MemoryItem]: ...

    def items_with_source(self) -> list[MemoryItem]:
        """The stored items, with when and by which run they were written."""
        return self._items()

    def __iter__(self) -> Iterator[str]:
        return iter([i.key for i in self._items()])

    def __len__(self) -> int:
        return len(self._items())

    def __repr__(self) -> str:
        return f"{type(self).__name__}({dict(self)!r})"


class SessionMemory(_MemoryMapping):
    """Session memory of one session."""

    def __init__(self, tt: Tether, session_id: str) -> None:
        super().__init__(tt)
        self._session_id = session_id

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt.backend.list_session_memory(self._session_id))

    def __getitem__(self, key: str) -> Any:
        try:
            return self._tt._call(self._tt.backend.get_session_memory(self._session_id, key)).value
        except NotFound:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._tt._call(self._tt.backend.set_session_memory(self._session_id, key, value))

    def __delitem__(self, key: str) -> None:
        try:
            self._tt._call(self._tt.backend.delete_session_memory(self._session_id, key))
        except NotFound:
            raise KeyError(key) from None


class UserMemory(_MemoryMapping):
    """Memory about the owner, shared by all of the owner's sessions."""

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt.backend.list_user_memory())

    def __getitem__(self, key: str) -> Any:
        try:
            return self._tt._call(self._tt.backend.get_user_memory(key)).value
        except NotFound:
            raise KeyError(key) from None

    def __setitem__(self, key: str, value: Any) -> None:
        self._tt._call(self._tt.backend.set_user_memory(key, value))

    def __delitem__(self, key: str) -> None:
        try:
            self._tt._call(self._tt.backend.delete_user_memory(key))
        except NotFound:
            raise KeyError(key) from None


class RunMemory(_MemoryMapping):
    """A run's working memory: readable from outside, written only by the run itself."""

    def __init__(self, tt: Tether, run_id: str) -> None:
        super().__init__(tt)
        self._run_id = run_id

    def _items(self) -> list[MemoryItem]:
        return self._tt._call(self._tt.backend.list_run_memory(self._run_id))

    def __getitem__(self, key: str) -> Any:
        for item in self._items():
            if item.key == key:
                return item.value
        raise KeyError(key)

    def __setitem__(self, key: str, value: Any) -> None:
        raise TypeError("a run's working memory is written by the run itself")

    def __delitem__(self, key: str) -> None:
        raise TypeError("a run's working memory is written by the run itself")

    def promote(self, key: str, *, as_key: str | None = None) -> MemoryItem:
        """Copy an item into the session's memory, recorded with this run as its source."""
        return self._tt._call(self._tt.backend.promote_memory(self._run_id, key, as_key=as_key))
