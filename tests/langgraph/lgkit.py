"""Helpers of the LangGraph-compatibility tests: a real ``tether serve`` on 127.0.0.1
(tests/serving.py) with keys for two owners, and clients for it."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from langgraph_sdk import get_client, get_sync_client
from langgraph_sdk.client import LangGraphClient, SyncLangGraphClient

from tests.serving import Served, serve

#: A thread id nobody has.
MISSING = "0c6f5d2e-0000-4000-8000-000000000000"


@dataclass
class Server(Served):
    """A running ``tether serve``."""

    def sdk(self, owner: str = "alice", *, key: str | None = None) -> SyncLangGraphClient:
        """The official sync client, with owner's key (sent as x-api-key)."""
        return get_sync_client(url=self.url, api_key=key or self.keys[owner])

    def async_sdk(self, owner: str = "alice") -> LangGraphClient:
        return get_client(url=self.url, api_key=self.keys[owner])

    def native(self, owner: str = "alice") -> httpx.Client:
        """A plain client of the native /v1 API (Authorization: Bearer)."""
        headers = {"Authorization": f"Bearer {self.keys[owner]}"}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30)

    def raw(self, owner: str = "alice") -> httpx.Client:
        """A plain client sending x-api-key, for what the SDK does not show (headers, bytes)."""
        return httpx.Client(base_url=self.url, headers={"x-api-key": self.keys[owner]}, timeout=30)


def start_server(folder: Path, owners: tuple[str, ...] = ("alice", "bob")) -> Server:
    """Keys for owners in a new database, served until it listens; the client's own
    LangSmith/LangGraph keys are kept out of the server's environment."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("LANGGRAPH_API_KEY", "LANGSMITH_API_KEY", "LANGCHAIN_API_KEY")
    }
    return serve(Server, folder / "tether.db", owners=owners, env=env)


def user(text: str) -> dict[str, Any]:
    """A user message as LangGraph callers write it."""
    return {"role": "user", "content": text}


def said(text: str, **fields: Any) -> dict[str, Any]:
    """A run's input: a user message, with other fields of the input beside it."""
    return {"messages": [user(text)], **fields}


def holding(*messages: dict[str, Any]) -> dict[str, Any]:
    """A run's input of messages written out."""
    return {"messages": list(messages)}


def wire(response: object) -> dict[str, Any]:
    """A JSON object the SDK returned, with every key the server sent: the SDK's TypedDicts
    name fewer than the LangGraph API has (a run's error, started_at, kwargs, …)."""
    assert isinstance(response, dict), response
    return response


def contents(values: object) -> list[tuple[str, str]]:
    """(type, content) of the messages in a thread's values."""
    return [(m["type"], m["content"]) for m in wire(values).get("messages", [])]
