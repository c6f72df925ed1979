"""The UI's cookie, CSRF protection and response headers.

The UI session's token lives in an http-only, SameSite=Strict cookie scoped to ``/ui``; it is
marked Secure when the request came over https or to a loopback host (browsers keep Secure
cookies from http://localhost and 127.0.0.1). Every form POST must come from this server's own
origin, under a host it answers for (``Origin`` check against the allowed hosts, never against
the request's own ``Host`` alone), and carry a token derived from the session (HMAC), which a
page of another site can neither read nor compute.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from tether.core.hosts import host_of, is_loopback
from tether.ui.auth import COOKIE, PREFIX, session_cookie
from tether.ui.settings import UiSettings

#: Pages load scripts, styles and streams from this origin only; nothing is fetched elsewhere.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
        "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'"
    ),
    "X-Frame-Options": "DENY",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "same-origin",
    "Cache-Control": "no-store",
}
#: Signs CSRF tokens when no session is in play (--no-auth); new on every start.
_PROCESS_SECRET = secrets.token_hex(32)


class CsrfRejected(Exception):
    """A form POST from another origin, or without this session's token."""


def csrf_token(request: Request) -> str:
    """The token every form of this browser session carries."""
    secret = session_cookie(request.scope) or _PROCESS_SECRET
    return hmac.new(secret.encode(), b"tether-ui-csrf", hashlib.sha256).hexdigest()


def check_origin(request: Request) -> None:
    """Refuse a POST whose Origin (or, lacking it, Referer) is not this server's own origin
    under a host it answers for."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return
    settings: UiSettings = request.app.state.ui
    parts = urlsplit(source)
    own = request.headers.get("host", "")
    if (
        not settings.hosts.permits(parts.netloc)
        or parts.scheme != request.url.scheme
        or host_of(parts.netloc) != host_of(own)
        or parts.port != request.url.port
    ):
        raise CsrfRejected(f"the form came from {source[:200]}, not from this server")


def check_csrf(request: Request, token: str | None) -> None:
    """Origin check and token check of a form POST."""
    check_origin(request)
    if not token or not hmac.compare_digest(token, csrf_token(request)):
        raise CsrfRejected("the form's security token is missing or stale")


def _secure(request: Request) -> bool:
    """Whether the browser keeps a Secure cookie from this origin: https, or a loopback host
    (browsers count http://localhost and 127.0.0.1 as secure). Elsewhere over plain http the
    cookie must go without the flag, or the browser would drop it and login would never hold;
    serve the UI over https there."""
    if request.url.scheme == "https":
        return True
    host = host_of(request.headers.get("host", "")) or ""
    return is_loopback(host) or host.endswith(".localhost")


def set_session_cookie(request: Request, response: Response, token: str) -> None:
    """Give the browser its UI session, for the UI's paths only: http-only, same-site, and
    Secure wherever the browser allows it."""
    response.set_cookie(
        COOKIE,
        token,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )


def clear_session_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        COOKIE,
        path=PREFIX,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )
