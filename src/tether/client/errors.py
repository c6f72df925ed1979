"""Turn HTTP error responses back into tether's errors (same classes as in-process)."""

from __future__ import annotations

from typing import Any

import httpx

from tether.core.errors import AgentNotFound, TetherError, error_from_code

_MEMBERS = frozenset({"type", "title", "status", "detail", "code"})
#: What an unknown agent means over HTTP: an agent registered in the client's process is not
#: the server's.
SERVER_AGENTS = (
    "the server runs only the agents it loaded: start it with "
    "`tether serve --agents MODULE` (TETHER_AGENTS), MODULE registering the agent"
)


def from_response(response: httpx.Response) -> TetherError:
    """The error a problem+json response describes (by its code), or a generic one."""
    try:
        body: Any = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("code"), str):
        details = {k: v for k, v in body.items() if k not in _MEMBERS}
        detail = body.get("detail")
        message = detail if isinstance(detail, str) else str(body.get("title", "error"))
        if body["code"] == AgentNotFound.code:
            message += f"; {SERVER_AGENTS}"
        return error_from_code(body["code"], message, details)
    text = " ".join(response.text.split())[:200]
    return TetherError(
        f"HTTP {response.status_code} from {response.request.url}: {text or response.reason_phrase}"
    )
