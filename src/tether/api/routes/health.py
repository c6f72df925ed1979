"""Health: answers without a key, for load balancers and probes."""

from __future__ import annotations

from fastapi import APIRouter, Request
from starlette.responses import JSONResponse, Response

from tether.api import schemas
from tether.api.errors import problem
from tether.core.errors import TetherError
from tether.version import __version__

router = APIRouter(tags=["health"])


@router.get("/healthz", response_model=schemas.Health)
@router.head("/healthz", include_in_schema=False)
async def healthz(request: Request) -> Response:
    """200 when the server can read its database, 503 when it cannot (or when it refuses
    writes because a flush to disk failed: a restart is what mends it)."""
    try:
        version = await request.app.state.service.store.schema_version()
    except TetherError as exc:
        return problem(503, "unavailable", f"the database is unavailable: {exc}")
    return JSONResponse({"status": "ok", "version": __version__, "schema_version": version})
