"""The async twin of the library facade: the same objects and operations as ``tether.open``,
awaited instead of blocking — for programs that already run an event loop.

    async with await tether.open_async("tether.db") as tt:
        s = await tt.sessions.create(title="Keep helping me with this project")
        await s.memory.set("python", "3.11")
        run = await (await s.runs.create("Analyse the failing tests", agent="coder")).wait()
        for step in await run.steps(): ...
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterable, Mapping
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Unpack

from tether.core.clock import Clock
from tether.core.errors import NotFound, UsageError
from tether.core.event import Event
from tether.core.memory import MemoryItem
from tether.core.message import Message, NewMessage, Role
from tether.core.run import Run, RunOptionFields, RunOptions
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step
from tether.runtime import limits
from tether.runtime.backend import Backend
from tether.runtime.handles import bind as _bind
from tether.runtime.handles import page_size
from tether.runtime.renames import project_arg
from tether.runtime.schedule_views import AsyncSchedules
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.store.base import UNSET, Store, Unset

if TYPE_CHECKING:  # the run machinery loads with the worker (open_async(worker=True))
    from tether.runtime.agent import AgentRegistry
    from tether.runtime.executor import ModelResolver
    from tether.runtime.worker import Worker


async def _all_pages(fetch: Any, limit: int | None = None) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = await fetch(cursor)
        items.extend(page.data)
        if page.next_cursor is None or (limit is not None and len(items) >= limit):
            return items[:limit] if limit is not None else items
        cursor = page.next_cursor


class AsyncTether:
    """tether for async programs, over any Backend (a local Service or an HTTP client)."""

    def __init__(self, backend: Backend, worker: Worker | None = None) -> None:
        self.backend = backend
        self._worker = worker
        self.sessions = AsyncSessions(self)
        self.runs = AsyncRuns(self)
        self.schedules = AsyncSchedules(self)
        self.user_memory = AsyncUserMemory(self)

    async def webhook_secret(self, *, rotate: bool = False) -> str:
        """The secret this owner's webhooks are signed with; with rotate, a new one."""
        return await self.backend.webhook_secret(rotate=rotate)

    def app_memory(self, app: str) -> AsyncAppMemory:
        """The memory every session of app shares (this owner's app only)."""
        return AsyncAppMemory(self, limits.app(app) or "")

    async def start(self) -> AsyncTether:
        """Start the embedded worker (if any) on the running loop."""
        if self._worker is not None:
            self._worker.start()
        return self

    async def close(self, grace: float | None = None) -> None:
        """Stop the embedded worker (runs get grace seconds) and release the backend."""
        if self._worker is not None:
            await self._worker.stop(grace)
            self._worker = None
        await self.backend.close()

    def __await__(self) -> Generator[Any, None, AsyncTether]:
        """``await tether.connect_async(url)`` works as ``await tether.open_async(db)`` does:
        both give a started AsyncTether."""
        return self.start().__await__()

    async def __aenter__(self) -> AsyncTether:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()


async def open_async(
    db: str | Path | Store = "tether.db",
    *,
    owner: str | None = None,
    worker: bool = True,
    clock: Clock | None = None,
    settings: RuntimeSettings | None = None,
    agents: AgentRegistry | None = None,
    models: ModelResolver | None = None,
    durability: str = "normal",
) -> AsyncTether:
    """Open tether on a database from async code; an embedded worker runs on this loop.
    Models as for ``tether.open``: models= if given, else the ``TETHER_MODEL_*`` settings."""
    from tether.runtime.models.catalog import model_catalog
    from tether.store.factory import open_store

    if owner is not None:
        limits.owner(owner)  # before anything is opened
    if models is None:  # the settings `tether serve` reads, read the same way
        models = model_catalog()
    store = db if isinstance(db, Store) else open_store(db, durability=durability)
    service = Service(
        store, agents=agents, clock=clock, settings=settings, models=models, owner=owner
    )
    embedded = None
    if worker:
        from tether.runtime.worker import Worker

        embedded = Worker(
            store, service.agents, clock=service.clock, settings=service.settings, models=models
        )
    return await AsyncTether(service, worker=embedded).start()


