"""The UI's cookie, CSRF protection and response headers.

The API key lives in an http-only, SameSite=Strict cookie scoped to ``/ui``; it is marked Secure
when the request came over https (over plain http on loopback a browser would never send a Secure
cookie back). Every form POST must come from this origin (``Origin`` check) and carry a token
derived from the credential (HMAC), which a page of another site can neither read nor compute.
"""

from __future__ import annotations

import hashlib
import hmac
import ipaddress
import secrets
from urllib.parse import urlsplit

from starlette.requests import Request
from starlette.responses import Response

from tether.api.auth import UI_COOKIE, UI_PREFIX, ui_cookie

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
#: Signs CSRF tokens when no key is in play (--no-auth); new on every start.
_PROCESS_SECRET = secrets.token_hex(32)


class CsrfRejected(Exception):
    """A form POST from another origin, or without this session's token."""


def csrf_token(request: Request) -> str:
    """The token every form of this browser session carries."""
    secret = ui_cookie(request.scope) or _header_key(request) or _PROCESS_SECRET
    return hmac.new(secret.encode(), b"tether-ui-csrf", hashlib.sha256).hexdigest()


def check_origin(request: Request) -> None:
    """Refuse a POST whose Origin (or, lacking it, Referer) is another site."""
    source = request.headers.get("origin") or request.headers.get("referer")
    if source is None:
        return
    parts = urlsplit(source)
    if f"{parts.scheme}://{parts.netloc}" != f"{request.url.scheme}://{request.url.netloc}":
        raise CsrfRejected(f"the form came from {source}, not from this server")


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
    host = (request.url.hostname or "").strip("[]")
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def set_key_cookie(request: Request, response: Response, key: str) -> None:
    """Keep the API key in the browser, for the UI's paths only: http-only, same-site, and
    Secure wherever the browser allows it."""
    response.set_cookie(
        UI_COOKIE,
        key,
        path=UI_PREFIX,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )


def clear_key_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        UI_COOKIE,
        path=UI_PREFIX,
        httponly=True,
        samesite="strict",
        secure=_secure(request),
    )


def _header_key(request: Request) -> str | None:
    scheme, _, secret = request.headers.get("authorization", "").partition(" ")
    return secret.strip() or None if scheme.lower() == "bearer" else None
