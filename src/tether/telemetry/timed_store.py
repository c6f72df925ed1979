"""TimedStore: a Store that times every operation of the store it wraps."""

from __future__ import annotations

import functools
import inspect
import time
from collections.abc import Awaitable, Callable
from typing import Any, cast

from tether.store.base import Store

#: Given an operation's name, what to tell how long each call of it took (in seconds).
Timing = Callable[[str], Callable[[float], None]]


class TimedStore:
    """Every coroutine method of the wrapped store, timed (whether it returns or raises); every
    other attribute is the wrapped store's own."""

    def __init__(self, store: Store, timing: Timing) -> None:
        self.wrapped = store
        self._timing = timing

    def __getattr__(self, name: str) -> Any:
        found = getattr(self.wrapped, name)
        if not inspect.iscoroutinefunction(found):
            return found
        timed = _timed(name, found, self._timing)
        setattr(self, name, timed)  # looked up once per operation
        return timed


def timed(store: Store, timing: Timing) -> Store:
    """store, with its operations timed."""
    return cast(Store, TimedStore(store, timing))


def _timed(
    name: str, operation: Callable[..., Awaitable[Any]], timing: Timing
) -> Callable[..., Awaitable[Any]]:
    took = timing(name)

    @functools.wraps(operation)
    async def call(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return await operation(*args, **kwargs)
        finally:
            took(time.perf_counter() - start)

    return call
