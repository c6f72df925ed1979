"""Registered agents as LangGraph assistants, and the service probes ``/ok`` and ``/info``.

Every agent is a graph with one default assistant. Its ``assistant_id`` is what LangGraph gives
a graph's default assistant, ``uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, graph_id)``; the agent
name works as an ``assistant_id`` too.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph.options import check_keys, obj, one_of, opt_dict, opt_str, page
from tether.core.clock import to_iso
from tether.core.errors import NotFound
from tether.runtime.agent import AgentRegistry
from tether.version import __version__

#: LangGraph's namespace for the ids of graphs' default assistants.
ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
#: Assistants exist as long as the server does.
_SINCE = to_iso(datetime.now(UTC))

router = APIRouter(tags=["langgraph"], include_in_schema=False)


def assistant_uuid(agent: str) -> str:
    return str(uuid.uuid5(ASSISTANT_NAMESPACE, agent))


def resolve(agents: AgentRegistry, assistant_id: str) -> str:
    """The agent an assistant id (agent name or default-assistant UUID) names, or 404."""
    if assistant_id in agents:
        return assistant_id
    for name in agents:
        if assistant_uuid(name) == assistant_id:
            return name
    raise NotFound("assistant", assistant_id)


def assistant(agents: AgentRegistry, name: str) -> dict[str, Any]:
    return {
        "assistant_id": assistant_uuid(name),
        "graph_id": name,
        "name": name,
        "description": agents.describe(name) or None,
        "config": {},
        "context": {},
        "metadata": {"created_by": "system"},
        "version": 1,
        "created_at": _SINCE,
        "updated_at": _SINCE,
    }


@router.get("/assistants/{assistant_id}")
async def get_assistant(svc: Owned, assistant_id: str) -> Response:
    return JSONResponse(assistant(svc.agents, resolve(svc.agents, assistant_id)))


_SEARCH_KEYS = (
    "metadata",
    "graph_id",
    "name",
    "limit",
    "offset",
    "sort_by",
    "sort_order",
    "select",
)
_SORTS = ("assistant_id", "graph_id", "name", "created_at", "updated_at")


@router.post("/assistants/search")
async def search_assistants(
    svc: Owned, body: Annotated[dict[str, Any] | None, Body()] = None
) -> Response:
    """Every registered agent, filtered by graph_id, name (part of it) and metadata."""
    query = obj(body)
    check_keys("body", query, _SEARCH_KEYS)
    limit, offset = page(query, default_limit=10)
    graph_id = opt_str(query, "graph_id")
    name = (opt_str(query, "name") or "").lower()
    metadata = opt_dict(query, "metadata") or {}
    found = [
        assistant(svc.agents, agent)
        for agent in svc.agents
        if (graph_id is None or agent == graph_id) and name in agent.lower()
    ]
    found = [a for a in found if all(a["metadata"].get(k) == v for k, v in metadata.items())]
    sort_by = one_of(query.get("sort_by") or "name", _SORTS, "body.sort_by")
    order = one_of(query.get("sort_order") or "asc", ("asc", "desc"), "body.sort_order")
    found.sort(key=lambda a: str(a[sort_by]), reverse=order == "desc")
    select = query.get("select")
    chosen = found[offset : offset + limit]
    if isinstance(select, list) and select:
        chosen = [{k: a[k] for k in select if k in a} for a in chosen]
    headers = {}
    if offset + limit < len(found):
        headers["X-Pagination-Next"] = str(offset + limit)
    return JSONResponse(chosen, headers=headers)


@router.get("/ok")
async def ok() -> Response:
    """Liveness, as LangGraph servers answer it."""
    return JSONResponse({"ok": True})


@router.get("/info")
async def info() -> Response:
    """What this server is and which LangGraph features it provides."""
    return JSONResponse(
        {
            "version": __version__,
            "server": "tether",
            "flags": {
                "assistants": True,
                "crons": True,
                "langsmith": False,
                "langsmith_tracing_replicas": False,
                "thread_ttl": True,
                "store_ttl": False,
                "semantic_search": False,
            },
        }
    )
