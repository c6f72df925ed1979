"""Handles: core records bound to the runtime, with the operations that concern them.

A SessionHandle *is* a Session (and a RunHandle a Run): ``session.runs.create(...).wait()``,
``session.memory[k] = v``, ``run.steps``, ``session.tool_calls(tool=…)``, ``session.close()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tether.runtime.facade import Tether

import dataclasses
import inspect
from collections.abc import Callable, Iterable, Iterator, Mapping
from datetime import datetime
from typing import Any, TypeVar, Unpack

from tether.core.errors import UsageError
from tether.core.event import Event
from tether.core.message import Message, NewMessage, Role
from tether.core.page import Page
from tether.core.run import Run, RunOptionFields, RunOptions
from tether.core.session import Session
from tether.core.status import RunStatus, StepStatus
from tether.core.step import Step
from tether.runtime import limits
from tether.runtime.memory_views import AppMemory, RunMemory, SessionMemory
from tether.runtime.renames import project_arg
from tether.store.base import UNSET, Unset

T = TypeVar("T")
_new = object.__new__


#: Per handle class, its record's fields as (slot getter, slot setter) pairs, in order.
_SLOTS: dict[type, list[tuple[Callable[[Any], Any], Callable[[Any, Any], None]]]] = {}


def bind(cls: type[T], record: Any, tt: Any) -> T:
    """A cls (a handle: record's class with a _tt slot) holding record's fields and tt, copied
    slot to slot: a third cheaper than the frozen dataclass's __init__, which sets each field
    through object.__setattr__ (the records have no __post_init__ to run again)."""
    slots = _SLOTS.get(cls)
    if slots is None:
        found = [inspect.getattr_static(cls, f.name) for f in dataclasses.fields(record)]
        slots = _SLOTS[cls] = [(slot.__get__, slot.__set__) for slot in found]
    handle = _new(cls)
    for get, set_ in slots:
        set_(handle, get(record))
    object.__setattr__(handle, "_tt", tt)
    made: T = handle
    return made


def page_size(limit: int | None) -> int:
    """Items to ask for per page when at most limit are wanted (None = all)."""
    return limits.MAX_PAGE if limit is None else max(1, min(limit, limits.MAX_PAGE))


def _all_pages(fetch: Any, limit: int | None) -> list[Any]:
    items: list[Any] = []
    cursor = None
    while True:
        page = fetch(cursor)
        items.extend(page.data)
        if page.next_cursor is None or (limit is not None and len(items) >= limit):
            return items[:limit] if limit is not None else items
        cursor = page.next_cursor


class SessionHandle(Session):
    """A Session bound to the runtime."""

    __slots__ = ("_tt",)
    _tt: Tether

    @classmethod
    def bind(cls, session: Session, tt: Tether) -> SessionHandle:
        return bind(cls, session, tt)

    @property
    def memory(self) -> SessionMemory:
        """Session memory as a mapping: every run of the session sees it."""
        return SessionMemory(self._tt, self.id)

    @property
    def app_memory(self) -> AppMemory:
        """The memory every session of this session's app shares (UsageError without an app)."""
        if self.app is None:
            raise UsageError(f"session {self.id} belongs to no app (give it one: app=…)")
        return AppMemory(self._tt, self.app)

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
        since: datetime | None = None,
        until: datetime | None = None,
    ) -> list[Step]:
        """The session's tool history, aggregated over its runs, oldest first; since and until
        bound when the calls started."""
        backend = self._tt._backend

        def fetch(cursor: str | None) -> Page[Step]:
            return self._tt._call(
                backend.list_tool_calls(
                    session_id=self.id,
                    run_id=run_id,
                    tool=tool,
                    status=status,
                    since=since,
                    until=until,
                    limit=500,
                    cursor=cursor,
                )
            )

        return _all_pages(fetch, None)

    def assembled_context(self, budget_tokens: int | None = None) -> dict[str, Any]:
        """The context the next run would start from."""
        return self._tt._call(self._tt._backend.get_context(self.id, budget_tokens=budget_tokens))

    def events(self, after_id: int | None = None) -> list[Event]:
        return self._tt._call(self._tt._backend.list_events(session_id=self.id, after_id=after_id))

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
        project: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
        external_key: str | Unset | None = UNSET,
        app: str | Unset | None = UNSET,
        context: dict[str, Any] | Unset = UNSET,
    ) -> SessionHandle:
        """Change the given fields (None clears the external key or the app; context is the
        deprecated name of project)."""
        project = project_arg(project, context, absent=UNSET)
        s = self._tt._call(
            self._tt._backend.update_session(
                self.id,
                title=title,
                metadata=metadata,
                project=project,
                ttl_seconds=ttl_seconds,
                external_key=external_key,
                app=app,
            )
        )
        return SessionHandle.bind(s, self._tt)

    def close(self) -> SessionHandle:
        """Close the session (only the user or expiry ends one); unfinished runs are cancelled."""
        return SessionHandle.bind(
            self._tt._call(self._tt._backend.close_session(self.id)), self._tt
        )

    def delete(self) -> None:
        self._tt._call(self._tt._backend.delete_session(self.id))


