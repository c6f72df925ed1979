"""LangGraph endpoints tether does not serve, refused with 422 ``unsupported_option`` naming
the feature (after authentication), rather than a bare 404 or 405 a client would take for a
missing thread or assistant."""

from __future__ import annotations

from fastapi import APIRouter, Depends

from tether.api.auth import service
from tether.api.langgraph.options import refuse

router = APIRouter(tags=["langgraph"], include_in_schema=False, dependencies=[Depends(service)])

#: (method, path, feature, why)
_UNSERVED = (
    ("POST", "/threads/{thread_id}/copy", "threads.copy", "a session cannot be copied"),
    ("POST", "/threads/prune", "threads.prune", "delete threads one by one, or let them expire"),
    (
        "GET",
        "/threads/{thread_id}/stream",
        "threads.join_stream",
        "join a run's stream instead (runs.join_stream)",
    ),
    *(
        (method, path, "threads.stream (the v3 streaming protocol)", "use runs.stream")
        for method, path in (
            ("POST", "/threads/{thread_id}/commands"),
            ("GET", "/threads/{thread_id}/stream/events"),
        )
    ),
    ("POST", "/runs/cancel", "runs.cancel_many", "cancel runs one by one (runs.cancel)"),
    *(
        (method, path, "assistant management", "assistants are tether's registered agents")
        for method, path in (
            ("POST", "/assistants"),
            ("PATCH", "/assistants/{assistant_id}"),
            ("DELETE", "/assistants/{assistant_id}"),
            ("POST", "/assistants/count"),
            ("POST", "/assistants/{assistant_id}/versions"),
            ("POST", "/assistants/{assistant_id}/latest"),
        )
    ),
    *(
        ("GET", path, "graphs and schemas", "an agent is a function, not a graph")
        for path in (
            "/assistants/{assistant_id}/graph",
            "/assistants/{assistant_id}/schemas",
            "/assistants/{assistant_id}/subgraphs",
            "/assistants/{assistant_id}/subgraphs/{namespace}",
        )
    ),
)


def _refusal(feature: str, why: str) -> object:
    async def refused() -> None:
        raise refuse(feature, why)

    return refused


for _method, _path, _feature, _why in _UNSERVED:
    router.add_api_route(_path, _refusal(_feature, _why), methods=[_method])  # type: ignore[arg-type]
