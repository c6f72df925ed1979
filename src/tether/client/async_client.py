"""AsyncClient: the Backend operations over HTTP, returning the same records and raising the same
errors as the in-process Service."""

from __future__ import annotations

import asyncio
import json as jsonlib
from collections.abc import AsyncGenerator
from datetime import datetime
from typing import TYPE_CHECKING, Any, Unpack
from urllib.parse import quote

import httpx

from tether.client import errors, streams
from tether.core.clock import Clock, SystemClock, to_iso
from tether.core.errors import ServerUnreachable, TetherError, UsageError
from tether.core.event import Event
from tether.core.memory import MemoryItem
from tether.core.message import Message, Role
from tether.core.page import Page
from tether.core.run import Run, RunOptionFields, RunOptions
from tether.core.serde import from_data, to_data
from tether.core.session import Session
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step
from tether.runtime import limits
from tether.store.base import UNSET, Unset
from tether.telemetry import trace_headers
from tether.version import __version__

#: The server holds a long-poll at most this long; longer waits are several polls.
_POLL_CAP = 300.0


def _seg(value: str) -> str:
    return quote(value, safe="")


def _value(value: Any) -> Any:
    """An enum as its wire value; anything else as is."""
    return getattr(value, "value", value)


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
    ) -> Any:
        """Send one request; the decoded JSON answer (None for 204) or tether's error."""
        try:
            response = await self.http.request(
                method,
                path,
                params=params,
                json=None if json is UNSET else json,
                content=b"" if json is UNSET and method in ("POST", "PUT", "PATCH") else None,
                timeout=self.timeout if timeout is None else timeout,
                headers=trace_headers(),
            )
        except httpx.TransportError as exc:
            raise ServerUnreachable(f"cannot reach {self.url}: {exc!r}") from exc
        if response.status_code >= 400:
            raise errors.from_response(response)
        if response.status_code == 204:
            return None
        try:
            return response.json()
        except ValueError:
            raise TetherError(
                f"{self.url} answered {method} {path} with something other than JSON: "
                "is it a tether server?"
            ) from None

    async def _page(self, cls: type[Any], path: str, **params: Any) -> Page[Any]:
        body = await self.request("GET", path, params=_params(**params))
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
        context: dict[str, Any] | None = None,
        ttl_seconds: int | Unset | None = UNSET,
        session_id: str | None = None,
    ) -> Session:
        body: dict[str, Any] = {"title": title, "metadata": metadata, "context": context}
        body = {k: v for k, v in body.items() if v is not None}
        if ttl_seconds is not UNSET:
            body["ttl_seconds"] = ttl_seconds
        if session_id is not None:
            body["id"] = session_id
        return from_data(Session, await self.request("POST", "/v1/sessions", json=body))

    async def get_session(self, session_id: str) -> Session:
        return from_data(Session, await self.request("GET", f"/v1/sessions/{_seg(session_id)}"))

    async def list_sessions(
        self,
        *,
        status: SessionStatus | str | None = None,
        query: str | None = None,
        metadata: dict[str, Any] | None = None,
        limit: int = 50,
        cursor: str | None = None,
    ) -> Page[Session]:
        return await self._page(
            Session,
            "/v1/sessions",
            status=status or None,
            query=query or None,
            metadata=jsonlib.dumps(metadata) if metadata else None,
            limit=limit,
            cursor=cursor,
        )

    async def update_session(
        self,
        session_id: str,
        *,
        title: str | Unset | None = UNSET,
        metadata: dict[str, Any] | Unset = UNSET,
        context: dict[str, Any] | Unset = UNSET,
        ttl_seconds: int | Unset | None = UNSET,
    ) -> Session:
        given = {
            "title": title,
            "metadata": metadata,
            "context": context,
            "ttl_seconds": ttl_seconds,
        }
        body = {k: v for k, v in given.items() if v is not UNSET}
        path = f"/v1/sessions/{_seg(session_id)}"
        return from_data(Session, await self.request("PATCH", path, json=body))

    async def close_session(self, session_id: str) -> Session:
        path = f"/v1/sessions/{_seg(session_id)}/close"
        return from_data(Session, await self.request("POST", path))

    async def delete_session(self, session_id: str) -> None:
        await self.request("DELETE", f"/v1/sessions/{_seg(session_id)}")

    # -- messages ------------------------------------------------------------------------------

    async def add_message(
        self,
        session_id: str,
        role: Role | str,
        content: str,
        *,
        metadata: dict[str, Any] | None = None,
    ) -> Message:
        body: dict[str, Any] = {"role": _value(role), "content": content}
        if metadata:
            body["metadata"] = metadata
        path = f"/v1/sessions/{_seg(session_id)}/messages"
        return from_data(Message, await self.request("POST", path, json=body))

    async def list_messages(
        self, session_id: str, *, limit: int = 100, cursor: str | None = None
    ) -> Page[Message]:
        path = f"/v1/sessions/{_seg(session_id)}/messages"
        return await self._page(Message, path, limit=limit, cursor=cursor)

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