class AsyncSessions:
    """``tt.sessions``: create, find and list sessions."""

    def __init__(self, tt: AsyncTether) -> None:
        self._tt = tt

    async def create(
        self,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | None = None,
        app: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> AsyncSessionHandle:
        """Open a session (as ``tether.open(...).sessions.create``)."""
        session = await self._tt.backend.create_session(
            title=title,
            metadata=metadata,
            project=project_arg(project, context),
            ttl_seconds=ttl_seconds,
            external_key=external_key,
            app=app,
        )
        return _bind(AsyncSessionHandle, session, self._tt)

    async def get_or_create(
        self,
        key: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        app: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> AsyncSessionHandle:
        """The session your external key names, created with the other fields if there is
        none; race-free across processes."""
        session, _ = await self._tt.backend.get_or_create_session(
            key,
            title=title,
            metadata=metadata,
            project=project_arg(project, context),
            ttl_seconds=ttl_seconds,
            app=app,
        )
        return _bind(AsyncSessionHandle, session, self._tt)

    async def get(
        self, session_id: str | None = None, *, key: str | None = None
    ) -> AsyncSessionHandle:
        """A session by its id, or (``key=``) by its external key: one or the other."""
        if (session_id is None) == (key is None):
            raise UsageError("give either a session id or key= (one of the two)")
        if session_id is not None:
            session = await self._tt.backend.get_session(session_id)
        else:
            session = await self._tt.backend.get_session_by_key(key or "")
        return _bind(AsyncSessionHandle, session, self._tt)

    async def list(
        self,
        *,
        status: SessionStatus | str | None = None,
        query: str | None = None,
        app: str | None = None,
        key_prefix: str | None = None,
        limit: int | None = 100,
    ) -> list[AsyncSessionHandle]:
        """Sessions, newest activity first (at most limit; None = all)."""
        backend = self._tt.backend

        async def fetch(cursor: str | None) -> Any:
            return await backend.list_sessions(
                status=status,
                query=query,
                app=app,
                key_prefix=key_prefix,
                limit=page_size(limit),
                cursor=cursor,
            )

        return [_bind(AsyncSessionHandle, s, self._tt) for s in await _all_pages(fetch, limit)]


class AsyncRuns:
    """``tt.runs``: find a run by id, or list runs across sessions."""

    def __init__(self, tt: AsyncTether) -> None:
        self._tt = tt

    async def get(self, run_id: str) -> AsyncRunHandle:
        return _bind(AsyncRunHandle, await self._tt.backend.get_run(run_id), self._tt)

    async def list(
        self,
        *,
        status: RunStatus | str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int | None = 100,
    ) -> list[AsyncRunHandle]:
        """Runs of every session, newest first (at most limit; None = all): see
        ``Tether.runs.list``."""
        backend = self._tt.backend

        async def fetch(cursor: str | None) -> Any:
            return await backend.list_all_runs(
                status=status,
                agent=agent,
                since=since,
                until=until,
                query=query,
                stuck=stuck,
                limit=page_size(limit),
                cursor=cursor,
            )

        return [_bind(AsyncRunHandle, r, self._tt) for r in await _all_pages(fetch, limit)]


class AsyncSessionHandle(Session):
    """A Session bound to the async runtime."""

    __slots__ = ("_tt",)
    _tt: AsyncTether

    @property
    def memory(self) -> AsyncSessionMemory:
        return AsyncSessionMemory(self._tt, self.id)

    @property
    def app_memory(self) -> AsyncAppMemory:
        """The memory every session of this session's app shares (UsageError without an app)."""
        if self.app is None:
            raise UsageError(f"session {self.id} belongs to no app (give it one: app=…)")
        return AsyncAppMemory(self._tt, self.app)

    @property
    def runs(self) -> AsyncSessionRuns:
        return AsyncSessionRuns(self._tt, self.id)

    @property
    def messages(self) -> AsyncSessionMessages:
        return AsyncSessionMessages(self._tt, self.id)

    async def tool_calls(
        self,
        *,
        tool: str | None = None,
        run_id: str | None = None,
        status: StepStatus | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Step]:
        """The session's tool history, aggregated over its runs, oldest first; since and until
        bound when the calls started."""
        backend = self._tt.backend

        async def fetch(cursor: str | None) -> Any:
            return await backend.list_tool_calls(
                session_id=self.id,
                run_id=run_id,
                tool=tool,
                status=status,
                since=since,
                until=until,
                limit=500,
                cursor=cursor,
            )

        return await _all_pages(fetch)

    async def assembled_context(self, budget_tokens: int | None = None) -> dict[str, Any]:
        return await self._tt.backend.get_context(self.id, budget_tokens=budget_tokens)

    async def events(self, after_id: int | None = None) -> list[Event]:
        return await self._tt.backend.list_events(session_id=self.id, after_id=after_id)

    async def stream(self, after_id: int | None = None) -> AsyncIterator[Event]:
        """The session's events as they happen (until the caller stops)."""
        async for event in self._tt.backend.stream_events(session_id=self.id, after_id=after_id):
            if event is not None:
                yield event

    async def refresh(self) -> AsyncSessionHandle:
        return await self._tt.sessions.get(self.id)

    async def update(
        self,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        project: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | Unset | None = UNSET,
        app: str | Unset | None = UNSET,
        context: dict[str, Any] | Unset = UNSET,
    ) -> AsyncSessionHandle:
        session = await self._tt.backend.update_session(
            self.id,
            title=title,
            metadata=metadata,
            project=project_arg(project, context, absent=UNSET),
            ttl_seconds=ttl_seconds,
            external_key=external_key,
            app=app,
        )
        return _bind(AsyncSessionHandle, session, self._tt)

    async def close(self) -> AsyncSessionHandle:
        return _bind(AsyncSessionHandle, await self._tt.backend.close_session(self.id), self._tt)

    async def delete(self) -> None:
        await self._tt.backend.delete_session(self.id)


class AsyncSessionRuns:
    """``session.runs``: start and list the runs of one session."""

    def __init__(self, tt: AsyncTether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    async def create(
        self,
        goal: str,
        *,
        options: RunOptions | None = None,
        **fields: Unpack[RunOptionFields],
    ) -> AsyncRunHandle:
        """Start a run (options, or keywords such as agent=, if_busy=: see RunOptions)."""
        run = await self._tt.backend.create_run(self._session_id, goal, options=options, **fields)
        return _bind(AsyncRunHandle, run, self._tt)

    async def list(self, *, status: RunStatus | str | None = None) -> list[AsyncRunHandle]:
        backend = self._tt.backend

        async def fetch(cursor: str | None) -> Any:
            return await backend.list_runs(
                self._session_id, status=status, limit=500, cursor=cursor
            )

        return [_bind(AsyncRunHandle, r, self._tt) for r in await _all_pages(fetch)]


class AsyncSessionMessages:
    """``session.messages``: the conversation."""

    def __init__(self, tt: AsyncTether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    async def add(
        self,
        role: Role | str | None = None,
        content: str | None = None,
        *,
        item: dict[str, Any] | None = None,
        **metadata: Any,
    ) -> Message:
        """Append a message; item is a structured item kept exactly (see the sync twin)."""
        return await self._tt.backend.add_message(
            self._session_id, role, content, metadata=metadata, item=item
        )

    async def add_many(self, messages: Iterable[Mapping[str, Any] | NewMessage]) -> list[Message]:
        """Append messages in one transaction, each with its event."""
        return await self._tt.backend.add_messages(self._session_id, messages)

    async def tail(self, n: int = 50, *, before: int | None = None) -> list[Message]:
        """The newest n messages (before seq before, if given), oldest first."""
        wanted = limits.positive_int("n", n, 2**62)
        newest: list[Message] = []
        cursor = None
        while len(newest) < wanted:
            page = await self._tt.backend.list_messages(
                self._session_id,
                limit=min(wanted - len(newest), limits.MAX_PAGE),
                cursor=cursor,
                newest_first=True,
                before_seq=before,
            )
            newest.extend(page.data)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        newest.reverse()
        return newest

    async def pop(self) -> Message | None:
        """Take the newest message out of the conversation (audited); it, or None."""
        return await self._tt.backend.pop_message(self._session_id)

    async def clear(self) -> int:
        """Take every message out of the conversation (audited); how many."""
        return await self._tt.backend.clear_messages(self._session_id)

    async def list(self, *, include_removed: bool = False) -> list[Message]:
        """The whole conversation, oldest first."""
        backend = self._tt.backend

        async def fetch(cursor: str | None) -> Any:
            return await backend.list_messages(
                self._session_id,
                limit=limits.MAX_PAGE,
                cursor=cursor,
                include_removed=include_removed,
            )

        return await _all_pages(fetch)


class AsyncRunHandle(Run):
    """A Run bound to the async runtime."""

    __slots__ = ("_tt",)
    _tt: AsyncTether

    async def wait(self, timeout: float | None = None) -> AsyncRunHandle:
        """Until the run is terminal or waiting for a person (or timeout passes)."""
        run = await self._tt.backend.wait_run(self.id, timeout=timeout)
        return _bind(AsyncRunHandle, run, self._tt)

    async def steps(self) -> list[Step]:
        return await self._tt.backend.list_steps(self.id)

    async def tool_calls(self, *, tool: str | None = None) -> list[Step]:
        page = await self._tt.backend.list_tool_calls(run_id=self.id, tool=tool, limit=1000)
        return page.data

    @property
    def memory(self) -> AsyncRunMemory:
        return AsyncRunMemory(self._tt, self.id)

    async def events(self, after_id: int | None = None) -> list[Event]:
        return await self._tt.backend.list_events(run_id=self.id, after_id=after_id)

    async def stream(self, after_id: int | None = None) -> AsyncIterator[Event]:
        """The run's events as they happen; ends after its terminal event."""
        async for event in self._tt.backend.stream_events(run_id=self.id, after_id=after_id):
            if event is not None:
                yield event

    async def refresh(self) -> AsyncRunHandle:
        return await self._tt.runs.get(self.id)

    async def cancel(self, reason: str = "cancelled by request") -> AsyncRunHandle:
        run = await self._tt.backend.cancel_run(self.id, reason=reason)
        return _bind(AsyncRunHandle, run, self._tt)

    async def resume(self, input: Any = None) -> AsyncRunHandle:
        return _bind(AsyncRunHandle, await self._tt.backend.resume_run(self.id, input), self._tt)


class AsyncSessionMemory:
    """Session memory: every run of the session sees it."""

    def __init__(self, tt: AsyncTether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    async def items(self) -> list[MemoryItem]:
        return await self._tt.backend.list_session_memory(self._session_id)

    async def get(self, key: str, default: Any = None) -> Any:
        try:
            return (await self._tt.backend.get_session_memory(self._session_id, key)).value
        except NotFound:
            return default

    async def set(self, key: str, value: Any) -> MemoryItem:
        return await self._tt.backend.set_session_memory(self._session_id, key, value)

    async def delete(self, key: str) -> None:
        await self._tt.backend.delete_session_memory(self._session_id, key)


class AsyncUserMemory:
    """Memory about the owner, shared by all of the owner's sessions."""

    def __init__(self, tt: AsyncTether) -> None:
        self._tt = tt

    async def items(self) -> list[MemoryItem]:
        return await self._tt.backend.list_user_memory()

    async def get(self, key: str, default: Any = None) -> Any:
        try:
            return (await self._tt.backend.get_user_memory(key)).value
        except NotFound:
            return default

    async def set(self, key: str, value: Any) -> MemoryItem:
        return await self._tt.backend.set_user_memory(key, value)

    async def delete(self, key: str) -> None:
        await self._tt.backend.delete_user_memory(key)


class AsyncAppMemory:
    """Memory every session of one of the owner's apps shares."""

    def __init__(self, tt: AsyncTether, app: str) -> None:
        self._tt = tt
        self.app = app

    async def items(self) -> list[MemoryItem]:
        return await self._tt.backend.list_app_memory(self.app)

    async def get(self, key: str, default: Any = None) -> Any:
        try:
            return (await self._tt.backend.get_app_memory(self.app, key)).value
        except NotFound:
            return default

    async def set(self, key: str, value: Any) -> MemoryItem:
        return await self._tt.backend.set_app_memory(self.app, key, value)

    async def delete(self, key: str) -> None:
        await self._tt.backend.delete_app_memory(self.app, key)


class AsyncRunMemory:
    """A run's working memory: readable from outside; promote what the session needs."""

    def __init__(self, tt: AsyncTether, run_id: str) -> None:
        self._tt = tt
        self._run_id = run_id

    async def items(self) -> list[MemoryItem]:
        return await self._tt.backend.list_run_memory(self._run_id)

    async def get(self, key: str, default: Any = None) -> Any:
        for item in await self.items():
            if item.key == key:
                return item.value
        return default

    async def promote(self, key: str, *, as_key: str | None = None) -> MemoryItem:
        return await self._tt.backend.promote_memory(self._run_id, key, as_key=as_key)
