"""Where an adapter's calls go: a tether backend, and how to await it from any thread's loop.

A database path is opened once per process and shared by every session on it (two instances
on one path are one database, as two processes on one file are); it is closed when the last
session on it is. ``:memory:`` is private to one session. An open ``tether.open`` /
``tether.connect`` handle is used as it is and never closed here.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

from tether.runtime.async_facade import AsyncTether
from tether.runtime.backend import Backend
from tether.runtime.facade import Tether
from tether.runtime.facade import open as open_tether
from tether.runtime.service import Service
from tether.store.factory import check_url, is_postgres, open_store, sqlite_path

T = TypeVar("T")
Db = str | Path | Tether | AsyncTether


class Link:
    """A backend, and (for a sync handle) the facade that knows which loop may await it."""

    def __init__(self, backend: Backend, tt: Tether | None = None, key: str | None = None) -> None:
        self.backend = backend
        self._tt = tt
        self._key = key

    async def call(self, coro: Coroutine[Any, Any, T]) -> T:
        """Await coro, a call on the backend, from the running loop."""
        if self._tt is None:
            return await coro
        return await self._tt.run_async(coro)

    def release(self) -> None:
        """Let go of the database (closed when no other session holds it)."""
        key, self._key = self._key, None
        if key is not None:
            _release(key)


class _Opened:
    def __init__(self, backend: Backend, tt: Tether | None) -> None:
        self.backend = backend
        self.tt = tt
        self.holders = 0


_lock = threading.Lock()
_opened: dict[str, _Opened] = {}
_private = itertools.count(1)


def link(db: Db) -> Link:
    """A link to db: a path (shared in the process), ``:memory:``, a URL, or an open handle."""
    if isinstance(db, Tether):
        return Link(db.async_backend, db)
    if isinstance(db, AsyncTether):
        return Link(db.backend)
    text = check_url(db)
    private = not is_postgres(text) and sqlite_path(text) == ":memory:"
    key = text if is_postgres(text) else str(Path(sqlite_path(text)).resolve())
    with _lock:
        if private:
            key = f":memory:{next(_private)}"
        opened = _opened.get(key)
        if opened is None:
            opened = _opened[key] = _open(":memory:" if private else text)
        opened.holders += 1
        return Link(opened.backend, opened.tt, key)


def _open(text: str) -> _Opened:
    store = open_store(text)
    if store.any_loop:  # awaited on the caller's loop: no thread of our own
        return _Opened(Service(store), None)
    tt = open_tether(store, worker=False)
    return _Opened(tt.async_backend, tt)


def _release(key: str) -> None:
    with _lock:
        opened = _opened[key]
        opened.holders -= 1
        if opened.holders:
            return
        del _opened[key]
    if opened.tt is not None:
        opened.tt.close()
    else:
        _settle(opened.backend.close())


def _settle(coro: Coroutine[Any, Any, None]) -> None:
    """Run coro to its end from sync code, whether or not this thread runs a loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        asyncio.run(coro)
        return
    done = threading.Thread(target=asyncio.run, args=(coro,), name="tether-close")
    done.start()
    done.join()
