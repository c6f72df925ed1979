"""Sessions, their conversation and their event log, for the SQL stores."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from tether.core.errors import AlreadyExists, NotFound
from tether.core.event import Event, EventType
from tether.core.ids import new_id
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.session import Session
from tether.core.status import SessionStatus
from tether.store.base import UNSET, Unset
from tether.store.changes import session_topic
from tether.store.cursors import decode_cursor, encode_cursor
from tether.store.sql.common import SqlBase
from tether.store.sql.database import Tx
from tether.store.sql.rows import (
    event_from_row,
    message_from_row,
    session_from_row,
    to_us,
)

_MAX_SEQ = 2**62


def _like(text: str) -> str:
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class SessionsPart(SqlBase):
    """Session lifecycle, messages and events."""

    async def create_session(self, session: Session) -> Session:
        async with self._db.write() as tx:
            if await tx.one("session_exists", id=session.id) is not None:
                raise AlreadyExists(f"session {session.id} already exists")
            await tx.run(
                "insert_session",
                id=session.id,
                owner=session.owner,
                title=session.title,
                status=session.status.value,
                metadata=self._j(session.metadata),
                context=self._j(session.context),
                ttl_seconds=session.ttl_seconds,
                created_at=to_us(session.created_at),
                updated_at=to_us(session.updated_at),
                last_activity_at=to_us(session.last_activity_at),
            )
            await self._event(
                tx,
                EventType.SESSION_CREATED,
                owner=session.owner,
                now=session.created_at,
                session_id=session.id,
                data={"session": session},
            )
        return session

    async def get_session(self, session_id: str, *, owner: str | None = None) -> Session | None:
        async with self._db.read() as tx:
            row = await tx.one("get_session", id=session_id, owner=owner)
        return None if row is None else session_from_row(row, self._db.load_json)

    async def list_sessions(
        self,
        *,
        owner: str,
        now: datetime,
        status: SessionStatus | None = None,
        query: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Session]:
        params: dict[str, Any] = {
            "owner": owner,
            "now": to_us(now),
            "status": None if status is None else status.value,
            "query": _like(query) if query else None,
            "metadata": self._j(metadata) if metadata else None,
            "limit": limit + 1,
        }
        if cursor is None:
            name = "list_sessions_first"
        else:
            name = "list_sessions_after"
            params["cursor_at"], params["cursor_id"] = decode_cursor(cursor, int, str)
        async with self._db.read() as tx:
            rows = await tx.all(name, **params)
        sessions = [session_from_row(r, self._db.load_json) for r in rows[:limit]]
        next_cursor = None
        if len(rows) > limit:
            last = sessions[-1]
            next_cursor = encode_cursor(to_us(last.last_activity_at), last.id)
        return Page(sessions, next_cursor)

    async def update_session(
        self,
        session_id: str,
        *,
        owner: str | None,
        now: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        context: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
    ) -> Session:
        async with self._db.write() as tx:
            row = await tx.one(
                "update_session",
                id=session_id,
                owner=owner,
                now=to_us(now),
                set_title=title is not UNSET,
                title=None if title is UNSET else title,
                set_metadata=metadata is not UNSET,
                metadata=None if metadata is UNSET else self._j(metadata),
                set_context=context is not UNSET,
                context=None if context is UNSET else self._j(context),
                set_ttl=ttl_seconds is not UNSET,
                ttl_seconds=None if ttl_seconds is UNSET else ttl_seconds,
            )
            if row is None:
                await self._refuse(tx, session_id, owner=owner, now=now)
            session = session_from_row(row, self._db.load_json)
            changed = {
                name: value
                for name, value in (
                    ("title", title),
                    ("metadata", metadata),
                    ("context", context),
                    ("ttl_seconds", ttl_seconds),
                )
                if value is not UNSET
            }
            await self._event(
                tx,
                EventType.SESSION_UPDATED,
                owner=session.owner,
                now=now,
                session_id=session.id,
                data={"session": session, "changed": sorted(changed)},
            )
        return session

    async def close_session(self, session_id: str, *, owner: str | None, now: datetime) -> Session:
        async with self._db.write() as tx:
            session = await self._session_in(tx, session_id, owner)
            if session.status is not SessionStatus.ACTIVE:
                return session
            if session.is_expired_at(now):
                return await self._expire_in(tx, session, now)
            row = await tx.one("close_session", id=session_id, now=to_us(now))
            assert row is not None
            closed = session_from_row(row, self._db.load_json)
            now = closed.closed_at or now
            await self._cancel_unfinished(
                tx, session_id, owner=closed.owner, now=now, reason="session closed"
            )
            await self._event(
                tx,
                EventType.SESSION_CLOSED,
                owner=closed.owner,
                now=now,
                session_id=session_id,
                data={"session": closed},
            )
        return closed

    async def _expire_in(self, tx: Tx, session: Session, now: datetime) -> Session:
        row = await tx.one("expire_session", id=session.id, now=to_us(now))
        assert row is not None
        expired: Session = session_from_row(row, self._db.load_json)
        await self._cancel_unfinished(
            tx, session.id, owner=session.owner, now=now, reason="session expired"
        )
        await self._event(
            tx,
            EventType.SESSION_EXPIRED,
            owner=session.owner,
            now=now,
            session_id=session.id,
            data={"session": expired},
        )
        return expired

    async def expire_sessions(self, *, now: datetime, limit: int = 500) -> list[Session]:
        async with self._db.write() as tx:
            rows = await tx.all("expirable_sessions", now=to_us(now), limit=limit)
            return [
                await self._expire_in(tx, session_from_row(r, self._db.load_json), now)
                for r in rows
            ]

    async def delete_session(self, session_id: str, *, owner: str | None) -> None:
        async with self._db.write() as tx:
            if await tx.one("get_session", id=session_id, owner=owner) is None:
                raise NotFound("session", session_id)
            for name in (
                "delete_session_events",
                "delete_session_memory",
                "delete_session_steps",
                "delete_session_messages",
                "delete_session_runs",
                "delete_session",
            ):
                await tx.run(name, id=session_id)
            tx.publish(session_topic(session_id))

    # -- messages ------------------------------------------------------------------------------

    async def add_message(
        self,
        *,
        session_id: str,
        owner: str | None,
        role: Role,
        content: str,
        now: datetime,
        run_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        async with self._db.write() as tx:
            touched = await self._touch_active(tx, session_id, owner=owner, now=now, add_messages=1)
            message = Message(
                id=new_id(),
                session_id=session_id,
                seq=touched["message_count"],
                role=role,
                content=content,
                created_at=now,
                run_id=run_id,
                metadata=metadata or {},
            )
            await self._insert_message(tx, message, touched["owner"])
        return message

    async def _insert_message(self, tx: Tx, message: Message, owner: str) -> None:
        await tx.run(
            "insert_message",
            id=message.id,
            session_id=message.session_id,
            seq=message.seq,
            role=message.role.value,
            content=message.content,
            run_id=message.run_id,
            metadata=self._j(message.metadata),
            created_at=to_us(message.created_at),
        )
        await self._event(
            tx,
            EventType.MESSAGE_ADDED,
            owner=owner,
            now=message.created_at,
            session_id=message.session_id,
            run_id=message.run_id,
            data={"message": message},
        )

    async def list_messages(
        self,
        session_id: str,
        *,
        limit: int = 100,
        after_seq: int | None = None,
        before_seq: int | None = None,
        newest_first: bool = False,
    ) -> list[Message]:
        async with self._db.read() as tx:
            rows = await tx.all(
                "messages_backward" if newest_first else "messages_forward",
                session_id=session_id,
                after_seq=after_seq or 0,
                before_seq=_MAX_SEQ if before_seq is None else before_seq,
                limit=limit,
            )
        return [message_from_row(r, self._db.load_json) for r in rows]

    # -- events --------------------------------------------------------------------------------

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]:
        if (session_id is None) == (run_id is None):
            raise ValueError("list_events needs exactly one of session_id and run_id")
        async with self._db.read() as tx:
            if run_id is not None:
                rows = await tx.all(
                    "events_of_run", run_id=run_id, after_id=after_id or 0, limit=limit
                )
            else:
                rows = await tx.all(
                    "events_of_session", session_id=session_id, after_id=after_id or 0, limit=limit
                )
        return [event_from_row(r, self._db.load_json) for r in rows]
