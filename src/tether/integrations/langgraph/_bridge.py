"""The tether a LangGraph adapter works on, and how its sync and async methods call it."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from tether.core.errors import UsageError
from tether.runtime.facade import Tether
from tether.runtime.facade import open as open_tether
from tether.runtime.service import Service

T = TypeVar("T")

#: What an adapter is made from: a database (a SQLite path or a ``postgresql://`` URL) or an
#: open handle (``tether.open(...)``).
Target = str | Path | Tether


class Bridge:
    """A tether handle (opened here from a path, or given), its Service, and calls into it;
    or, for a graph run by tether itself, a Service and the event loop its store lives on."""

    def __init__(self, target: Target, *, owner: str | None = None) -> None:
        if isinstance(target, Tether):
            self.tether, self._owned = target, False
        elif isinstance(target, str | Path):
            self.tether, self._owned = open_tether(target, owner=owner, worker=False), True
        else:
            raise UsageError("give a database path or URL, or a handle from tether.open()")
        service = self.tether.async_backend
        if not isinstance(service, Service):
            raise UsageError("the LangGraph adapters need a database (tether.open), not a server")
        self.service = service if owner is None or self._owned else service.for_owner(owner)
        self._any_loop = service.store.any_loop
        self._loop = self.tether._loop.loop

    @classmethod
    def on_loop(cls, service: Service, loop: asyncio.AbstractEventLoop) -> Bridge:
        """A bridge to service, whose store is used on loop (the loop a run executes on)."""
        bridge = cls.__new__(cls)
        bridge.service, bridge._owned = service, False
        bridge._any_loop = service.store.any_loop
        bridge._loop = loop
        return bridge

    def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run coro to completion for a synchronous caller (never on the store's loop)."""
        if self._owned or hasattr(self, "tether"):
            return self.tether._call(coro)
        if _running_loop() is self._loop:
            coro.close()
            raise UsageError(
                "a graph run by tether calls its checkpointer and store from its event loop: "
                "use their async methods (ainvoke, aget_state, aput …) there"
            )
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()

    async def acall(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await coro for an asynchronous caller: on its loop when the store allows, else on
        the store's loop."""
        if self._any_loop or asyncio.get_running_loop() is self._loop:
            return await coro
        future = asyncio.run_coroutine_threadsafe(coro, self._loop)
        return await asyncio.wrap_future(future)

    def close(self) -> None:
        """Close the handle if it was opened here."""
        if self._owned:
            self.tether.close()


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None
