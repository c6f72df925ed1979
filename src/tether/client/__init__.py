"""tether over HTTP: ``AsyncClient`` and ``Client`` mirror the in-process Service (same
operations, records and errors); ``connect`` gives the sync facade of ``tether.open``."""

from __future__ import annotations

import os

from tether.client.async_client import AsyncClient
from tether.client.sync_client import Client
from tether.runtime.async_facade import AsyncTether
from tether.runtime.facade import Tether


def connect(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> Tether:
    """The same API as ``tether.open(...)``, against a tether server (no embedded worker: the
    server's workers execute runs). api_key defaults to ``TETHER_API_KEY``, as in the CLI."""
    return Tether(AsyncClient(url, api_key=_api_key(api_key), timeout=timeout))


def connect_async(url: str, *, api_key: str | None = None, timeout: float = 30.0) -> AsyncTether:
    """The same API as ``tether.open_async(...)``, against a tether server; awaited or not
    (``await tether.connect_async(url)`` like ``await tether.open_async(db)``, or
    ``async with tether.connect_async(url) as tt``). api_key defaults to ``TETHER_API_KEY``."""
    return AsyncTether(AsyncClient(url, api_key=_api_key(api_key), timeout=timeout))


def _api_key(given: str | None) -> str | None:
    return given if given is not None else os.environ.get("TETHER_API_KEY") or None


__all__ = ["AsyncClient", "Client", "connect", "connect_async"]
