"""tether over HTTP: ``AsyncClient`` and ``Client`` mirror the in-process Service (same
operations, records and errors); ``connect`` gives the sync facade of ``tether.open``."""

from __future__ import annotations

from tether.client.async_client import AsyncClient
from tether.client.sync_client import Client
from tether.runtime.async_facade import AsyncTether
from tether.runtime.facade import Tether


def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> Tether:
    """The same API as ``tether.open(...)``, against a tether server (no embedded worker: the
    server's workers execute runs)."""
    return Tether(AsyncClient(url, api_key=api_key, timeout=timeout))


def connect_async(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> AsyncTether:
    """The same API as ``tether.open_async(...)``, against a tether server."""
    return AsyncTether(AsyncClient(url, api_key=api_key, timeout=timeout))


__all__ = ["AsyncClient", "Client", "connect", "connect_async"]
