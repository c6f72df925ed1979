"""AsyncClient: the Backend operations over HTTP, returning the same records and raising the same
errors as the in-process Service."""

from __future__ import annotations

import asyncio
import json as jsonlib
from collections.abc import AsyncGenerator, Iterable, Mapping
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import quote

import httpx

from tether.client import errors, streams
from tether.client.records import (
    message_from_data,
    messages_from_data,
    session_from_data,
    sessions_from_data,
)
from tether.core.clock import Clock, SystemClock, to_iso
from tether.core.errors import ServerUnreachable, TetherError, UsageError
from tether.core.event import Event
from tether.core.memory import MemoryItem
from tether.core.message import Message, NewMessage, Role
from tether.core.page import Page
from tether.core.run import ErrorInfo, HeldLease, IfBusy, Run, RunOptionFields, RunOptions
from tether.core.schedule import Schedule
from tether.core.serde import from_data, to_data
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.core.usage import Usage
from tether.runtime import limits
from tether.runtime.renames import project_arg
from tether.store.base import UNSET, Unset
from tether.telemetry import trace_headers
from tether.version import __version__

#: The header carrying the holder of a run its caller executes.
HOLDER_HEADER = "Tether-Holder"
#: The server holds a long-poll at most this long; longer waits are several polls.
_POLL_CAP = 300.0


def _seg(value: str) -> str:
    return quote(value, safe="")


def _value(value: Any) -> Any:
    """An enum as its wire value; anything else as is."""
    return getattr(value, "value", value)


def _given(body: dict[str, Any]) -> dict[str, Any]:
    """body without its None members (left to the server's defaults)."""
    return {k: v for k, v in body.items() if v is not None}


def _params(**params: Any) -> dict[str, Any]:
    return {k: _value(v) for k, v in params.items() if v is not None and v is not False}


