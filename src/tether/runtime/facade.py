"""The library as people use it: ``tether.open(...)`` → sessions and runs as objects (see
runtime.handles), for synchronous programs; ``tether.connect(...)`` is the same over HTTP."""

from __future__ import annotations

import asyncio
import atexit
import logging
import os
from collections.abc import Coroutine, Iterator
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tether.core.clock import Clock
from tether.core.errors import UsageError
from tether.core.event import Event
from tether.core.page import Page
from tether.core.run import Run
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus
from tether.runtime import limits
from tether.runtime.backend import Backend
from tether.runtime.blocking import BlockingBackend
from tether.runtime.handles import RunHandle, SessionHandle, _all_pages, page_size
from tether.runtime.loop_thread import CallerLoops, LoopThread
from tether.runtime.renames import project_arg
from tether.runtime.schedule_views import Schedules
from tether.runtime.service import Service
from tether.runtime.settings import RuntimeSettings
from tether.store.base import UNSET, Store, Unset

if TYPE_CHECKING:  # the run machinery loads with the worker (open(worker=True)), not for reads
    from tether.runtime.agent import AgentRegistry
    from tether.runtime.executor import ModelResolver
    from tether.runtime.worker import Worker

T = TypeVar("T")
R = TypeVar("R", Session, Run)
log = logging.getLogger("tether.library")


