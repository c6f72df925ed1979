"""Client: the AsyncClient's operations for synchronous programs (same names, parameters and
return types), run on a private event loop."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar

from tether.client.async_client import AsyncClient
from tether.core.event import Event
from tether.runtime.loop_thread import LoopThread

P = ParamSpec("P")
T = TypeVar("T")


def _blocking(
    operation: Callable[Concatenate[AsyncClient, P], Coroutine[Any, Any, T]],
) -> Callable[Concatenate[Client, P], T]:
    """operation as a Client method: its name and parameters, its result (never a coroutine);
    a wrong argument is a TypeError naming ``Client.<operation>``."""
    signature = inspect.signature(operation)
    name = f"Client.{operation.__name__}"

    @functools.wraps(operation)
    def method(self: Client, /, *args: P.args, **kwargs: P.kwargs) -> T:
        try:
            signature.bind(self.aio, *args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"{name}(): {exc}") from None
        return self._loop.call(operation(self.aio, *args, **kwargs))

    method.__qualname__ = name
    return method


class Client:
    """tether over HTTP, for synchronous programs: ``Client(url, api_key=...)``."""

    def __init__(self, url: str, *, api_key: str | None = None, timeout: float = 30.0) -> None:
        self._loop = LoopThread(name="tether-client")
        #: The async client doing the work (on the private loop).
        self.aio = AsyncClient(url, api_key=api_key, timeout=timeout)
        self.url = self.aio.url

    def close(self) -> None:
        if self._loop.loop.is_closed():
            return
        self._loop.call(self.aio.close())
        self._loop.stop()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def stream_events(
        self,
        *,
        session_id: str | None = None,
        run_id: str | None = None,
        after_id: int | None = None,
        heartbeat: float | None = None,
    ) -> Iterator[Event | None]:
        """AsyncClient.stream_events, blocking: resumes by itself after a dropped connection."""
        stream = self.aio.stream_events(
            session_id=session_id, run_id=run_id, after_id=after_id, heartbeat=heartbeat
        )
        return self._loop.iterate(stream)

    create_session = _blocking(AsyncClient.create_session)
    get_or_create_session = _blocking(AsyncClient.get_or_create_session)
    get_session = _blocking(AsyncClient.get_session)
    get_session_by_key = _blocking(AsyncClient.get_session_by_key)
    list_sessions = _blocking(AsyncClient.list_sessions)
    update_session = _blocking(AsyncClient.update_session)
    close_session = _blocking(AsyncClient.close_session)
    delete_session = _blocking(AsyncClient.delete_session)
    add_message = _blocking(AsyncClient.add_message)
    add_messages = _blocking(AsyncClient.add_messages)
    list_messages = _blocking(AsyncClient.list_messages)
    pop_message = _blocking(AsyncClient.pop_message)
    clear_messages = _blocking(AsyncClient.clear_messages)
    create_run = _blocking(AsyncClient.create_run)
    get_run = _blocking(AsyncClient.get_run)
    list_runs = _blocking(AsyncClient.list_runs)
    wait_run = _blocking(AsyncClient.wait_run)
    cancel_run = _blocking(AsyncClient.cancel_run)
    resume_run = _blocking(AsyncClient.resume_run)
    delete_run = _blocking(AsyncClient.delete_run)
    list_steps = _blocking(AsyncClient.list_steps)
    start_held_run = _blocking(AsyncClient.start_held_run)
    resume_held_run = _blocking(AsyncClient.resume_held_run)
    record_held_step = _blocking(AsyncClient.record_held_step)
    renew_held_run = _blocking(AsyncClient.renew_held_run)
    suspend_held_run = _blocking(AsyncClient.suspend_held_run)
    finish_held_run = _blocking(AsyncClient.finish_held_run)
    list_tool_calls = _blocking(AsyncClient.list_tool_calls)
    list_session_memory = _blocking(AsyncClient.list_session_memory)
    get_session_memory = _blocking(AsyncClient.get_session_memory)
    set_session_memory = _blocking(AsyncClient.set_session_memory)
    delete_session_memory = _blocking(AsyncClient.delete_session_memory)
    list_run_memory = _blocking(AsyncClient.list_run_memory)
    promote_memory = _blocking(AsyncClient.promote_memory)
    list_user_memory = _blocking(AsyncClient.list_user_memory)
    get_user_memory = _blocking(AsyncClient.get_user_memory)
    set_user_memory = _blocking(AsyncClient.set_user_memory)
    delete_user_memory = _blocking(AsyncClient.delete_user_memory)
    list_app_memory = _blocking(AsyncClient.list_app_memory)
    get_app_memory = _blocking(AsyncClient.get_app_memory)
    set_app_memory = _blocking(AsyncClient.set_app_memory)
    delete_app_memory = _blocking(AsyncClient.delete_app_memory)
    get_context = _blocking(AsyncClient.get_context)
    list_events = _blocking(AsyncClient.list_events)
