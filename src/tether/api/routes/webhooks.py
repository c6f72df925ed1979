"""The caller's webhook signing secret."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import JSONResponse, Response

from tether.api import schemas
from tether.api.auth import Owned

router = APIRouter(prefix="/v1/webhooks", tags=["webhooks"])


@router.get("/secret", response_model=schemas.WebhookSecret)
async def webhook_secret(svc: Owned) -> Response:
    """The secret the caller's webhooks are signed with (X-Tether-Signature); made on first
    use."""
    return JSONResponse({"secret": await svc.webhook_secret()})


@router.post("/secret", response_model=schemas.WebhookSecret)
async def rotate_webhook_secret(svc: Owned) -> Response:
    """A new secret for the caller's webhooks: deliveries from now on are signed with it."""
    return JSONResponse({"secret": await svc.webhook_secret(rotate=True)})
