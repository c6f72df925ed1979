"""LangGraph assistants: registered agents' default assistants and the owner's own (stored,
with versions), and the service probes ``/ok`` and ``/info``.

Every agent is a graph with one default assistant. Its ``assistant_id`` is what LangGraph gives
a graph's default assistant, ``uuid5(6ba7b821-9dad-11d1-80b4-00c04fd430c8, graph_id)``; the agent
name works as an ``assistant_id`` too. Those are fixed; assistants made with ``assistants.create``
are tether's assistants (runtime.assistants), changed in versions.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body
from starlette.responses import JSONResponse, Response

from tether.api.auth import Owned
from tether.api.langgraph.options import check_keys, obj, one_of, opt_dict, opt_str, page
from tether.core.assistant import Assistant
from tether.core.clock import to_iso
from tether.core.errors import AlreadyExists, Conflict, NotFound, UsageError
from tether.runtime import assistants
from tether.runtime.agent import AgentRegistry
from tether.runtime.service import Service
from tether.version import __version__

#: LangGraph's namespace for the ids of graphs' default assistants.
ASSISTANT_NAMESPACE = uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8")
#: Assistants exist as long as the server does.
_SINCE = to_iso(datetime.now(UTC))

router = APIRouter(tags=["langgraph"], include_in_schema=False)


def assistant_uuid(agent: str) -> str:
    return str(uuid.uuid5(ASSISTANT_NAMESPACE, agent))


def builtin(agents: AgentRegistry, assistant_id: str) -> str | None:
    """The agent whose default assistant this id (agent name or UUID) names, or None."""
    if assistant_id in agents:
        return assistant_id
    for name in agents:
        if assistant_uuid(name) == assistant_id:
            return name
    return None


async def resolve(svc: Service, assistant_id: str) -> tuple[str, Assistant | None]:
    """The agent an assistant id names, with the stored assistant when it is one; 404."""
    agent = builtin(svc.agents, assistant_id)
    if agent is not None:
        return agent, None
    stored = await assistants.find(svc, assistant_id)
    if stored is None:
        raise NotFound("assistant", assistant_id)
    return stored.graph_id, stored


def assistant(agents: AgentRegistry, name: str) -> dict[str, Any]:
    """A registered agent's default assistant."""
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


def stored_dict(found: Assistant, *, version: bool = False) -> dict[str, Any]:
    """A stored assistant (or, version, one of its versions) as LangGraph shows it."""
    data = {
        "assistant_id": found.id,
        "graph_id": found.graph_id,
        "name": found.name,
        "description": found.description,
        "config": found.config,
        "context": found.context,
        "metadata": found.metadata,
        "version": found.version,
        "created_at": to_iso(found.created_at),
    }
    if not version:
        data["updated_at"] = to_iso(found.updated_at)
    return data


async def _stored(svc: Service, assistant_id: str, doing: str) -> Assistant:
    """The stored assistant; a registered agent's default one is fixed (409)."""
    agent = builtin(svc.agents, assistant_id)
    if agent is not None:
        raise Conflict(
            f"assistant {assistant_id} is the default assistant of agent {agent!r}, which "
            f"cannot be {doing}: create an assistant of it (assistants.create(graph_id="
            f"{agent!r}, …)) and {'change' if doing == 'changed' else 'use'} that one"
        )
    return await assistants.get(svc, assistant_id)


@router.get("/assistants/{assistant_id}")
async def get_assistant(svc: Owned, assistant_id: str) -> Response:
    agent, stored = await resolve(svc, assistant_id)
    if stored is not None:
        return JSONResponse(stored_dict(stored))
    return JSONResponse(assistant(svc.agents, agent))


_CREATE_KEYS = (
    "graph_id",
    "assistant_id",
    "config",
    "context",
    "metadata",
    "if_exists",
    "name",
    "description",
)
_UPDATE_KEYS = ("graph_id", "config", "context", "metadata", "name", "description")
Json = Annotated[dict[str, Any] | None, Body()]


