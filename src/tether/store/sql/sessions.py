"""Sessions, their conversation and their event log, for the SQL stores."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from itertools import count, islice
from typing import Any

from tether.core.clock import to_iso
from tether.core.errors import AlreadyExists, NotFound, UsageError
from tether.core.event import Event, EventType
from tether.core.ids import new_id, new_ids
from tether.core.memory import MemoryScope, MemoryWrite
from tether.core.message import Message, NewMessage, Role, StoredMessage
from tether.core.page import Page
from tether.core.run import Activity
from tether.core.session import Session
from tether.core.status import SessionStatus
from tether.store.base import UNSET, SessionSort, Unset
from tether.store.changes import session_topic
from tether.store.cursors import decode_cursor, encode_cursor
from tether.store.sql.common import SqlBase, event_topics
from tether.store.sql.database import ReadTx, Row, Tx
from tether.store.sql.rows import (
    MAX_SEQ,
    MessageRow,
    event_from_row,
    join_namespace,
    memory_from_row,
    message_event_refs,
    message_event_texts,
    message_from_row,
    messages_from_values,
    new_message,
    session_from_row,
    sessions_from_values,
    stored_scope_id,
    to_us,
)


class _NothingToRemove(Exception):
    """A pop or clear found nothing to take out: its transaction is rolled back (internal)."""


def like_pattern(text: str) -> str:
    """text as a LIKE pattern matching it anywhere (its wildcards escaped)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


async def stored_rows(
    tx: ReadTx, session_id: str, owner: str | None, limit: int, before_seq: int | None, items: bool
) -> list[StoredMessage]:
    """store.stored_messages, inside tx."""
    rows = await tx.all(
        "stored_messages",
        session_id=session_id,
        owner=owner,
        before_seq=MAX_SEQ if before_seq is None else before_seq,
        limit=limit,
        items=items,
    )
    # Rows are dicts (PostgreSQL) or sqlite3.Row (SQLite), their values in column order.
    if rows and isinstance(rows[0], dict):
        return [tuple(r.values()) for r in rows]
    sqlite_rows: list[Any] = rows
    return list(map(tuple, sqlite_rows))


