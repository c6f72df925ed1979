"""Sessions: the Service's operations on them (create, read, change, close, delete, export and
import, expiry)."""

from __future__ import annotations

from typing import Any

from tether.core.clock import Clock
from tether.core.errors import NotFound, UsageError
from tether.core.ids import is_id, new_id
from tether.core.page import Page
from tether.core.session import DEFAULT_TTL_SECONDS, Session
from tether.core.status import SessionStatus
from tether.runtime import limits
from tether.runtime.renames import project_arg
from tether.store.base import UNSET, Store, Unset


class SessionOps:
    """The session operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str

    async def create_session(
        self,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        session_id: str | None = None,
        external_key: str | None = None,
        app: str | None = None,
        temporary: bool = False,
        context: dict[str, Any] | None = None,
    ) -> Session:
        """Open a new, active session (TTL: 30 days unless given; None = never expires).
        AlreadyExists when external_key already names another session of the owner.
        temporary: a stateless run's (see runtime.stateless), deleted once its runs end.
        context is the deprecated name of project."""
        session = self._new_session(
            title,
            metadata,
            project_arg(project, context),
            ttl_seconds,
            session_id,
            limits.external_key(external_key),
            app,
        )
        return await self.store.create_session(session, temporary=temporary)

    async def get_or_create_session(
        self,
        external_key: str,
        *,
        title: str | None = None,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        app: str | None = None,
        context: dict[str, Any] | None = None,
    ) -> tuple[Session, bool]:
        """The owner's session named external_key, with False; else a new one with the other
        fields, with True. Race-free: of two callers (in any processes) creating one key at
        once, one creates it and the other gets it. An existing session is returned as it is
        (the other fields are not applied to it; it may be closed or expired)."""
        key = limits.external_key(external_key)
        if key is None:
            raise UsageError("external_key is required")
        project = project_arg(project, context)
        session = self._new_session(title, metadata, project, ttl_seconds, None, key, app)
        found, created = await self.store.get_or_create_session(session)
        return found.as_of(self.clock.now()), created

    def _new_session(
        self,
        title: str | None,
        metadata: dict[str, Any] | None,
        project: dict[str, Any] | None,
        ttl_seconds: int | Unset | None,
        session_id: str | None,
        external_key: str | None,
        app: str | None,
    ) -> Session:
        if session_id is not None and not is_id(session_id):
            raise UsageError(
                f"session id {session_id!r} is not a UUID in canonical form "
                "(lower-case hex, 8-4-4-4-12)"
            )
        now = self.clock.now()
        return Session(
            id=session_id or new_id(),
            owner=self.owner,
            title=limits.title(title),
            status=SessionStatus.ACTIVE,
            created_at=now,
            updated_at=now,
            last_activity_at=now,
            ttl_seconds=DEFAULT_TTL_SECONDS if ttl_seconds is UNSET else limits.ttl(ttl_seconds),
            metadata=limits.mapping("metadata", metadata),
            project=limits.mapping("project", project),
            external_key=external_key,
            app=limits.app(app),
        )

    async def get_session(self, session_id: str) -> Session:
        """The session as of now (expiry is exact on read)."""
        session = await self.store.get_session(session_id, owner=self.owner)
        if session is None:
            raise NotFound("session", session_id)
        return session.as_of(self.clock.now())

    async def get_session_by_key(self, external_key: str) -> Session:
        """The owner's session whose external key is external_key, as of now. Only a key is
        looked up here, never an id: a key that looks like an id names its own session."""
        key = limits.external_key(external_key) or ""
        session = await self.store.get_session_by_key(key, owner=self.owner)
        if session is None:
            raise NotFound("session with external key", repr(key))
        return session.as_of(self.clock.now())

    async def list_sessions(
        self,
        *,
        status: SessionStatus | str | None = None,
        query: str | None = None,
        metadata: dict[str, Any] | None = None,
        app: str | None = None,
        key_prefix: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Session]:
        """The owner's sessions, newest activity first; query (at most MAX_KEY characters, as
        for runs: every session's text is scanned for it) matches title, metadata or external
        key, app the app exactly, key_prefix the start of the external key."""
        now = self.clock.now()
        page = await self.store.list_sessions(
            owner=self.owner,
            now=now,
            status=limits.enum(SessionStatus, status, "status"),
            query=limits.text("query", query, limits.MAX_KEY) if query else None,
            metadata=metadata or None,
            app=limits.app(app or None),
            key_prefix=limits.external_key(key_prefix or None),
            limit=limits.page_size(limit),
            cursor=cursor,
        )
        return Page([s.as_of(now) for s in page.data], page.next_cursor)

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        project: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | Unset | None = UNSET,
        app: str | Unset | None = UNSET,
        context: dict[str, Any] | Unset = UNSET,
    ) -> Session:
        """Change title, metadata, project, TTL, external key or app of an active session
        (None clears the key or the app). AlreadyExists when external_key names another
        session of the owner. context is the deprecated name of project."""
        project = project_arg(project, context, absent=UNSET)
        return await self.store.update_session(
            session_id,
            owner=self.owner,
            now=self.clock.now(),
            title=title if title is UNSET else limits.title(title),
            metadata=metadata if metadata is UNSET else limits.mapping("metadata", metadata),
            project=project if project is UNSET else limits.mapping("project", project),
            ttl_seconds=ttl_seconds if ttl_seconds is UNSET else limits.ttl(ttl_seconds),
            external_key=(
                external_key if external_key is UNSET else limits.external_key(external_key)
            ),
            app=app if app is UNSET else limits.app(app),
        )

    async def close_session(self, session_id: str) -> Session:
        """Close the session (idempotent); its unfinished runs are cancelled."""
        return await self.store.close_session(session_id, owner=self.owner, now=self.clock.now())

    async def delete_session(self, session_id: str) -> None:
        """Delete the session and everything under it."""
        await self.store.delete_session(session_id, owner=self.owner)

    async def export_session(self, session_id: str) -> dict[str, Any]:
        """The session with its runs, steps, messages, memory and events, as one JSON value
        (``import_session`` puts it into another database)."""
        return await self.store.export_session(session_id, owner=self.owner)

    async def import_session(self, archive: dict[str, Any], *, keep_owner: bool = False) -> Session:
        """Insert an exported session (ids kept) as this service's owner, or as the owner it
        was exported from with keep_owner; AlreadyExists if its id is taken here."""
        session_id = await self.store.import_session(
            archive, owner=None if keep_owner else self.owner
        )
        session = await self.store.get_session(session_id)
        assert session is not None
        return session.as_of(self.clock.now())

    async def sweep_expired(self, *, limit: int = 500) -> list[Session]:
        """Persist the expiry of every session past its TTL (all owners), with events."""
        swept: list[Session] = []
        while True:
            batch = await self.store.expire_sessions(now=self.clock.now(), limit=limit)
            swept.extend(batch)
            if len(batch) < limit:
                return swept