class AsyncClient:
    """tether over HTTP, for async programs: ``AsyncClient(url, api_key=...)``."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None = None,
        timeout: float = 30.0,
        reconnect_attempts: int = 10,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.url = _checked_url(url)
        self.clock: Clock = SystemClock()
        self.timeout = timeout
        #: Consecutive failed reconnections after which a stream gives up.
        self.reconnect_attempts = reconnect_attempts
        headers = {"User-Agent": f"tether-python/{__version__}", "Accept": "application/json"}
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.http = httpx.AsyncClient(
            base_url=self.url, headers=headers, timeout=timeout, transport=transport
        )

    async def close(self) -> None:
        await self.http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def request(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = UNSET,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> Any:
        """Send one request; the decoded JSON answer (None for 204) or tether's error."""
        _, answer = await self.exchange(
            method, path, params=params, json=json, timeout=timeout, headers=headers
        )
        return answer

    async def exchange(
        self,
        method: str,
        path: str,
        *,
        params: dict[str, Any] | None = None,
        json: Any = UNSET,
        timeout: float | None = None,
        headers: dict[str, str] | None = None,
    ) -> tuple[int, Any]:
        """Send one request; its status code and decoded JSON answer (None for 204), or
        tether's error."""
        try:
            response = await self.http.request(
                method,
                path,
                params=params,
                json=None if json is UNSET else json,
                content=b"" if json is UNSET and method in ("POST", "PUT", "PATCH") else None,
                timeout=self.timeout if timeout is None else timeout,
                headers={**trace_headers(), **(headers or {})},
            )
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach {self.url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise errors.from_response(response)
        if response.status_code == 204:
            return 204, None
        try:
            return response.status_code, response.json()
        except ValueError:
            raise TetherError(
                f"{self.url} answered {method} {path} with something other than JSON: "
                "is it a tether server?"
            ) from None

    async def _page(self, cls: type[Any], path: str, **params: Any) -> Page[Any]:
        body = await self.request("GET", path, params=_params(**params))
        if cls is Message:
            return Page(messages_from_data(body["data"]), body["next_cursor"])
        if cls is Session:
            return Page(sessions_from_data(body["data"]), body["next_cursor"])
        return Page([from_data(cls, d) for d in body["data"]], body["next_cursor"])

    async def _everything(self, cls: type[Any], path: str) -> list[Any]:
        """Every item of a paginated list, following next_cursor."""
        items: list[Any] = []
        cursor = None
        while True:
            page = await self._page(cls, path, limit=limits.MAX_PAGE, cursor=cursor)
            items.extend(page.data)
            if page.next_cursor is None:
                return items
            cursor = page.next_cursor

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
        project = project_arg(project, context)
        body = _session_body(title, metadata, project, ttl_seconds, external_key, app)
        if session_id is not None:
            body["id"] = session_id
        return session_from_data(await self.request("POST", "/v1/sessions", json=body))

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
        project = project_arg(project, context)
        body = _session_body(title, metadata, project, ttl_seconds, external_key, app)
        body["if_exists"] = "return"
        status, answer = await self.exchange("POST", "/v1/sessions", json=body)
        return session_from_data(answer), status == 201

    async def get_session(self, session_id: str) -> Session:
        return session_from_data(await self.request("GET", f"/v1/sessions/{_seg(session_id)}"))

    async def get_session_by_key(self, external_key: str) -> Session:
        answer = await self.request("GET", "/v1/sessions/by-key", params={"key": external_key})
        return session_from_data(answer)

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
        return await self._page(
            Session,
            "/v1/sessions",
            status=status or None,
            query=query or None,
            metadata=jsonlib.dumps(metadata) if metadata else None,
            app=app or None,
            key_prefix=key_prefix or None,
            limit=limit,
            cursor=cursor,
        )

    async def export_session(self, session_id: str) -> dict[str, Any]:
        exported: dict[str, Any] = await self.request(
            "GET", f"/v1/sessions/{_seg(session_id)}/export"
        )
        return exported

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
        given = {
            "title": title,
            "metadata": metadata,
            "project": project_arg(project, context, absent=UNSET),
            "ttl_seconds": ttl_seconds,
            "external_key": external_key,
            "app": app,
        }
        body = {k: v for k, v in given.items() if v is not UNSET}
        path = f"/v1/sessions/{_seg(session_id)}"
        return session_from_data(await self.request("PATCH", path, json=body))

    async def close_session(self, session_id: str) -> Session:
        path = f"/v1/sessions/{_seg(session_id)}/close"
        return session_from_data(await self.request("POST", path))

    async def delete_session(self, session_id: str) -> None:
        await self.request("DELETE", f"/v1/sessions/{_seg(session_id)}")

    # -- messages ------------------------------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: Role | str | None = None,
        content: str | None = None,
        *,
        metadata: dict[str, Any] | None = None,
        item: dict[str, Any] | None = None,
    ) -> Message:
        body = _message_body(role, content, metadata, item)
        path = f"/v1/sessions/{_seg(session_id)}/messages"
        return message_from_data(await self.request("POST", path, json=body))

    async def add_messages(
        self, session_id: str, messages: Iterable[Mapping[str, Any] | NewMessage]
    ) -> list[Message]:
        given = limits.batch(messages)  # refused here as the server would (and before sending)
        body = {"messages": [_message_body(m.role, m.content, m.metadata, m.item) for m in given]}
        path = f"/v1/sessions/{_seg(session_id)}/messages/batch"
        answer = await self.request("POST", path, json=body)
        return messages_from_data(answer["data"])

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
        path = f"/v1/sessions/{_seg(session_id)}/messages"
        return await self._page(
            Message,
            path,
            limit=limit,
            cursor=cursor,
            order="desc" if newest_first else None,
            before=before_seq,
            include_removed=include_removed,
        )

    async def pop_message(self, session_id: str) -> Message | None:
        answer = await self.request("POST", f"/v1/sessions/{_seg(session_id)}/messages/pop")
        return None if answer is None else message_from_data(answer)

    async def clear_messages(self, session_id: str) -> int:
        answer = await self.request("POST", f"/v1/sessions/{_seg(session_id)}/messages/clear")
        return int(answer["removed"])

    # -- runs ----------------------------------------------------------------------------------

    async def create_run(
        self,
        session_id: str,
        goal: str,
        *,
        options: RunOptions | None = None,
        **fields: Unpack[RunOptionFields],
    ) -> Run:
        body = {"goal": goal, **to_data(RunOptions.of(options, **fields))}
        path = f"/v1/sessions/{_seg(session_id)}/runs"
        answer = await self.request(
            "POST", path, json={k: v for k, v in body.items() if v is not None}
        )
        return from_data(Run, answer)

    async def get_run(self, run_id: str) -> Run:
        return from_data(Run, await self.request("GET", f"/v1/runs/{_seg(run_id)}"))

    async def list_runs(
        self,
        session_id: str,
        *,
        status: RunStatus | str | None = None,
        limit: int = 50,
        cursor: str | None = None,
        newest_first: bool = False,
    ) -> Page[Run]:
        path = f"/v1/sessions/{_seg(session_id)}/runs"
        return await self._page(
            Run, path, status=status or None, limit=limit, cursor=cursor, newest_first=newest_first
        )

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
        return await self._page(
            Run,
            "/v1/runs",
            status=status or None,
            agent=agent or None,
            since=to_iso(limits.moment("since", since)),
            until=to_iso(limits.moment("until", until)),
            q=query or None,
            stuck="true" if stuck else None,
            limit=limit,
            cursor=cursor,
        )

    async def wait_run(self, run_id: str, *, timeout: float | None = None) -> Run:
        loop = asyncio.get_running_loop()
        deadline = None if timeout is None else loop.time() + timeout
        path = f"/v1/runs/{_seg(run_id)}/wait"
        while True:
            remaining = _POLL_CAP if deadline is None else max(0.0, deadline - loop.time())
            poll = min(remaining, _POLL_CAP)
            answer = await self.request(
                "GET", path, params={"timeout": poll}, timeout=poll + self.timeout
            )
            run = from_data(Run, answer)
            if run.is_terminal or run.status is RunStatus.WAITING:
                return run
            if deadline is not None and loop.time() >= deadline:
                return run

    async def cancel_run(self, run_id: str, *, reason: str = "cancelled by request") -> Run:
        path = f"/v1/runs/{_seg(run_id)}/cancel"
        return from_data(Run, await self.request("POST", path, json={"reason": reason}))

    async def resume_run(self, run_id: str, input: Any = None) -> Run:
        path = f"/v1/runs/{_seg(run_id)}/resume"
        return from_data(Run, await self.request("POST", path, json={"input": input}))

    async def delete_run(self, run_id: str) -> None:
        await self.request("DELETE", f"/v1/runs/{_seg(run_id)}")

    async def list_steps(self, run_id: str) -> list[Step]:
        return await self._everything(Step, f"/v1/runs/{_seg(run_id)}/steps")

    # -- runs their caller executes ------------------------------------------------------------

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
    ) -> HeldLease:
        body = {
            "goal": goal,
            "agent": agent,
            "input": input,
            "metadata": metadata,
            "if_busy": _value(if_busy),
            "timeout_seconds": timeout_seconds,
            "lease_seconds": lease_seconds,
        }
        path = f"/v1/sessions/{_seg(session_id)}/held-runs"
        answer = await self.request("POST", path, json=_given(body))
        return from_data(HeldLease, answer)

    async def resume_held_run(
        self, run_id: str, input: Any = None, *, lease_seconds: float | None = None
    ) -> HeldLease:
        body = _given({"lease_seconds": lease_seconds})
        path = f"/v1/runs/{_seg(run_id)}/held-resume"
        return from_data(HeldLease, await self.request("POST", path, json={"input": input, **body}))

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
    ) -> Step:
        body = {"kind": _value(kind), "name": name, "input": input, "output": output}
        if error is not None:
            body["error"] = {"type": error.type, "message": error.message}
        if usage is not None:
            body["usage"] = {
                "input_tokens": usage.input_tokens,
                "output_tokens": usage.output_tokens,
                "requests": usage.requests,
            }
        answer = await self._held("steps", run_id, holder, body)
        return from_data(Step, answer)

    async def renew_held_run(
        self, run_id: str, holder: str, *, lease_seconds: float | None = None
    ) -> Run:
        answer = await self._held(
            "heartbeat", run_id, holder, _given({"lease_seconds": lease_seconds})
        )
        return from_data(Run, answer)

    async def suspend_held_run(
        self,
        run_id: str,
        holder: str,
        kind: str,
        prompt: str,
        details: dict[str, Any] | None = None,
    ) -> Run:
        body = _given({"kind": kind, "prompt": prompt, "details": details})
        return from_data(Run, await self._held("suspend", run_id, holder, body))

    async def finish_held_run(
        self,
        run_id: str,
        holder: str,
        status: RunStatus | str = RunStatus.COMPLETED,
        *,
        output: Any | Unset = UNSET,
        error: ErrorInfo | None = None,
    ) -> Run:
        body: dict[str, Any] = {"status": _value(status)}
        if output is not UNSET:
            body["output"] = output
        if error is not None:
            body["error"] = {"type": error.type, "message": error.message}
        return from_data(Run, await self._held("finish", run_id, holder, body))

    async def _held(self, action: str, run_id: str, holder: str, body: dict[str, Any]) -> Any:
        """POST an action of a held run, with its holder."""
        path = f"/v1/runs/{_seg(run_id)}/{action}"
        return await self.request("POST", path, json=body, headers={HOLDER_HEADER: holder})

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
        filters = {
            "tool": tool,
            "status": status or None,
            "since": to_iso(limits.moment("since", since)),
            "until": to_iso(limits.moment("until", until)),
            "limit": limit,
            "cursor": cursor,
        }
        if session_id is not None:
            path = f"/v1/sessions/{_seg(session_id)}/tool-calls"
            filters["run_id"] = run_id
        elif run_id is not None:
            path = f"/v1/runs/{_seg(run_id)}/tool-calls"
        else:
            raise UsageError("give a session_id or a run_id")
        return await self._page(Step, path, newest_first=newest_first, **filters)

    # -- memory --------------------------------------------------------------------------------

    def _session_memory(self, session_id: str, key: str = "") -> str:
        base = f"/v1/sessions/{_seg(session_id)}/memory"
        return f"{base}/{_seg(key)}" if key else base

    async def list_session_memory(self, session_id: str) -> list[MemoryItem]:
        return await self._everything(MemoryItem, self._session_memory(session_id))

    async def get_session_memory(self, session_id: str, key: str) -> MemoryItem:
        path = self._session_memory(session_id, key)
        return from_data(MemoryItem, await self.request("GET", path))

    async def set_session_memory(self, session_id: str, key: str, value: Any) -> MemoryItem:
        path = self._session_memory(session_id, key)
        return from_data(MemoryItem, await self.request("PUT", path, json={"value": value}))

    async def delete_session_memory(self, session_id: str, key: str) -> None:
        await self.request("DELETE", self._session_memory(session_id, key))

    async def list_run_memory(self, run_id: str) -> list[MemoryItem]:
        return await self._everything(MemoryItem, f"/v1/runs/{_seg(run_id)}/memory")

    async def promote_memory(
        self, run_id: str, key: str, *, as_key: str | None = None
    ) -> MemoryItem:
        path = f"/v1/runs/{_seg(run_id)}/memory/{_seg(key)}/promote"
        body = {"as_key": as_key} if as_key else {}
        return from_data(MemoryItem, await self.request("POST", path, json=body))

    async def list_user_memory(
        self, *, namespace: tuple[str, ...] | None = (), limit: int = 1000, offset: int = 0
    ) -> list[MemoryItem]:
        page = await self._page(
            MemoryItem,
            "/v1/users/me/memory",
            namespace=list(namespace or ()) or None,
            all_namespaces=namespace is None,
            limit=limit,
            offset=offset or None,
        )
        return page.data

    async def get_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> MemoryItem:
        path = f"/v1/users/me/memory/{_seg(key)}"
        answer = await self.request("GET", path, params=_params(namespace=list(namespace) or None))
        return from_data(MemoryItem, answer)

    async def set_user_memory(
        self, key: str, value: Any, *, namespace: tuple[str, ...] = ()
    ) -> MemoryItem:
        path = f"/v1/users/me/memory/{_seg(key)}"
        answer = await self.request(
            "PUT",
            path,
            params=_params(namespace=list(namespace) or None),
            json={"value": value},
        )
        return from_data(MemoryItem, answer)

    async def delete_user_memory(self, key: str, *, namespace: tuple[str, ...] = ()) -> None:
        path = f"/v1/users/me/memory/{_seg(key)}"
        await self.request("DELETE", path, params=_params(namespace=list(namespace) or None))

    def _app_memory(self, app: str, key: str = "") -> str:
        base = f"/v1/apps/{_seg(app)}/memory"
        return f"{base}/{_seg(key)}" if key else base

    async def list_app_memory(self, app: str) -> list[MemoryItem]:
        return await self._everything(MemoryItem, self._app_memory(app))

    async def get_app_memory(self, app: str, key: str) -> MemoryItem:
        return from_data(MemoryItem, await self.request("GET", self._app_memory(app, key)))

    async def set_app_memory(self, app: str, key: str, value: Any) -> MemoryItem:
        path = self._app_memory(app, key)
        return from_data(MemoryItem, await self.request("PUT", path, json={"value": value}))

    async def delete_app_memory(self, app: str, key: str) -> None:
        await self.request("DELETE", self._app_memory(app, key))

    # -- context and events --------------------------------------------------------------------

    async def get_context(
        self, session_id: str, *, budget_tokens: int | None = None
    ) -> dict[str, Any]:
        path = f"/v1/sessions/{_seg(session_id)}/context"
        answer: dict[str, Any] = await self.request(
            "GET", path, params=_params(budget_tokens=budget_tokens)
        )
        return answer

    async def list_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        limit: int = 500,
    ) -> list[Event]:
        path = streams.events_path(session_id, run_id)
        page = await self._page(Event, path, stream="false", after=after_id, limit=limit)
        return page.data

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
    ) -> Schedule:
        given = {
            "cron": cron,
            "agent": agent,
            "input": input,
            "goal": goal,
            "session_id": session_id,
            "timezone": timezone,
            "metadata": metadata,
            "end_at": to_iso(end_at),
            "enabled": enabled,
        }
        body = {k: v for k, v in given.items() if v is not None}
        return from_data(Schedule, await self.request("POST", "/v1/schedules", json=body))

    async def get_schedule(self, schedule_id: str) -> Schedule:
        path = f"/v1/schedules/{_seg(schedule_id)}"
        return from_data(Schedule, await self.request("GET", path))

    async def list_schedules(
        self,
        *,
        session_id: str | None = None,
        agent: str | None = None,
        enabled: bool | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Schedule]:
        return await self._page(
            Schedule,
            "/v1/schedules",
            session_id=session_id,
            agent=agent,
            enabled=None if enabled is None else str(enabled).lower(),
            limit=limit,
            cursor=cursor,
        )

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
    ) -> Schedule:
        given = {
            "cron": cron,
            "timezone": timezone,
            "agent": agent,
            "goal": goal,
            "input": input,
            "metadata": metadata,
            "end_at": end_at if isinstance(end_at, Unset) else to_iso(end_at),
            "enabled": enabled,
        }
        body = {k: v for k, v in given.items() if v is not UNSET}
        path = f"/v1/schedules/{_seg(schedule_id)}"
        return from_data(Schedule, await self.request("PATCH", path, json=body))

    async def delete_schedule(self, schedule_id: str) -> None:
        await self.request("DELETE", f"/v1/schedules/{_seg(schedule_id)}")

    async def webhook_secret(self, *, rotate: bool = False) -> str:
        method = "POST" if rotate else "GET"
        return str((await self.request(method, "/v1/webhooks/secret"))["secret"])

    def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        heartbeat: float | None = None,
    ) -> AsyncGenerator[Event | None, None]:
        """Events as they commit, after after_id, each exactly once and in order; a dropped
        connection is resumed with Last-Event-ID. None every heartbeat seconds of silence (when
        heartbeat is given). A run's stream ends after its terminal event."""
        return streams.follow(
            self, session_id=session_id, run_id=run_id, after_id=after_id, heartbeat=heartbeat
        )