class SessionsPart(SqlBase):
    """Session lifecycle, messages and events."""

    async def create_session(self, session: Session, *, temporary: bool = False) -> Session:
        async with self._db.write() as tx:
            if session.external_key is not None:
                await self._check_key_free(tx, session.owner, session.external_key, session.id)
            await self._insert_session(tx, session)
            if temporary:
                await tx.run("mark_session_temporary", id=session.id)
        return session

    async def get_or_create_session(self, session: Session) -> tuple[Session, bool]:
        if session.external_key is None:
            raise ValueError("get_or_create_session needs a session with an external key")
        async with self._db.write() as tx:
            row = await tx.one("session_by_key", owner=session.owner, key=session.external_key)
            if row is not None:
                return session_from_row(row, self._db.load_json), False
            await self._insert_session(tx, session)
        return session, True

    async def _insert_session(self, tx: Tx, session: Session) -> None:
        """Insert session (+ session.created); AlreadyExists if its id is taken. On PostgreSQL
        a concurrent insert of the same id or key fails the transaction as a lost race, and the
        store runs the operation again: it then finds what won."""
        if await tx.one("session_exists", id=session.id) is not None:
            raise AlreadyExists(f"session {session.id} already exists")
        await tx.run(
            "insert_session",
            id=session.id,
            owner=session.owner,
            title=session.title,
            status=session.status.value,
            metadata=self._j(session.metadata),
            context=self._j(session.project),
            ttl_seconds=session.ttl_seconds,
            created_at=to_us(session.created_at),
            updated_at=to_us(session.updated_at),
            last_activity_at=to_us(session.last_activity_at),
            external_key=session.external_key,
            app=session.app,
        )
        await self._event(
            tx,
            EventType.SESSION_CREATED,
            owner=session.owner,
            now=session.created_at,
            session_id=session.id,
            data={"session": session},
        )

    async def _check_key_free(self, tx: Tx, owner: str, key: str, session_id: str) -> None:
        """AlreadyExists when another session of owner has the external key."""
        row = await tx.one("session_by_key", owner=owner, key=key)
        if row is not None and row["id"] != session_id:
            raise AlreadyExists(
                f"the external key {key!r} already names session {row['id']}",
                external_key=key,
                session_id=row["id"],
            )

    async def get_session(self, session_id: str, *, owner: str | None = None) -> Session | None:
        async with self._db.read() as tx:
            row = await tx.one("get_session", id=session_id, owner=owner)
        return None if row is None else session_from_row(row, self._db.load_json)

    async def get_session_by_key(self, key: str, *, owner: str) -> Session | None:
        async with self._db.read() as tx:
            row = await tx.one("session_by_key", owner=owner, key=key)
        return None if row is None else session_from_row(row, self._db.load_json)

    async def list_sessions(
        self,
        *,
        owner: str,
        now: datetime,
        status: SessionStatus | None = None,
        query: str | None = None,
        metadata: dict[str, Any] | None = None,
        app: str | None = None,
        key_prefix: str | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Session]:
        params: dict[str, Any] = {
            "owner": owner,
            "now": to_us(now),
            "status": None if status is None else status.value,
            "query": like_pattern(query) if query else None,
            "needle": query or None,
            "metadata": self._j(metadata) if metadata else None,
            "app": app,
            "key_prefix": key_prefix or None,
            "limit": limit + 1,
        }
        if cursor is None:
            name = "list_sessions_first"
        else:
            name = "list_sessions_after"
            params["cursor_at"], params["cursor_id"] = decode_cursor(cursor, int, str)
        more = False

        def page(rows: Iterable[Iterable[Any]]) -> list[Session]:
            """The first limit sessions (the row after them, read to learn there is a next
            page, is not decoded)."""
            nonlocal more
            rest = iter(rows)
            found = sessions_from_values(islice(rest, limit))
            more = next(rest, None) is not None
            return found

        async with self._db.read() as tx:
            sessions = await tx.records(name, page, **params)
        next_cursor = None
        if more:
            last = sessions[-1]
            next_cursor = encode_cursor(to_us(last.last_activity_at), last.id)
        return Page(sessions, next_cursor)

    def _search_params(
        self,
        owner: str,
        metadata: dict[str, Any] | None,
        project: dict[str, Any] | None,
        ids: Sequence[str] | None,
        activity: Activity | None,
    ) -> dict[str, Any]:
        return {
            "owner": owner,
            "metadata": self._j(metadata) if metadata else None,
            "context": self._j(project) if project else None,
            "ids": None if ids is None else self._j(list(ids)),
            "activity": None if activity is None else activity.value,
        }

    async def search_sessions(
        self,
        *,
        owner: str,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | None = None,
        sort: SessionSort = "created_at",
        descending: bool = True,
        limit: int = 10,
        offset: int = 0,
    ) -> list[Session]:
        params = self._search_params(owner, metadata, project, ids, activity)
        async with self._db.read() as tx:
            return await tx.records(
                "search_sessions",
                sessions_from_values,
                **params,
                sort=sort,
                descending=descending,
                limit=limit,
                offset=offset,
            )

    async def count_sessions(
        self,
        *,
        owner: str,
        metadata: dict[str, Any] | None = None,
        project: dict[str, Any] | None = None,
        ids: Sequence[str] | None = None,
        activity: Activity | None = None,
    ) -> int:
        params = self._search_params(owner, metadata, project, ids, activity)
        async with self._db.read() as tx:
            row = await tx.one("count_sessions", **params)
        return 0 if row is None else int(row["n"])

    async def update_session(
        self,
        session_id: str,
        *,
        owner: str | None,
        now: datetime,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        project: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | Unset | None = UNSET,
        app: str | Unset | None = UNSET,
    ) -> Session:
        async with self._db.write() as tx:
            if isinstance(external_key, str):
                current = await self._session_in(tx, session_id, owner)
                await self._check_key_free(tx, current.owner, external_key, session_id)
            row = await tx.one(
                "update_session",
                id=session_id,
                owner=owner,
                now=to_us(now),
                set_title=title is not UNSET,
                title=None if title is UNSET else title,
                set_metadata=metadata is not UNSET,
                metadata=None if metadata is UNSET else self._j(metadata),
                set_context=project is not UNSET,
                context=None if project is UNSET else self._j(project),
                set_ttl=ttl_seconds is not UNSET,
                ttl_seconds=None if ttl_seconds is UNSET else ttl_seconds,
                set_external_key=external_key is not UNSET,
                external_key=None if external_key is UNSET else external_key,
                set_app=app is not UNSET,
                app=None if app is UNSET else app,
            )
            if row is None:
                await self._refuse(tx, session_id, owner=owner, now=now)
            session = session_from_row(row, self._db.load_json)
            changed = {
                name: value
                for name, value in (
                    ("title", title),
                    ("metadata", metadata),
                    ("project", project),
                    ("context", project),  # its former name, for readers of older events
                    ("ttl_seconds", ttl_seconds),
                    ("external_key", external_key),
                    ("app", app),
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
                "delete_session_webhook_deliveries",
                "delete_session_runs",
                "delete_session_checkpoint_writes",
                "delete_session_checkpoint_blobs",
                "delete_session_checkpoints",
                "delete_session_checkpoint_thread",
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
        item: dict[str, Any] | None = None,
    ) -> Message:
        metadata = metadata or {}
        at = to_us(now)
        if self._db.message_refs and at >= 0:  # (the event by reference, as _message_events)
            owned = None
            try:
                row = {
                    "id": None,
                    "session_id": session_id,
                    "seq": None,
                    "role": role._value_,
                    "content": content,
                    "run_id": run_id,
                    "metadata": self._j(metadata),
                    "created_at": at,
                    "item": self._j(item),
                }
            except UsageError:
                pass  # (not JSON: the general path refuses it, once the session has its say)
            else:
                owned = self._db.append_message(row, owner)
            if owned is not None:
                return self._announced_message(row, owned, role, now, metadata, item)
        async with self._db.write() as tx:
            touched = await self._touch_active(tx, session_id, owner=owner, now=now, add_messages=1)
            message = new_message(
                new_id(),
                session_id,
                touched["message_count"],
                role,
                content,
                now,
                run_id,
                metadata,
                item,
                None,
            )
            await self._insert_message(tx, message, touched["owner"])
        return message

    def _announced_message(
        self,
        row: dict[str, Any],
        owner: str,
        role: Role,
        now: datetime,
        metadata: dict[str, Any],
        item: dict[str, Any] | None,
    ) -> Message:
        """The message Database.append_message committed (row: its parameters, id and seq
        filled in), announced as a write transaction announces its event (_encoded_events)."""
        message = new_message(
            row["id"],
            row["session_id"],
            row["seq"],
            role,
            row["content"],
            now,
            row["run_id"],
            metadata,
            item,
            None,
        )
        type_ = EventType.MESSAGE_ADDED
        self._db.changes.publish(event_topics(type_, owner, message.session_id, message.run_id))
        if self._observers:
            self._tell_all(type_, [{"message": message}])
        return message

    async def add_messages(
        self,
        *,
        session_id: str,
        owner: str | None,
        messages: Sequence[NewMessage],
        now: datetime,
        memory: Sequence[MemoryWrite] = (),
    ) -> list[Message]:
        if not messages and not memory:
            raise ValueError("add_messages needs at least one message or memory item")
        async with self._db.write() as tx:
            touched = await self._touch_active(
                tx, session_id, owner=owner, now=now, add_messages=len(messages)
            )
            for write in memory:
                await self._set_memory(tx, write, session_id, touched["owner"], now)
            if not messages:
                return []
            return await self._append_messages(tx, touched, session_id, messages, now)

    async def _append_messages(
        self, tx: Tx, touched: Row, session_id: str, messages: Sequence[NewMessage], now: datetime
    ) -> list[Message]:
        """Insert messages (already counted by _touch_active, whose row touched is) with their
        events, inside tx: all the messages at once, then all the events (Tx.insert_rows,
        Tx.append_events)."""
        first = touched["message_count"] - len(messages) + 1
        j = self._j
        rows: list[MessageRow] = [
            (
                id_,
                seq,
                new.role._value_,
                new.content,
                j(new.metadata) if new.metadata else "{}",
                None if new.item is None else j(new.item),
            )
            for seq, id_, new in zip(count(first), new_ids(len(messages)), messages)
        ]
        at = to_us(now)
        await tx.insert_rows("insert_messages", rows, session_id=session_id, created_at=at)
        added = [
            new_message(
                row[0],
                session_id,
                row[1],
                new.role,
                new.content,
                now,
                None,
                new.metadata,
                new.item,
                None,
            )
            for row, new in zip(rows, messages, strict=True)
        ]
        await self._encoded_events(
            tx,
            EventType.MESSAGE_ADDED,
            owner=touched["owner"],
            now=now,
            session_id=session_id,
            run_id=None,
            texts=self._message_events(rows, session_id, None, now, at),
            told=lambda: [{"message": m} for m in added],
        )
        return added

    async def _set_memory(
        self, tx: Tx, write: MemoryWrite, session_id: str, owner: str, now: datetime
    ) -> None:
        """Set one memory item beside an append to session_id, owned by owner (+ memory.set)."""
        scope = write.scope
        if scope is MemoryScope.RUN or (
            scope is MemoryScope.SESSION and write.scope_id != session_id
        ):
            raise UsageError(f"an append to session {session_id} sets no {scope.value} memory")
        if scope is MemoryScope.USER and write.scope_id != owner:
            raise NotFound("user", write.scope_id)
        own = scope is MemoryScope.SESSION
        row = await tx.one(
            "upsert_memory",
            scope=scope.value,
            scope_id=stored_scope_id(scope, write.scope_id, owner),
            namespace=join_namespace(write.namespace),
            key=write.key,
            value=self._j(write.value),
            session_id=session_id if own else None,
            source_run_id=None,
            now=to_us(now),
        )
        assert row is not None  # an upsert returns its row
        item = memory_from_row(row, self._db.load_json)
        await self._event(
            tx,
            EventType.MEMORY_SET,
            owner=owner,
            now=now,
            session_id=session_id if own else None,
            data={"item": item},
        )

    async def _insert_message(self, tx: Tx, message: Message, owner: str) -> None:
        metadata, item = self._j(message.metadata), self._j(message.item)
        at = to_us(message.created_at)
        await tx.later(
            "insert_message",
            id=message.id,
            session_id=message.session_id,
            seq=message.seq,
            role=message.role._value_,
            content=message.content,
            run_id=message.run_id,
            metadata=metadata,
            created_at=at,
            item=item,
        )
        row = (message.id, message.seq, message.role._value_, message.content, metadata, item)
        await self._encoded_events(
            tx,
            EventType.MESSAGE_ADDED,
            owner=owner,
            now=message.created_at,
            session_id=message.session_id,
            run_id=message.run_id,
            texts=self._message_events(
                [row], message.session_id, message.run_id, message.created_at, at
            ),
            told=lambda: [{"message": message}],
        )

    def _message_events(
        self,
        rows: list[MessageRow],
        session_id: str,
        run_id: str | None,
        now: datetime,
        at: int,
    ) -> list[str]:
        """The data of the message.added events of rows, appended at now (at: in epoch
        microseconds): by reference where the backend reads them back whole (the events_read
        view renders times from 1970 on), else full copies."""
        if self._db.message_refs and at >= 0:
            return message_event_refs(rows)
        return message_event_texts(rows, session_id, run_id, to_iso(now))

    async def list_messages(
        self,
        session_id: str,
        *,
        owner: str | None = None,
        limit: int = 100,
        after_seq: int | None = None,
        before_seq: int | None = None,
        newest_first: bool = False,
        include_removed: bool = False,
    ) -> list[Message]:
        async with self._db.read() as tx:
            return await tx.records(
                "messages_backward" if newest_first else "messages_forward",
                lambda rows: messages_from_values(session_id, rows),
                session_id=session_id,
                owner=owner,
                after_seq=after_seq or 0,
                before_seq=MAX_SEQ if before_seq is None else before_seq,
                removed=include_removed,
                limit=limit,
            )

    async def stored_messages(
        self,
        session_id: str,
        *,
        owner: str | None,
        limit: int,
        before_seq: int | None = None,
        items: bool = True,
    ) -> list[StoredMessage]:
        async with self._db.read() as tx:
            return await stored_rows(tx, session_id, owner, limit, before_seq, items)

    async def pop_message(
        self, session_id: str, *, owner: str | None, now: datetime
    ) -> Message | None:
        try:
            return await self._pop(session_id, owner=owner, now=now)
        except _NothingToRemove:
            return None

    async def _pop(self, session_id: str, *, owner: str | None, now: datetime) -> Message:
        async with self._db.write() as tx:
            # Taking the session row first serialises this with every append and removal.
            touched = await self._touch_active(tx, session_id, owner=owner, now=now)
            newest = await tx.one(
                "newest_message", session_id=session_id, after_seq=touched["cleared_seq"]
            )
            if newest is None:
                raise _NothingToRemove  # rolls the touch back: nothing changed
            row = await tx.one("remove_message", id=newest["id"], now=to_us(now))
            assert row is not None  # the session row, locked above, serialises removals
            removed = message_from_row(row)
            await self._event(
                tx,
                EventType.MESSAGE_REMOVED,
                owner=touched["owner"],
                now=now,
                session_id=session_id,
                data={"message_id": removed.id, "seq": removed.seq},
            )
        return removed

    async def clear_messages(self, session_id: str, *, owner: str | None, now: datetime) -> int:
        try:
            return await self._clear(session_id, owner=owner, now=now)
        except _NothingToRemove:
            return 0

    async def _clear(self, session_id: str, *, owner: str | None, now: datetime) -> int:
        async with self._db.write() as tx:
            touched = await self._touch_active(tx, session_id, owner=owner, now=now)
            floor, through = touched["cleared_seq"], touched["message_count"]
            removed = await tx.run(
                "remove_messages", session_id=session_id, after_seq=floor, now=to_us(now)
            )
            if not removed:
                raise _NothingToRemove  # rolls the touch back: nothing changed
            await tx.run("set_cleared_seq", id=session_id, seq=through)
            await self._event(
                tx,
                EventType.MESSAGES_CLEARED,
                owner=touched["owner"],
                now=now,
                session_id=session_id,
                data={"after_seq": floor, "through_seq": through, "removed": removed},
            )
        return removed

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
