"""Google ADK's session service over tether: ``TetherSessionService`` is a
``google.adk.sessions.BaseSessionService``.

What maps to what:

* An ADK session is a tether session of the service's owner, named by the external key
  ``adk/<app_name>/<user_id>/<session_id>`` (each part percent-encoded), with ``app = app_name``.
  ADK's users are not tether owners: one service acts for one owner (the ``owner=`` given, or the
  handle's), the deployment whose end users ADK's ``user_id`` names.
* Each event is a message of the conversation carrying the event (its JSON) as its item, with
  its role and text where it has them; it comes back equal to what was appended.
* State: unprefixed keys are session memory, ``user:`` keys the owner's user memory in namespace
  ``("adk", app_name, user_id)``, ``app:`` keys the app memory of ``app_name``; ``temp:`` keys
  stay in the in-memory session only. An event and its state delta commit in one transaction,
  with the event's timestamp as the session's ``last_update_time``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import Coroutine, Iterable
from operator import attrgetter
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import quote

from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.errors.session_not_found_error import SessionNotFoundError
from google.adk.events.event import Event
from google.adk.sessions import _session_util
from google.adk.sessions.base_session_service import (
    BaseSessionService,
    GetSessionConfig,
    ListSessionsResponse,
)
from google.adk.sessions.session import Session
from google.adk.sessions.state import State

from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.memory import MemoryItem, MemoryScope, MemoryWrite
from tether.core.message import NewMessage, Role, StoredMessage
from tether.core.session import Session as TetherSession
from tether.runtime.async_facade import AsyncTether
from tether.runtime.facade import Tether
from tether.runtime.service import Service

T = TypeVar("T")

__all__ = ["TetherSessionService"]

#: Messages per read of a conversation.
_PAGE = 1000
#: Where the adapter keeps a session's last_update_time (hidden from the session's state).
_META = ("adk",)
_UPDATED = "last_update_time"


def external_key(app_name: str, user_id: str, session_id: str) -> str:
    """The tether external key of an ADK session."""
    return _prefix(app_name, user_id) + quote(session_id, safe="")


def _prefix(app_name: str, user_id: str | None = None) -> str:
    head = f"adk/{quote(app_name, safe='')}/"
    return head if user_id is None else f"{head}{quote(user_id, safe='')}/"


def _user_namespace(app_name: str, user_id: str) -> tuple[str, ...]:
    return ("adk", app_name, user_id)


class TetherSessionService(BaseSessionService):
    """ADK sessions, events and state kept by tether (see the module docstring for the map).

    db is a database (a SQLite path or a ``postgresql://`` URL, opened and closed by the
    service) or an open ``tether.open(...)`` / ``tether.open_async(...)`` handle (left open).
    """

    def __init__(
        self,
        db: str | Path | Tether | AsyncTether | Service = "tether.db",
        *,
        owner: str | None = None,
        ttl_seconds: int | None = None,
        cached_events: int = 10_000,
    ) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._owns = not isinstance(db, Tether | AsyncTether | Service)
        if isinstance(db, Tether | AsyncTether):
            backend: Any = db.async_backend if isinstance(db, Tether) else db.backend
            if isinstance(db, Tether) and isinstance(backend, Service):
                self._loop = None if backend.store.any_loop else db._loop.loop
        elif isinstance(db, Service):
            backend = db
        elif not isinstance(db, str | Path):
            raise UsageError(
                "TetherSessionService takes a path, a database URL or an open tether handle,"
                f" not {type(db).__name__} (an open_async() that was not awaited?)"
            )
        else:
            from tether.store.factory import open_store

            backend = Service(open_store(db), owner=owner)
        if not isinstance(backend, Service):
            raise UsageError("TetherSessionService needs a database (a path, a URL or tether.open)")
        self._svc: Service = backend if owner is None else backend.for_owner(owner)
        #: Sessions never expire unless asked (ADK has no expiry); None = never.
        self._ttl = ttl_seconds
        #: The tether session id of each ADK session seen, by (app_name, user_id, session
        #: id): its external key, without encoding it on every call; and each one's creation
        #: time (the last_update_time of a session without events).
        self._ids: dict[tuple[str, str, str], str] = {}
        self._created: dict[str, float] = {}
        #: Events already built, by message id: a stored event never changes, so it is
        #: validated once per process (reads hand out shallow copies, as ADK's light copies do);
        #: the cached_events built most recently are kept.
        self._built: dict[str, Event] = {}
        self._cache_size = cached_events

    async def _run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await coro where the store lives (a sync handle's loop thread, for PostgreSQL)."""
        if self._loop is None:
            return await coro
        return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, self._loop))

    async def close(self) -> None:
        """Release the database when the service opened it."""
        if self._owns:
            await self._svc.close()

    # -- sessions ------------------------------------------------------------------------------

    async def create_session(
        self,
        *,
        app_name: str,
        user_id: str,
        state: dict[str, Any] | None = None,
        session_id: str | None = None,
    ) -> Session:
        sid = (session_id or "").strip() or str(uuid.uuid4())
        deltas = _session_util.extract_json_safe_state_delta(state or {})
        try:
            created = await self._run(
                self._svc.create_session(
                    external_key=external_key(app_name, user_id, sid),
                    app=app_name,
                    ttl_seconds=self._ttl,
                    metadata={"adk": {"app_name": app_name, "user_id": user_id}},
                )
            )
        except AlreadyExists:
            raise AlreadyExistsError(f"Session with id {sid} already exists.") from None
        writes = _writes(created.id, self._svc.owner, app_name, user_id, deltas)
        if writes:
            try:
                await self._run(self._svc.add_messages(created.id, [], memory=writes))
            except BaseException:
                await self._run(self._svc.delete_session(created.id))
                raise
        self._ids[app_name, user_id, sid] = created.id
        self._created[created.id] = created.created_at.timestamp()
        merged = await self._state_of(created.id, app_name, user_id)
        return Session(
            id=sid,
            app_name=app_name,
            user_id=user_id,
            state=merged[0],
            events=[],
            last_update_time=merged[1],
        )

    async def get_session(
        self,
        *,
        app_name: str,
        user_id: str,
        session_id: str,
        config: GetSessionConfig | None = None,
    ) -> Session | None:
        sid = session_id.strip()
        read = await self._read(app_name, user_id, sid, config or GetSessionConfig())
        if read is None:
            return None
        (state, updated), events = read
        return _session(sid, app_name, user_id, state, events, updated)

    async def list_sessions(
        self, *, app_name: str, user_id: str | None = None
    ) -> ListSessionsResponse:
        prefix = _prefix(app_name, user_id)
        found: list[TetherSession] = []
        cursor = None
        while True:
            page = await self._run(
                self._svc.list_sessions(key_prefix=prefix, limit=1000, cursor=cursor)
            )
            found.extend(page.data)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        app_state = await self._app_state(app_name)
        memory = await self._run(
            self._svc.store.memory_of_sessions([s.id for s in found], owner=self._svc.owner)
        )
        users: dict[str, dict[str, Any]] = {}
        sessions = []
        for s in found:
            user, sid = _user_and_id(s, prefix, user_id)
            if user not in users:
                users[user] = await self._user_state(app_name, user)
            own, updated = _own_state(s.created_at.timestamp(), memory.get(s.id, []))
            state = _merge(app_state, users[user], own)
            sessions.append(
                Session(
                    id=sid,
                    app_name=app_name,
                    user_id=user,
                    state=state,
                    events=[],
                    last_update_time=updated,
                )
            )
        sessions.sort(key=lambda s: (s.last_update_time, s.user_id, s.id))
        return ListSessionsResponse(sessions=sessions)

    async def delete_session(self, *, app_name: str, user_id: str, session_id: str) -> None:
        sid = session_id.strip()
        found = await self._find(app_name, user_id, sid) if sid else None
        if found is not None:
            self._ids.pop((app_name, user_id, sid), None)
            with contextlib.suppress(NotFound):
                await self._run(self._svc.delete_session(found.id))

    async def get_user_state(self, *, app_name: str, user_id: str) -> dict[str, Any]:
        return await self._user_state(app_name, user_id)

    # -- events --------------------------------------------------------------------------------

    async def append_event(self, session: Session, event: Event) -> Event:
        if event.partial:
            return event
        self._apply_temp_state(session, event)
        event = self._trim_temp_delta_state(event)
        deltas = _session_util.extract_json_safe_state_delta(
            event.actions.state_delta if event.actions else {}
        )
        key = (session.app_name, session.user_id, session.id)
        message = _message(event)
        for attempt in (1, 2):
            tid = await self._tether_id(session, key)
            writes = _writes(tid, self._svc.owner, session.app_name, session.user_id, deltas)
            writes.append(MemoryWrite(MemoryScope.SESSION, tid, _UPDATED, event.timestamp, _META))
            try:
                await self._run(self._svc.add_messages(tid, [message], memory=writes))
                break
            except NotFound:
                self._ids.pop(key, None)  # deleted (and perhaps created again): look it up anew
                if attempt == 2:
                    raise SessionNotFoundError(f"Session {session.id} not found.") from None
        session.last_update_time = event.timestamp
        return self._commit_event_to_session(session, event)

    async def tether_session_id(self, session: Session) -> str:
        """The id of the tether session behind an ADK session (SessionNotFoundError if none)."""
        return await self._tether_id(session, (session.app_name, session.user_id, session.id))

    async def _tether_id(self, session: Session, key: tuple[str, str, str]) -> str:
        tid = self._ids.get(key)
        if tid is None:
            found = await self._find(session.app_name, session.user_id, session.id)
            if found is None:
                raise SessionNotFoundError(f"Session {session.id} not found.")
            tid = found.id
        return tid

    async def _view(
        self, tid: str, app_name: str, user_id: str, config: GetSessionConfig
    ) -> tuple[tuple[dict[str, Any], float], list[Event]]:
        """A session's state (and last_update_time) and events: the newest events and the
        state in one read, then older events when more are asked for. NotFound when the
        session is gone."""
        wanted = config.num_recent_events
        newest = None if config.after_timestamp else wanted
        size = _PAGE if newest is None else min(_PAGE, newest)
        # Events built before need no item: read without items, and again with them only
        # when some event is new to this process.
        rows, memory = await self._run(
            self._svc.store.session_tail(
                tid,
                owner=self._svc.owner,
                limit=size,
                items=False,
                app=app_name,
                user_namespace=_user_namespace(app_name, user_id),
            )
        )
        if not rows:
            await self._run(self._svc.get_session(tid))  # NotFound when it is gone
        elif len(rows) == size and newest != size:
            rows += await self._stored(tid, newest, items=False, before=rows[-1][1], taken=size)
        rows.reverse()
        events = self._built_events(rows)
        if events is None:
            rows = await self._stored(tid, newest, items=True)
            rows.reverse()
            events = self._built_events(rows)
            assert events is not None
        events.sort(key=_timestamp)  # stable: ties keep the order of appending
        if config.after_timestamp:
            events = [e for e in events if e.timestamp >= (config.after_timestamp or 0)]
        if wanted is not None:
            events = events[-wanted:]
        return self._state(tid, memory), events

    def _built_events(self, rows: list[StoredMessage]) -> list[Event] | None:
        """The events stored messages carry (messages that are not ADK events left out): each
        the one built before when there is one, else built from its item; None when one was
        not built before and its item was not read. Reads share built events, as ADK's
        light-copy in-memory service does (ADK's flows copy what they change); the list and
        the state are each read's own."""
        cache = self._built
        try:
            return [cache[row[0]] for row in rows]  # every one built before: the usual read
        except KeyError:
            pass
        # A read larger than the cache would only evict what the next read needs.
        keep = len(rows) <= self._cache_size
        events = []
        for mid, _, _, _, metadata, item in rows:
            event = cache.get(mid)
            if event is None:
                if not _is_event(metadata):
                    continue
                if item is None:
                    return None
                event = Event.model_validate_json(item)
                if keep:
                    cache[mid] = event
                    if len(cache) > self._cache_size:
                        del cache[next(iter(cache))]  # the one built longest ago
            events.append(event)
        return events

    async def _stored(
        self,
        tid: str,
        newest: int | None,
        *,
        items: bool,
        before: int | None = None,
        taken: int = 0,
    ) -> list[StoredMessage]:
        """The newest messages of a conversation as stored (all of them for None), newest
        first; before and taken: after the taken newest, which end before that seq."""
        found: list[StoredMessage] = []
        while newest is None or taken + len(found) < newest:
            size = _PAGE if newest is None else min(_PAGE, newest - taken - len(found))
            page = await self._run(
                self._svc.stored_messages(tid, limit=size, before_seq=before, items=items)
            )
            found.extend(page)
            if len(page) < size:
                break
            before = page[-1][1]
        return found

    async def _read(
        self, app_name: str, user_id: str, sid: str, config: GetSessionConfig
    ) -> tuple[tuple[dict[str, Any], float], list[Event]] | None:
        """A session's state (and last_update_time) and events; None when there is none. Of
        a session read before, the events are read first: they prove it still exists (reading
        a deleted session's conversation raises NotFound), so its key is not looked up."""
        if not sid:
            return None
        key = (app_name, user_id, sid)
        tid = self._ids.get(key)
        if tid is not None and config.num_recent_events != 0:
            try:
                return await self._view(tid, app_name, user_id, config)
            except NotFound:
                self._ids.pop(key, None)  # deleted (and perhaps created again): look it up
        found = await self._find(app_name, user_id, sid)
        if found is None:
            return None
        if config.num_recent_events == 0:
            return await self._state_of(found.id, app_name, user_id), []
        return await self._view(found.id, app_name, user_id, config)

    # -- state ---------------------------------------------------------------------------------

    async def _find(self, app_name: str, user_id: str, sid: str) -> TetherSession | None:
        try:
            found = await self._run(
                self._svc.get_session_by_key(external_key(app_name, user_id, sid))
            )
        except NotFound:
            return None
        self._ids[app_name, user_id, sid] = found.id
        self._created[found.id] = found.created_at.timestamp()
        return found

    async def _state_of(
        self, tid: str, app_name: str, user_id: str
    ) -> tuple[dict[str, Any], float]:
        """The session's merged state (its own, its app's, its user's: one read) and its
        last_update_time."""
        items = await self._run(
            self._svc.store.layered_memory(
                tid,
                owner=self._svc.owner,
                app=app_name,
                user_namespace=_user_namespace(app_name, user_id),
            )
        )
        return self._state(tid, items)

    def _state(self, tid: str, items: list[MemoryItem]) -> tuple[dict[str, Any], float]:
        """The merged state and last_update_time the memory a session sees makes."""
        app = _values(i for i in items if i.scope is MemoryScope.APP)
        user = _values(i for i in items if i.scope is MemoryScope.USER)
        own = [i for i in items if i.scope is MemoryScope.SESSION]
        state, updated = _own_state(self._created.get(tid, 0.0), own)
        return _merge(app, user, state), updated

    async def _app_state(self, app_name: str) -> dict[str, Any]:
        return _values(await self._run(self._svc.list_app_memory(app_name)))

    async def _user_state(self, app_name: str, user_id: str) -> dict[str, Any]:
        namespace = _user_namespace(app_name, user_id)
        items = await self._run(self._svc.list_user_memory(namespace=namespace))
        return _values(i for i in items if i.namespace == namespace)


