"""Backend: the operations of tether, whether in-process (Service) or over HTTP (AsyncClient).

The sync facade (``tether.open`` / ``tether.connect``), the CLI and the UI are written against
this protocol, so they work the same on a local database and against a remote server. mypy checks
both implementations against it (see the end of this module and ``tether.client``).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Protocol, Unpack

from tether.core.clock import Clock
from tether.core.event import Event
from tether.core.memory import MemoryItem
from tether.core.message import Message, NewMessage, Role
from tether.core.page import Page
from tether.core.run import ErrorInfo, HeldLease, IfBusy, Run, RunOptionFields, RunOptions
from tether.core.schedule import Schedule
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.store.base import UNSET, Unset


class Backend(Protocol):
    """Sessions, runs, steps, memory, tool history, context and events for one owner."""

    #: The clock that judges expiry (the server's is the system clock).
    clock: Clock

    async def close(self) -> None:
        """Release what the backend holds (connections, the store)."""

    # -- sessions ------------------------------------------------------------------------------

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
        context: dict[str, Any] | None = None,
    ) -> Session:
        """Open a session; context is the deprecated name of project."""
        ...

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
    ) -> tuple[Session, bool]: ...

    async def get_session(self, session_id: str) -> Session: ...

    async def get_session_by_key(self, external_key: str) -> Session: ...

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
    ) -> Page[Session]: ...

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
    ) -> Session: ...

    async def close_session(self, session_id: str) -> Session: ...

    async def export_session(self, session_id: str) -> dict[str, Any]:
        """The session with everything in it, as one JSON value."""
        ...

    async def delete_session(self, session_id: str) -> None: ...

    # -- messages ------------------------------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: Role | str | None = None,
        content: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        item: dict[str, Any] | None = None,
    ) -> Message: ...

    async def add_messages(
        self, session_id: str, messages: Iterable[Mapping[str, Any] | NewMessage]
    ) -> list[Message]: ...

    async def list_messages(
        self,
        session_id: str,
        *,
        limit: int = 100,
        cursor: str | None = None,
        newest_first: bool = False,
        before_seq: int | None = None,
        include_removed: bool = False,
    ) -> Page[Message]: ...

    async def pop_message(self, session_id: str) -> Message | None: ...

    async def clear_messages(self, session_id: str) -> int: ...

    # -- runs ----------------------------------------------------------------------------------

    async def create_run(
        self,
        session_id: str,
        goal: str,
        *,
        options: RunOptions | None = None,
        **fields: Unpack[RunOptionFields],
    ) -> Run:
        """Accept a new run (ready): options, or the defaults with fields set (see RunOptions)."""
        ...

    async def get_run(self, run_id: str) -> Run: ...

    async def list_runs(
        self,
        session_id: str,
        *,
        status: RunStatus | str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Run]: ...

    async def list_all_runs(
        self,
        *,
        status: RunStatus | str | None = None,
        agent: str | None = None,
        since: datetime | None = None,
        until: datetime | None = None,
        query: str | None = None,
        stuck: bool = False,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Run]:
        """The owner's runs across sessions, newest first (see Service.list_all_runs)."""
        ...

    async def wait_run(self, run_id: str, *, timeout: float | None = None) -> Run: ...

    async def cancel_run(self, run_id: str, *, reason: str = "cancelled by request") -> Run: ...

    async def resume_run(self, run_id: str, input: Any = None) -> Run: ...

    async def delete_run(self, run_id: str) -> None: ...

    async def list_steps(self, run_id: str) -> list[Step]: ...

    # -- runs their caller executes (runtime.held_run; see Service for each contract) ----------

    async def start_held_run(
        self,
        session_id: str,
        goal: str,
        *,
        agent: str,
        input: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
        if_busy: IfBusy | str = IfBusy.REJECT,
        timeout_seconds: float | None = None,
        lease_seconds: float | None = None,
    ) -> HeldLease: ...

    async def resume_held_run(
        self, run_id: str, input: Any = None, *, lease_seconds: float | None = None
    ) -> HeldLease: ...

    async def record_held_step(
        self,
        run_id: str,
        holder: str,
        kind: StepKind | str,
        name: str,
        input: Any = None,
        *,
        output: Any = None,
        error: ErrorInfo | None = None,
        usage: Usage | None = None,
    ) -> Step: ...

    async def renew_held_run(
        self, run_id: str, holder: str, *, lease_seconds: float | None = None
    ) -> Run: ...

    async def suspend_held_run(
        self,
        run_id: str,
        holder: str,
        kind: str,
        prompt: str,
        details: dict[str, Any] | None = None,
    ) -> Run: ...

    async def finish_held_run(
        self,
        run_id: str,
        holder: str,
        status: RunStatus | str = RunStatus.COMPLETED,
        *,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run: ...

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
    ) -> Page[Step]: ...

    # -- memory --------------------------------------------------------------------------------

    async def list_session_memory(self, session_id: str) -> list[MemoryItem]: ...

    async def get_session_memory(self, session_id: str, key: str) -> MemoryItem: ...

    async def set_session_memory(self, session_id: str, key: str, value: Any) -> MemoryItem: ...

    async def delete_session_memory(self, session_id: str, key: str) -> None: ...

    async def list_run_memory(self, run_id: str) -> list[MemoryItem]: ...

    async def promote_memory(
        self, run_id: str, key: str, *, as_key: str | None = None
    ) -> MemoryItem: ...

    async def list_user_memory(
        self, *, namespace: tuple[str, ...] | None = (), limit: int = 1000, offset: int = 0
    ) -> list[MemoryItem]: ...

    async def get_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> MemoryItem: ...

    async def set_user_memory(
        self, key: str, value: Any, *, namespace: tuple[str, ...] = ()
    ) -> MemoryItem: ...

    async def delete_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> None: ...

    async def list_app_memory(self, app: str) -> list[MemoryItem]: ...

    async def get_app_memory(self, app: str, key: str) -> MemoryItem: ...

    async def set_app_memory(self, app: str, key: str, value: Any) -> MemoryItem: ...

    async def delete_app_memory(self, app: str, key: str) -> None: ...

    # -- context and events --------------------------------------------------------------------

    async def get_context(
        self, session_id: str, *, budget_tokens: int | None = None
    ) -> dict[str, Any]: ...

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]: ...

    def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncGenerator[Event | None, None]:
        """Events as they commit, after after_id, each exactly once and in order; None every
        heartbeat seconds of silence. A run's stream ends after its terminal event."""
        ...

    # -- schedules -----------------------------------------------------------------------------

    async def create_schedule(
        self,
        cron: str,
        *,
        agent: str | None = None,
        input: dict[str, Any] | None = None,
        goal: str | None = None,
        session_id: str | None = None,
        timezone: str | None = None,
        metadata: dict[str, Any] | None = None,
        end_at: datetime | None = None,
        enabled: bool = True,
    ) -> Schedule: ...

    async def get_schedule(self, schedule_id: str) -> Schedule: ...

    async def list_schedules(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Schedule]: ...

    async def update_schedule(
        self,
        schedule_id: str,
        *,
        cron: str | Unset = UNSET,
        timezone: str | Unset = UNSET,
        agent: str | Unset = UNSET,
        goal: str | Unset | None = UNSET,
        input: dict[str, Any] | Unset = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        end_at: datetime | Unset | None = UNSET,
        enabled: bool | Unset = UNSET,
    ) -> Schedule: ...

    async def delete_schedule(self, schedule_id: str) -> None: ...

    # -- webhooks ------------------------------------------------------------------------------

    async def webhook_secret(self, *, rotate: bool = False) -> str: ...


if TYPE_CHECKING:
    from tether.runtime.service import Service

    def _service_is_a_backend(service: Service) -> Backend:
        return service