@router.post("/assistants")
async def create_assistant(svc: Owned, body: Json = None) -> Response:
    """A new assistant of a graph (an agent), version 1."""
    fields = obj(body)
    check_keys("body", fields, _CREATE_KEYS)
    graph_id = opt_str(fields, "graph_id")
    if not graph_id:
        raise UsageError("body.graph_id is required: the agent the assistant configures")
    if_exists = one_of(fields.get("if_exists") or "raise", ("raise", "do_nothing"), "if_exists")
    assistant_id = opt_str(fields, "assistant_id")
    if assistant_id is not None and builtin(svc.agents, assistant_id) is not None:
        if if_exists == "do_nothing":
            return await get_assistant(svc, assistant_id)
        raise AlreadyExists(f"assistant {assistant_id} already exists (a registered agent's)")
    made = await assistants.create(
        svc,
        graph_id,
        assistant_id=assistant_id,
        name=opt_str(fields, "name"),
        description=opt_str(fields, "description"),
        config=opt_dict(fields, "config"),
        context=opt_dict(fields, "context"),
        metadata=opt_dict(fields, "metadata"),
        if_exists="do_nothing" if if_exists == "do_nothing" else "raise",
    )
    return JSONResponse(stored_dict(made))


@router.patch("/assistants/{assistant_id}")
async def update_assistant(svc: Owned, assistant_id: str, body: Json = None) -> Response:
    """A new version with the fields given changed (metadata merged); runs use it from now."""
    fields = obj(body)
    check_keys("body", fields, _UPDATE_KEYS)
    await _stored(svc, assistant_id, "changed")
    changes = {k: v for k, v in fields.items() if v is not None}
    return JSONResponse(stored_dict(await assistants.update(svc, assistant_id, **changes)))


@router.delete("/assistants/{assistant_id}", status_code=204)
async def delete_assistant(svc: Owned, assistant_id: str) -> Response:
    await _stored(svc, assistant_id, "deleted")
    await assistants.delete(svc, assistant_id)
    return Response(status_code=204)


@router.post("/assistants/{assistant_id}/versions")
async def list_versions(svc: Owned, assistant_id: str, body: Json = None) -> Response:
    """The assistant's versions, newest first (filtered by metadata)."""
    query = obj(body)
    check_keys("body", query, ("metadata", "limit", "offset"))
    limit, offset = page(query, default_limit=10)
    metadata = opt_dict(query, "metadata") or {}
    agent = builtin(svc.agents, assistant_id)
    if agent is not None:
        found = [assistant(svc.agents, agent)]
    else:
        found = [
            stored_dict(v, version=True)
            for v in await assistants.versions(svc, assistant_id, limit=1000)
        ]
    found = [v for v in found if _matches(v["metadata"], metadata)]
    return JSONResponse(found[offset : offset + limit])


@router.post("/assistants/{assistant_id}/latest")
async def set_latest(svc: Owned, assistant_id: str, body: Json = None) -> Response:
    """Choose the version runs use."""
    fields = obj(body)
    check_keys("body", fields, ("version",))
    version = fields.get("version")
    agent = builtin(svc.agents, assistant_id)
    if agent is not None and version == 1:
        return JSONResponse(assistant(svc.agents, agent))
    await _stored(svc, assistant_id, "changed")
    if isinstance(version, bool) or not isinstance(version, int):
        raise UsageError("body.version must be a version number")
    return JSONResponse(stored_dict(await assistants.set_latest(svc, assistant_id, version)))


def _matches(metadata: dict[str, Any], wanted: dict[str, Any]) -> bool:
    return all(metadata.get(k) == v for k, v in wanted.items())


async def _every(svc: Service, query: dict[str, Any]) -> list[dict[str, Any]]:
    """Every assistant (registered agents' and stored ones) matching graph_id, name (part of
    it, any case) and metadata."""
    graph_id = opt_str(query, "graph_id")
    name = (opt_str(query, "name") or "").lower()
    metadata = opt_dict(query, "metadata") or {}
    found = [assistant(svc.agents, agent) for agent in svc.agents]
    found += [stored_dict(a) for a in await assistants.list_all(svc)]
    return [
        a
        for a in found
        if (graph_id is None or a["graph_id"] == graph_id)
        and name in a["name"].lower()
        and _matches(a["metadata"], metadata)
    ]


@router.post("/assistants/count")
async def count_assistants(svc: Owned, body: Json = None) -> Response:
    query = obj(body)
    check_keys("body", query, ("metadata", "graph_id", "name"))
    return JSONResponse(len(await _every(svc, query)))


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
async def search_assistants(svc: Owned, body: Json = None) -> Response:
    """Registered agents' default assistants and stored ones, filtered by graph_id, name (part
    of it) and metadata."""
    query = obj(body)
    check_keys("body", query, _SEARCH_KEYS)
    limit, offset = page(query, default_limit=10)
    found = await _every(svc, query)
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