if TYPE_CHECKING:
    from tether.runtime.backend import Backend

    def _client_is_a_backend(client: AsyncClient) -> Backend:
        return client


def _session_body(
    title: str | None,
    metadata: dict[str, Any] | None,
    project: dict[str, Any] | None,
    ttl_seconds: int | Unset | None,
    external_key: str | None,
    app: str | None,
) -> dict[str, Any]:
    given: dict[str, Any] = {
        "title": title,
        "metadata": metadata,
        "project": project,
        "external_key": external_key,
        "app": app,
    }
    body = {k: v for k, v in given.items() if v is not None}
    if ttl_seconds is not UNSET:
        body["ttl_seconds"] = ttl_seconds
    return body


def _message_body(
    role: Role | str | None,
    content: str | None,
    metadata: dict[str, Any] | None,
    item: dict[str, Any] | None,
) -> dict[str, Any]:
    given = {"role": _value(role) or None, "content": content, "metadata": metadata or None}
    body = {k: v for k, v in given.items() if v is not None}
    if item is not None:
        body["item"] = item
    return body


def _checked_url(url: str) -> str:
    """The server URL without a trailing slash, or UsageError naming what is wrong with it."""
    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as exc:
        raise UsageError(f"invalid server URL {url!r}: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise UsageError(f"invalid server URL {url!r}: use http://HOST:PORT or https://HOST")
    if parsed.port is not None and not 0 < parsed.port < 65536:
        raise UsageError(f"invalid server URL {url!r}: the port must be 1-65535")
    return url.rstrip("/")