def _own_state(created: float, items: list[MemoryItem]) -> tuple[dict[str, Any], float]:
    """A session's own state and its last_update_time (created: when it was created), from its
    session memory."""
    state = _values(i for i in items if not i.namespace)
    meta = _values(i for i in items if i.namespace == _META)
    return state, float(meta.get(_UPDATED, created))


_timestamp = attrgetter("timestamp")
#: A Session to copy: a copy with its fields given is built without validating them again.
_BLANK = Session(id="", app_name="", user_id="")


def _session(
    sid: str,
    app_name: str,
    user_id: str,
    state: dict[str, Any],
    events: list[Event],
    updated: float,
) -> Session:
    """The Session of values the service read (already what its fields take)."""
    fields: dict[str, Any] = {"id": sid, "app_name": app_name, "user_id": user_id}
    fields.update(state=state, events=events, last_update_time=updated)
    return _BLANK.model_copy(update=fields)


def _values(items: Iterable[MemoryItem]) -> dict[str, Any]:
    return {i.key: i.value for i in items}


def _merge(app: dict[str, Any], user: dict[str, Any], own: dict[str, Any]) -> dict[str, Any]:
    merged = dict(own)
    merged.update({State.APP_PREFIX + k: v for k, v in app.items()})
    merged.update({State.USER_PREFIX + k: v for k, v in user.items()})
    return merged