class Tether:
    """tether for synchronous programs, over any Backend; see ``tether.open`` and
    ``tether.connect``."""

    def __init__(self, backend: Backend, worker: Worker | None = None) -> None:
        #: The backend's async operations, which the handles call through _call.
        self._backend = backend
        self._loop = LoopThread()
        # Calls on a store usable from any loop run in the caller's thread (no thread hop);
        # the worker and streams stay on the loop thread.
        self._here = (
            CallerLoops() if isinstance(backend, Service) and backend.store.any_loop else None
        )
        self._worker = worker
        if worker is not None:
            self._loop.call(self._start_worker(worker))
            # A program that ends without close() must not leave its claimed runs "running"
            # until a lease expires: they go back to the queue at once. (Not in a forked
            # child: the loop thread running the worker stayed in the parent.)
            self._pid = os.getpid()
            atexit.register(self._close_at_exit)
        self.sessions = Sessions(self)
        self.runs = Runs(self)
        self.schedules = Schedules(self)
        self.user_memory = UserMemory(self)

    def app_memory(self, app: str) -> AppMemory:
        """The memory every session of app shares (this owner's app: another owner's app of
        the same name shares nothing with it)."""
        return AppMemory(self, limits.app(app) or "")

    @property
    def backend(self) -> BlockingBackend:
        """The operations under the handles (``tt.backend.list_messages(session_id, …)``), with
        the names and parameters of ``tether.Service``, returning their results."""
        return BlockingBackend(self._backend, self._call, self._loop.iterate)

    @property
    def async_backend(self) -> Backend:
        """The backend's own async operations (a ``tether.Service`` on a database), for code
        that awaits them itself, as the framework integrations do."""
        return self._backend

    @property
    def service(self) -> BlockingBackend:
        """The same as ``backend``."""
        return self.backend

    @staticmethod
    async def _start_worker(worker: Worker) -> None:
        worker.start()

    def _call(self, coro: Coroutine[Any, Any, T]) -> T:
        if self._here is not None and self._here.usable():
            return self._here.call(coro)
        return self._loop.call(coro)

    async def run_async(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await coro (a call on ``self.backend``) from any thread's event loop: in place when
        the backend answers on any loop, else on tether's own loop."""
        if self._here is not None:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop.loop))

    def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
    ) -> Iterator[Event]:
        """Events of a session or a run as they happen (a run's stream ends after its terminal
        event; a session's goes on until the caller stops)."""
        stream = self._backend.stream_events(
            session_id=session_id, run_id=run_id, after_id=after_id
        )
        for event in self._loop.iterate(stream):
            if event is not None:
                yield event

    def sweep_expired(self) -> list[Session]:
        """Persist the expiry of every session past its TTL (with session.expired events)."""
        if not isinstance(self._backend, Service):
            raise UsageError("sweeping expired sessions needs the database, not a server")
        return self._call(self._backend.sweep_expired())

    def export_session(self, session_id: str) -> dict[str, Any]:
        """The session with its runs, steps, messages, memory and events, as one JSON value."""
        return self._call(self._backend.export_session(session_id))

    def import_session(self, archive: dict[str, Any], *, keep_owner: bool = False) -> SessionHandle:
        """Insert what export_session made (ids kept) as this owner (or, keep_owner, as the
        owner it was exported from); the database only, not a server."""
        if not isinstance(self._backend, Service):
            raise UsageError("importing a session needs the database, not a server")
        imported = self._backend.import_session(archive, keep_owner=keep_owner)
        return SessionHandle.bind(self._call(imported), self)

    def webhook_secret(self, *, rotate: bool = False) -> str:
        """The secret this owner's webhooks are signed with (X-Tether-Signature: HMAC-SHA256
        of "<t>." + body); with rotate, a new one."""
        return self._call(self._backend.webhook_secret(rotate=rotate))

    def live_agents(self) -> set[str] | None:
        """The agents the running workers sharing the database have; None over HTTP (the
        server does not say)."""
        if not isinstance(self._backend, Service):
            return None
        return self._call(self._backend.live_agents())

    def close(self, grace: float | None = None) -> None:
        """Stop the embedded worker (letting runs finish within grace) and release the backend."""
        if self._loop.loop.is_closed():
            return
        if self._worker is not None:
            atexit.unregister(self._close_at_exit)
            self._loop.call(self._worker.stop(grace))
        self._loop.call(self._backend.close())
        self._loop.stop()
        if self._here is not None:
            self._here.close()

    def _close_at_exit(self) -> None:
        if os.getpid() != self._pid:
            return
        try:
            self.close(grace=0)
        except Exception as exc:  # at exit a lease is the fallback, not a traceback
            log.warning("could not hand runs back at exit (their leases will expire): %s", exc)

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

    With ``worker=True`` an embedded worker executes runs in the background. Runs get their
    model from models= if given, else from the environment as ``tether serve`` reads it
    (``TETHER_MODEL_BASE_URL``, ``TETHER_MODEL``, ``TETHER_MODEL_API_KEY``).
    """
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
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | None = None,
        app: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionHandle:
        """Open a session (TTL 30 days unless given; None = never expires). project is what
        it works on, which every run starts from (e.g. ``{"workspace": "./calc"}``; context is
        its deprecated name); external_key is your own name for it (unique among your
        sessions); app, the app whose memory its runs share."""
        project = project_arg(project, context)
        s = self._tt._call(
            self._tt._backend.create_session(
                title=title,
                metadata=metadata,
                project=project,
                ttl_seconds=ttl_seconds,
                external_key=external_key,
                app=app,
            )
        )
        return SessionHandle.bind(s, self._tt)

    def get_or_create(
        self,
        key: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        app: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> SessionHandle:
        """The session your external key names, created with the other fields if there is
        none; race-free across processes (two creating one key at once get one session)."""
        project = project_arg(project, context)
        s, _ = self._tt._call(
            self._tt._backend.get_or_create_session(
                key,
                title=title,
                metadata=metadata,
                project=project,
                ttl_seconds=ttl_seconds,
                app=app,
            )
        )
        return SessionHandle.bind(s, self._tt)

    def get(self, session_id: str | None = None, *, key: str | None = None) -> SessionHandle:
        """A session by its id, or (``key=``) by its external key: one or the other, never
        guessed, so a key that looks like an id never finds another session."""
        if (session_id is None) == (key is None):
            raise UsageError("give either a session id or key= (one of the two)")
        found = (
            self._tt._backend.get_session(session_id)
            if session_id is not None
            else self._tt._backend.get_session_by_key(key or "")
        )
        return SessionHandle.bind(self._tt._call(found), self._tt)

    def list(
        self,
        *,
        status: SessionStatus | str | None = None,
        query: str | None = None,
        app: str | None = None,
        key_prefix: str | None = None,
        limit: int | None = 100,
    ) -> list[SessionHandle]:
        """Sessions, newest activity first (at most limit; None = all); query matches title,
        metadata and external key."""
        backend = self._tt._backend

        def fetch(cursor: str | None) -> Page[Session]:
            return self._tt._call(
                backend.list_sessions(
                    status=status,
                    query=query,
                    app=app,
                    key_prefix=key_prefix,
                    limit=page_size(limit),
                    cursor=cursor,
                )
            )

        return [SessionHandle.bind(s, self._tt) for s in _all_pages(fetch, limit)]


class Runs:
    """``tt.runs``: find a run by id, or list runs across sessions."""

    def __init__(self, tt: Tether) -> None:
        self._tt = tt

    def get(self, run_id: str) -> RunHandle:
        return RunHandle.bind(self._tt._call(self._tt._backend.get_run(run_id)), self._tt)

    def list(
        self,
        *,
        status: RunStatus | str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int | None = 100,
    ) -> list[RunHandle]:
        """Runs of every session, newest first (at most limit; None = all), without their
        contexts: created in [since, until), query in the goal, agent, input, output or error;
        stuck = ready runs whose agent no running worker has."""
        backend = self._tt._backend

        def fetch(cursor: str | None) -> Page[Run]:
            return self._tt._call(
                backend.list_all_runs(
                    status=status,
                    agent=agent,
                    since=since,
                    until=until,
                    query=query,
                    stuck=stuck,
                    limit=page_size(limit),
                    cursor=cursor,
                )
            )

        return [RunHandle.bind(r, self._tt) for r in _all_pages(fetch, limit)]


from tether.runtime.memory_views import AppMemory, UserMemory  # noqa: E402
