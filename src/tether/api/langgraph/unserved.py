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
    *(
        (method, path, "threads.stream (the v3 streaming protocol)", "use runs.stream")
        for method, path in (
            ("POST", "/threads/{thread_id}/commands"),
            ("POST", "/threads/{thread_id}/stream/events"),  # (the SDK's subscription)
            ("GET", "/threads/{thread_id}/stream/events"),
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
