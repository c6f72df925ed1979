"""The interactive API docs at ``/docs``: Swagger UI served by tether itself (its assets come
from the ``fastapi-offline`` package), with the UI's security headers: no script, style or font
from another site, and no call to a validator elsewhere."""

from __future__ import annotations

from functools import cache
from importlib import resources

from fastapi import APIRouter
from starlette.responses import HTMLResponse, Response

from tether.ui.security import HEADERS

router = APIRouter(prefix="/docs", include_in_schema=False)

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tether API</title>
<link rel="icon" href="/ui/static/favicon.svg">
<link rel="stylesheet" href="/docs/swagger-ui.css">
</head>
<body>
<div id="swagger-ui"></div>
<script src="/docs/swagger-ui-bundle.js"></script>
<script src="/docs/docs.js"></script>
</body>
</html>
"""
#: The files the page loads: (package, file) and media type.
ASSETS = {
    "swagger-ui-bundle.js": (("fastapi_offline", "static/swagger-ui-bundle.js"), "text/javascript"),
    "swagger-ui.css": (("fastapi_offline", "static/swagger-ui.css"), "text/css"),
    "docs.js": (("tether.ui", "static/docs.js"), "text/javascript"),
}


@router.get("")
async def docs_page() -> Response:
    """Swagger UI over /openapi.json."""
    return HTMLResponse(PAGE, headers=HEADERS)


@router.get("/{name}")
async def docs_asset(name: str) -> Response:
    if name not in ASSETS:
        return Response(status_code=404, headers=HEADERS)
    (package, path), media_type = ASSETS[name]
    headers = {**HEADERS, "Cache-Control": "public, max-age=3600"}
    return Response(_read(package, path), media_type=media_type, headers=headers)


@cache
def _read(package: str, path: str) -> bytes:
    return resources.files(package).joinpath(path).read_bytes()
