"""BlockingBackend: a Backend's operations for synchronous programs (``tt.backend`` of
``tether.open`` and ``tether.connect``) — results, never coroutines to await."""

from __future__ import annotations

import functools
import inspect
from collections.abc import AsyncGenerator, Callable, Coroutine, Iterator
from typing import Any

from tether.runtime.backend import Backend

Caller = Callable[[Coroutine[Any, Any, Any]], Any]
Iterate = Callable[[AsyncGenerator[Any, None]], Iterator[Any]]


class BlockingBackend:
    """The operations of a Backend (``create_session``, ``list_messages``, …: the names and
    parameters of ``tether.Service``), each returning its result; ``stream_events`` yields
    events. A wrong argument is a TypeError naming ``backend.<operation>``."""

    def __init__(self, backend: Backend, call: Caller, iterate: Iterate) -> None:
        self._backend = backend
        self._call = call
        self._iterate = iterate

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or not hasattr(self._backend, name):
            raise AttributeError(f"the backend has no operation {name!r}")
        found = getattr(self._backend, name)
        if inspect.iscoroutinefunction(found):
            return self._blocking(name, found, self._call)
        if inspect.isasyncgenfunction(found):
            return self._blocking(name, found, self._iterate)
        return found  # a plain attribute (the clock) or a synchronous method

    @staticmethod
    def _blocking(name: str, operation: Callable[..., Any], finish: Callable[[Any], Any]) -> Any:
        signature = inspect.signature(operation)

        @functools.wraps(operation)
        def blocking(*args: Any, **kwargs: Any) -> Any:
            try:
                signature.bind(*args, **kwargs)
            except TypeError as exc:
                raise TypeError(f"backend.{name}(): {exc}") from None
            return finish(operation(*args, **kwargs))

        blocking.__qualname__ = f"backend.{name}"
        return blocking

    def __dir__(self) -> list[str]:
        return sorted(n for n in dir(self._backend) if not n.startswith("_"))

    def __repr__(self) -> str:
        return "BlockingBackend()"
