"""Messages: the Service's operations on a session's conversation, and the context its next run
would start from."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from tether.core.clock import Clock
from tether.core.errors import UsageError
from tether.core.memory import MemoryWrite
from tether.core.message import Message, NewMessage, Role, StoredMessage
from tether.core.page import Page
from tether.core.session import Session
from tether.runtime import limits
from tether.runtime.context_assembly import assemble_context
from tether.runtime.settings import RuntimeSettings
from tether.store.base import Store
from tether.store.cursors import decode_cursor, encode_cursor


class MessageOps:
    """The conversation operations of Service (which provides these attributes)."""

    store: Store
    clock: Clock
    owner: str
    settings: RuntimeSettings
    get_session: Callable[[str], Awaitable[Session]]

    async def add_message(
        self,
        session_id: str,
        role: Role | str | None = None,
        content: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        item: dict[str, Any] | None = None,
    ) -> Message:
        """Append a message to the session's conversation. item is a structured item (any
        JSON object) kept exactly; without role or content, they come from it (core.items)."""
        new = limits.new_message(role, content, metadata, item)
        return await self.store.add_message(
            session_id=session_id,
            owner=self.owner,
            role=new.role,
            content=new.content,
            now=self.clock.now(),
            metadata=new.metadata,
            item=new.item,
        )

    async def add_messages(
        self,
        session_id: str,
        messages: Iterable[Mapping[str, Any] | NewMessage],
        *,
        memory: Sequence[MemoryWrite] = (),
    ) -> list[Message]:
        """Append up to limits.MAX_BATCH messages (objects with role, content, metadata, item,
        as add_message takes them) in order, in one transaction, each with its event. memory:
        items of this session's, the owner's user or an app's memory set in that same
        transaction (then messages may be empty)."""
        writes = limits.memory_writes(memory, session_id=session_id, owner=self.owner)
        only_memory = writes and isinstance(messages, list | tuple) and not messages
        return await self.store.add_messages(
            session_id=session_id,
            owner=self.owner,
            messages=[] if only_memory else limits.batch(messages),
            now=self.clock.now(),
            memory=writes,
        )

    async def list_messages(
        self,
        session_id: str,
        *,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
        before_seq: int | None = None,
        include_removed: bool = False,
    ) -> Page[Message]:
        """The conversation, oldest first (newest first with newest_first); before_seq keeps
        the messages before that seq ("the N before this one"). Removed messages are left out
        unless include_removed."""
        size = limits.page_size(limit)
        after = None
        before = None if before_seq is None else limits.seq("before_seq", before_seq)
        if cursor is not None:
            seq = decode_cursor(cursor, int)[0]
            if newest_first:
                before = seq if before is None else min(before, seq)
            else:
                after = seq
        rows = await self.store.list_messages(
            session_id,
            owner=self.owner,
            limit=size + 1,
            after_seq=after,
            before_seq=before,
            newest_first=newest_first,
            include_removed=include_removed,
        )
        if not rows:
            await self.get_session(session_id)  # an unknown (or another owner's) session
        data = rows[:size]
        return Page(data, encode_cursor(data[-1].seq) if len(rows) > size else None)

    async def stored_messages(
        self, session_id: str, *, limit: int, before_seq: int | None = None, items: bool = True
    ) -> list[StoredMessage]:
        """The newest limit messages (before before_seq), newest first, as stored (JSON as
        text; items only when items): the fast read of framework adapters, which decode only
        what they hand out."""
        size = limits.page_size(limit)
        before = None if before_seq is None else limits.seq("before_seq", before_seq)
        rows = await self.store.stored_messages(
            session_id, owner=self.owner, limit=size, before_seq=before, items=items
        )
        if not rows and before is None:
            await self.get_session(session_id)  # an unknown (or another owner's) session
        return rows

    async def pop_message(self, session_id: str) -> Message | None:
        """Take the newest message out of the conversation (recorded as message.removed; the
        message is kept for the audit trail); the message, or None when there is none."""
        return await self.store.pop_message(session_id, owner=self.owner, now=self.clock.now())

    async def clear_messages(self, session_id: str) -> int:
        """Take every message out of the conversation (recorded as messages.cleared; the
        messages are kept for the audit trail); how many were taken out."""
        return await self.store.clear_messages(session_id, owner=self.owner, now=self.clock.now())

    async def conversation(self, session_id: str, *, after_seq: int = 0) -> list[Message]:
        """Every message of the session after after_seq, oldest first: one owner check, then
        the store's pages."""
        await self.get_session(session_id)
        found: list[Message] = []
        while True:
            rows = await self.store.list_messages(
                session_id, limit=limits.MAX_PAGE, after_seq=after_seq
            )
            found.extend(rows)
            if len(rows) < limits.MAX_PAGE:
                return found
            after_seq = rows[-1].seq

    # -- context -------------------------------------------------------------------------------

    async def get_context(
        self, session_id: str, *, budget_tokens: int | None = None
    ) -> dict[str, Any]:
        """The context the session's next run would start from."""
        session = await self.get_session(session_id)
        budget = budget_tokens or self.settings.context_budget_tokens
        if not 1 <= budget <= 1_000_000:
            raise UsageError("budget_tokens must be between 1 and 1000000")
        return await assemble_context(
            self.store, session, budget_tokens=budget, now=self.clock.now()
        )
