"""Steps: the Service's reads of a run's steps and of tool history (of a run or a session)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime

from tether.core.errors import UsageError
from tether.core.page import Page
from tether.core.run import Run
from tether.core.session import Session
from tether.core.status import StepStatus
from tether.core.step import Step
from tether.runtime import limits
from tether.store.base import Store
from tether.store.cursors import decode_cursor, encode_cursor


class StepOps:
    """The step and tool-call reads of Service (which provides these attributes)."""

    store: Store
    get_session: Callable[[str], Awaitable[Session]]
    _run_without_context: Callable[[str], Awaitable[Run]]

    async def list_steps(self, run_id: str) -> list[Step]:
        await self._run_without_context(run_id)
        return await self.store.list_steps(run_id)

    async def page_steps(
        self, run_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[Step]:
        """A page of the run's steps by seq, read from the store a page at a time."""
        size = limits.page_size(limit)
        after = 0 if cursor is None else decode_cursor(cursor, int)[0]
        await self._run_without_context(run_id)
        rows = await self.store.page_steps(run_id, after_seq=after, limit=size + 1)
        more = len(rows) > size
        return Page(rows[:size], encode_cursor(rows[size - 1].seq) if more else None)

    async def list_tool_calls(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        tool: str | None = None,
        status: StepStatus | str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Step]:
        """Tool history of one run, or of a whole session (aggregated over its runs); since and
        until bound when the calls started (since included, until not)."""
        if session_id is not None:
            await self.get_session(session_id)
        elif run_id is not None:
            await self._run_without_context(run_id)
        else:
            raise UsageError("give a session_id or a run_id")
        return await self.store.list_tool_calls(
            session_id=session_id,
            run_id=run_id or None,
            tool=tool or None,
            status=limits.enum(StepStatus, status, "status"),
            since=limits.moment("since", since),
            until=limits.moment("until", until),
            limit=limits.page_size(limit),
            cursor=cursor,
            newest_first=newest_first,
        )