class SessionRuns:
    """``session.runs``: start and list the runs of one session."""

    def __init__(self, tt: Tether, session_id: str) -> None:
        self._tt = tt
        self._session_id = session_id

    def create(
        self,
        goal: str,
        *,
        options: RunOptions | None = None,
        **fields: Unpack[RunOptionFields],
    ) -> RunHandle:
        """Start a run; it is ``ready`` until a worker picks it up. Options as RunOptions, or
        as keywords (agent=, input=, if_busy=, timeout_seconds=, …). Without agent= the run
        executes ``echo`` (the settings' default_agent), which repeats its text."""
        run = self._tt._call(
            self._tt._backend.create_run(self._session_id, goal, options=options, **fields)
        )
        return RunHandle.bind(run, self._tt)

    def list(self, *, status: RunStatus | str | None = None) -> list[RunHandle]:
        """Every run of the session, Run 1 first."""
        backend = self._tt._backend

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

    def add(
        self,
        role: Role | str | None = None,
        content: str | None = None,
        *,
        item: dict[str, Any] | None = None,
        **metadata: Any,
    ) -> Message:
        """Append a message; item is a structured item (any JSON object) kept exactly, from
        which a missing role or content is derived."""
        return self._tt._call(
            self._tt._backend.add_message(
                self._session_id, role, content, metadata=metadata, item=item
            )
        )

    def add_many(self, messages: Iterable[Mapping[str, Any] | NewMessage]) -> list[Message]:
        """Append messages ({"role", "content", "metadata", "item"} each) in one transaction."""
        return self._tt._call(self._tt._backend.add_messages(self._session_id, messages))

    def tail(self, n: int = 50, *, before: int | None = None) -> list[Message]:
        """The newest n messages (before seq before, if given), oldest first."""
        return _tail(self._tt, self._session_id, n, before)

    def pop(self) -> Message | None:
        """Take the newest message out of the conversation (an audited removal, not a delete);
        the message, or None when there is none."""
        return self._tt._call(self._tt._backend.pop_message(self._session_id))

    def clear(self) -> int:
        """Take every message out of the conversation (audited); how many were taken out."""
        return self._tt._call(self._tt._backend.clear_messages(self._session_id))

    def list(self, *, include_removed: bool = False) -> list[Message]:
        """The whole conversation, oldest first (with include_removed, also what was popped or
        cleared)."""
        backend = self._tt._backend

        def fetch(cursor: str | None) -> Page[Message]:
            return self._tt._call(
                backend.list_messages(
                    self._session_id,
                    limit=limits.MAX_PAGE,
                    cursor=cursor,
                    include_removed=include_removed,
                )
            )

        return _all_pages(fetch, None)

    def __iter__(self) -> Iterator[Message]:
        return iter(self.list())


def _tail(tt: Tether, session_id: str, n: int, before: int | None) -> list[Message]:
    wanted = limits.positive_int("n", n, 2**62)
    newest: list[Message] = []
    cursor = None
    while len(newest) < wanted:
        page = tt._call(
            tt._backend.list_messages(
                session_id,
                limit=min(wanted - len(newest), limits.MAX_PAGE),
                cursor=cursor,
                newest_first=True,
                before_seq=before,
            )
        )
        newest.extend(page.data)
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    newest.reverse()
    return newest


class RunHandle(Run):
    """A Run bound to the runtime."""

    __slots__ = ("_tt",)
    _tt: Tether

    @classmethod
    def bind(cls, run: Run, tt: Tether) -> RunHandle:
        return bind(cls, run, tt)

    def wait(self, timeout: float | None = None) -> RunHandle:
        """Block until the run is terminal or waiting for a person (or timeout passes)."""
        run = self._tt._call(self._tt._backend.wait_run(self.id, timeout=timeout))
        return RunHandle.bind(run, self._tt)

    @property
    def steps(self) -> list[Step]:
        """Model calls, tool calls (call and result together), messages and notes, in order."""
        return self._tt._call(self._tt._backend.list_steps(self.id))

    def tool_calls(self, *, tool: str | None = None) -> list[Step]:
        page = self._tt._call(
            self._tt._backend.list_tool_calls(run_id=self.id, tool=tool, limit=1000)
        )
        return page.data

    @property
    def memory(self) -> RunMemory:
        """This run's working memory (read-only from outside; promote what sessions need)."""
        return RunMemory(self._tt, self.id)

    def events(self, after_id: int | None = None) -> list[Event]:
        return self._tt._call(self._tt._backend.list_events(run_id=self.id, after_id=after_id))

    def stream(self, after_id: int | None = None) -> Iterator[Event]:
        """The run's events as they happen, ending after its terminal event."""
        return self._tt.stream_events(run_id=self.id, after_id=after_id)

    def refresh(self) -> RunHandle:
        return self._tt.runs.get(self.id)

    def cancel(self, reason: str = "cancelled by request") -> RunHandle:
        return RunHandle.bind(
            self._tt._call(self._tt._backend.cancel_run(self.id, reason=reason)), self._tt
        )

    def resume(self, input: Any = None) -> RunHandle:
        return RunHandle.bind(
            self._tt._call(self._tt._backend.resume_run(self.id, input)), self._tt
        )