def _writes(
    tid: str, owner: str, app_name: str, user_id: str, deltas: dict[str, dict[str, Any]]
) -> list[MemoryWrite]:
    """The memory items a state delta sets, scope by scope."""
    user_ns = _user_namespace(app_name, user_id)
    return [
        *(MemoryWrite(MemoryScope.SESSION, tid, k, v) for k, v in deltas["session"].items()),
        *(MemoryWrite(MemoryScope.USER, owner, k, v, user_ns) for k, v in deltas["user"].items()),
        *(MemoryWrite(MemoryScope.APP, app_name, k, v) for k, v in deltas["app"].items()),
    ]


def _user_and_id(session: TetherSession, prefix: str, user_id: str | None) -> tuple[str, str]:
    """The ADK user id and session id a listed tether session stands for."""
    from urllib.parse import unquote

    rest = (session.external_key or "")[len(prefix) :]
    if user_id is not None:
        return user_id, unquote(rest)
    user, _, sid = rest.partition("/")
    return unquote(user), unquote(sid)


def _message(event: Event) -> NewMessage:
    """The conversation message that carries event: its role and text, the event as item."""
    item = json.loads(event.model_dump_json(exclude_none=True))
    parts = event.content.parts if event.content and event.content.parts else []
    text = "\n".join(p.text for p in parts if p.text and not p.thought)
    if event.author == "user" and not event.get_function_responses():
        role = Role.USER
    elif event.get_function_responses():
        role = Role.TOOL
    else:
        role = Role.ASSISTANT
    return NewMessage(role, text, {"adk": {"author": event.author}}, item)


def _is_event(metadata: str) -> bool:
    """Whether a stored message (its metadata's JSON text) is an ADK event, not a message
    added to the session by other means."""
    return '"adk"' in metadata and "adk" in json.loads(metadata)
