"""TetherSession: the Agents SDK's ``Session`` protocol over a tether session.

The SDK's session id is the tether session's external key (the session is created on the first
write, so reading an unknown id creates nothing). Each item is one message of the conversation,
carrying the item exactly as added; its role and text show in the UI and in context assembly.
``pop_item`` and ``clear_session`` take messages out of the conversation as recorded events
(``message.removed``, ``messages.cleared``): the rows stay for the audit trail. A Runner call
with the session is recorded as a run of it (see runs).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, TypeVar, cast

from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from tether.core.errors import NotFound, UsageError
from tether.core.message import Message, Role, StoredMessage
from tether.integrations.openai_agents import runs
from tether.integrations.openai_agents._link import Db, link
from tether.integrations.openai_agents._settle import settled
from tether.runtime import limits
from tether.runtime.service import Service

if TYPE_CHECKING:
    from agents.items import TResponseInputItem
    from agents.run_context import RunContextWrapper

T = TypeVar("T")


class TetherSession:
    """An Agents SDK session stored in tether: pass it to ``Runner.run(..., session=...)``.

    ``db_path`` is a SQLite file (shared by every TetherSession on it in this process),
    ``":memory:"`` (private to this instance), a ``postgresql://`` URL, or an open
    ``tether.open(...)`` / ``tether.connect(...)`` / ``tether.open_async(...)`` handle. Usable
    from any thread and any event loop.
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        session_id: str,
        db_path: Db = ":memory:",
        *,
        session_settings: SessionSettings | dict[str, Any] | None = None,
    ) -> None:
        limits.external_key(session_id)
        self.session_id = session_id
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        self._link = link(db_path)
        #: The tether session's id, once known.
        self._id: str | None = None
        self._closed = False

    @property
    def tether_session_id(self) -> str | None:
        """The id of the tether session behind this one (None until it has been written)."""
        return self._id

    async def get_items(
        self, limit: int | None = None, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> list[TResponseInputItem]:
        """The newest limit items (default: session_settings.limit; None: all), oldest first."""
        self._check_open()
        await self._attach(wrapper)
        wanted = resolve_session_limit(limit, self.session_settings)
        if wanted == 0:
            return []
        newest = None if wanted is None or wanted < 0 else wanted
        nothing: list[TResponseInputItem] = []
        return await self._on_session(
            lambda sid: self._read(sid, newest), create=False, empty=nothing
        )

    async def add_items(
        self, items: list[TResponseInputItem], *, wrapper: RunContextWrapper[Any] | None = None
    ) -> None:
        """Append items to the conversation, in order (up to limits.MAX_BATCH atomically)."""
        self._check_open()
        await self._attach(wrapper, items)
        if not items:
            return
        batch = [{"item": item} for item in items]

        async def append(sid: str) -> None:
            for start in range(0, len(batch), limits.MAX_BATCH):
                chunk = batch[start : start + limits.MAX_BATCH]
                await self._link.backend.add_messages(sid, chunk)

        await settled(self._on_session(append, create=True, empty=None))

    async def pop_item(
        self, *, wrapper: RunContextWrapper[Any] | None = None
    ) -> TResponseInputItem | None:
        """Take the newest item out of the conversation (recorded); it, or None."""
        self._check_open()
        await self._attach(wrapper)
        popped = await settled(
            self._on_session(self._link.backend.pop_message, create=False, empty=None)
        )
        return None if popped is None else as_item(popped)

    async def clear_session(self, *, wrapper: RunContextWrapper[Any] | None = None) -> None:
        """Take every item out of the conversation (recorded)."""
        self._check_open()
        await self._attach(wrapper)
        await settled(self._on_session(self._link.backend.clear_messages, create=False, empty=0))

    def close(self) -> None:
        """Let go of the database (closed with the last session on it; a handle stays open)."""
        if not self._closed:
            self._closed = True
            runs.flush()  # the runs recorded on this database, before it may close
            self._link.release()

    # -- helpers -------------------------------------------------------------------------------

    def _check_open(self) -> None:
        if self._closed:
            raise UsageError(f"TetherSession {self.session_id!r} is closed")

    async def _attach(
        self, wrapper: RunContextWrapper[Any] | None, items: list[Any] | None = None
    ) -> None:
        """A Runner called (adding items, or not): its run (the current trace) is recorded as
        a run of this session."""
        if wrapper is not None:
            sid = await self._link.call(self._find(create=True))
            assert sid is not None
            runs.recorder().attach(self._link, sid, wrapper, items)

    async def _on_session(self, op: Callable[[str], Awaitable[T]], *, create: bool, empty: T) -> T:
        """op(tether session id) on the backend's loop; empty when reading a session that does
        not exist yet. A session deleted meanwhile (by the UI, the CLI) is looked up again."""

        async def work() -> T:
            for retry in (False, True):
                known = self._id is not None
                sid = await self._find(create)
                if sid is None:
                    return empty
                try:
                    return await op(sid)
                except NotFound:
                    if retry or not known:
                        raise
                    self._id = None
            raise AssertionError  # the loop returns or raises

        return await self._link.call(work())

    async def _find(self, create: bool) -> str | None:
        if self._id is None:
            backend = self._link.backend
            if create:
                session, _ = await backend.get_or_create_session(self.session_id)
            else:
                try:
                    session = await backend.get_session_by_key(self.session_id)
                except NotFound:
                    return None
            self._id = session.id
        return self._id

    async def _read(self, sid: str, newest: int | None) -> list[TResponseInputItem]:
        """All items (newest None) or the newest ones, oldest first."""
        backend = self._link.backend
        if not isinstance(backend, Service):  # over HTTP: the messages, decoded by the client
            return [as_item(m) for m in await self._messages(sid, newest)]
        found: list[StoredMessage] = []
        before = None
        while newest is None or len(found) < newest:
            size = limits.MAX_PAGE if newest is None else min(newest - len(found), limits.MAX_PAGE)
            page = await backend.stored_messages(sid, limit=size, before_seq=before)
            found.extend(page)
            if len(page) < size:
                break
            before = page[-1][1]
        found.reverse()
        return stored_items(found)

    async def _messages(self, sid: str, newest: int | None) -> list[Message]:
        """All messages (newest None) or the newest ones, oldest first."""
        found: list[Message] = []
        cursor = None
        while newest is None or len(found) < newest:
            size = limits.MAX_PAGE if newest is None else min(newest - len(found), limits.MAX_PAGE)
            page = await self._link.backend.list_messages(
                sid, limit=size, cursor=cursor, newest_first=newest is not None
            )
            found.extend(page.data)
            if page.next_cursor is None:
                break
            cursor = page.next_cursor
        if newest is not None:
            found.reverse()
        return found


def stored_items(rows: list[StoredMessage]) -> list[TResponseInputItem]:
    """The items stored messages stand for, in order: the items as stored, decoded in one
    json.loads (each is the exact JSON text of an object, so their join is a JSON array)."""
    texts = [row[5] for row in rows]
    if None in texts:
        return [_stored_item(row) for row in rows]
    return cast("list[TResponseInputItem]", json.loads(f"[{','.join(cast(list[str], texts))}]"))


def _stored_item(row: StoredMessage) -> TResponseInputItem:
    _, _, role, content, metadata, item = row
    if item is not None:
        return cast("TResponseInputItem", json.loads(item))
    return made_item(Role(role), content, json.loads(metadata))


def as_item(message: Message) -> TResponseInputItem:
    """The item a message stands for: the one it carries, else one made of its role and text
    (a message written by a native agent, a person in the UI, the HTTP API)."""
    if message.item is not None:
        return cast("TResponseInputItem", message.item)
    return made_item(message.role, message.content, message.metadata)


def made_item(role: Role, content: str, metadata: dict[str, Any]) -> TResponseInputItem:
    """The item of a message that carries none, made of its role, text and tool call id."""
    call_id = metadata.get("tool_call_id")
    if role is Role.TOOL and isinstance(call_id, str):
        made = {"type": "function_call_output", "call_id": call_id, "output": content}
        return cast("TResponseInputItem", made)
    said = "user" if role is Role.TOOL else role.value
    return cast("TResponseInputItem", {"role": said, "content": content})
