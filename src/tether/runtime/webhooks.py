"""Webhooks: where a run's webhook may point, how its body is signed, and the delivery of the
ended runs' webhooks, with retries.

A URL must be http or https, and every address its host resolves to must be public (never
loopback, private, link-local, multicast, reserved or unspecified; an IPv4-mapped IPv6 address
counts as its IPv4 address) unless the operator allows it (``allow``: host names or CIDRs). It
is checked when the run is created and again at each attempt, and the attempt connects to the
very address it checked (a host cannot resolve to another address in between). Redirects are
not followed.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import ipaddress
import json
import logging
import secrets
import socket
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from tether.core.clock import Clock
from tether.core.errors import UsageError
from tether.core.webhook import WebhookDelivery
from tether.runtime.run_shapes import shaped
from tether.store.base import Store

log = logging.getLogger("tether.webhooks")

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
#: Attempts before a delivery fails for good.
MAX_ATTEMPTS = 6
#: Seconds before the first retry; doubled after each failed attempt, up to MAX_BACKOFF.
FIRST_BACKOFF = 2.0
MAX_BACKOFF = 300.0
#: An attempt's lease: a worker that dies mid-attempt leaves it to be tried again after this.
ATTEMPT_LEASE = 120.0
#: Connect and read time-out of an attempt, in seconds.
TIMEOUT = 10.0
#: Seconds an attempt may last in all (a receiver answering a byte at a time is cut off).
DEADLINE = 30.0
MAX_URL = 2048
SIGNATURE_HEADER = "X-Tether-Signature"


@dataclass(frozen=True, slots=True)
class Target:
    """A checked webhook URL: where to connect, and what to ask for."""

    scheme: str
    host: str
    port: int
    path: str
    address: IPAddress


@dataclass(frozen=True, slots=True)
class WebhookPolicy:
    """Which webhook URLs are allowed: public addresses, plus the hosts and networks in allow."""

    allow: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for entry in self.allow:
            if not isinstance(entry, str) or not entry.strip():
                raise UsageError("a webhook allow entry must be a host name or a CIDR")

    def _allowed(self, host: str, address: IPAddress) -> bool:
        if _public(address):
            return True
        for entry in self.allow:
            network = _network(entry)
            if network is not None:
                if _plain(address) in network or address in network:
                    return True
            elif entry.strip().lower().rstrip(".") == host:
                return True
        return False

    def check(self, url: str) -> Target:
        """The target of url, resolved and checked; UsageError naming the webhook otherwise."""
        scheme, host, port, path = _parse(url)
        try:
            infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (socket.gaierror, UnicodeError):
            raise UsageError(f"webhook host {host!r} does not resolve") from None
        addresses = list(dict.fromkeys(_address(str(info[4][0])) for info in infos))
        refused = [a for a in addresses if not self._allowed(host, a)]
        if refused or not addresses:
            raise UsageError(
                f"webhook {url!r} is refused: {host} resolves to {refused[0] if refused else '—'}, "
                "which is not a public address (an operator may allow it: "
                "tether serve --webhook-allow)"
            )
        return Target(scheme, host, port, path, addresses[0])


def _parse(url: str) -> tuple[str, str, int, str]:
    if not isinstance(url, str) or not url or len(url) > MAX_URL:
        raise UsageError(f"webhook must be an http or https URL of at most {MAX_URL} characters")
    if not url.isprintable() or any(c.isspace() for c in url):
        raise UsageError(f"webhook {url!r} holds spaces or control characters: percent-encode them")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise UsageError(f"webhook {url!r} is not a valid URL") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"webhook {url!r} must be an http or https URL")
    if parts.username is not None or parts.password is not None:
        raise UsageError("webhook URLs carry no credentials: verify the signature instead")
    path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    host = parts.hostname.lower().rstrip(".")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80), path


def _address(text: str) -> IPAddress:
    return ipaddress.ip_address(text.split("%", 1)[0])


def _plain(address: IPAddress) -> IPAddress:
    """An IPv4-mapped or 6to4 (2002::/16) IPv6 address as the IPv4 address it carries; any
    other as it is."""
    if isinstance(address, ipaddress.IPv6Address):
        return address.ipv4_mapped or address.sixtofour or address
    return address


def _public(address: IPAddress) -> bool:
    plain = _plain(address)
    return plain.is_global and not (
        plain.is_multicast
        or plain.is_private
        or plain.is_loopback
        or plain.is_link_local
        or plain.is_reserved
        or plain.is_unspecified
    )


def _network(entry: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    try:
        return ipaddress.ip_network(entry.strip(), strict=False)
    except ValueError:
        return None


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Tether-Signature value: ``t=<unix>,v1=<hex HMAC-SHA256(secret, "<t>." + body)>``."""
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def new_secret() -> str:
    return "whsec_" + secrets.token_urlsafe(32)


def backoff(attempts: int) -> float:
    """Seconds to wait after the given number of failed attempts."""
    return float(min(FIRST_BACKOFF * 2.0 ** (attempts - 1), MAX_BACKOFF))


async def deliver_due_webhooks(
    store: Store, *, clock: Clock, policy: WebhookPolicy, limit: int = 20
) -> int:
    """Make one attempt at each delivery due (an ended run's, whose retry time has come); how
    many attempts were made."""
    made = 0
    for due in await store.due_webhook_deliveries(now=clock.now(), limit=limit):
        now = clock.now()
        claimed = await store.claim_webhook_delivery(
            due, lease_until=now + timedelta(seconds=ATTEMPT_LEASE), now=now
        )
        if claimed is not None:
            await _attempt(store, claimed, clock, policy)
            made += 1
    return made


async def _attempt(
    store: Store, delivery: WebhookDelivery, clock: Clock, policy: WebhookPolicy
) -> None:
    run = await store.get_run(delivery.run_id, with_context=False)
    status_code: int | None = None
    error: str | None = None
    if run is None:
        error = "the run was deleted"
    else:
        body = json.dumps(shaped(run, delivery.shape), separators=(",", ":")).encode()
        secret = await store.webhook_secret(delivery.owner, candidate=new_secret(), now=clock.now())
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "tether-webhook",
            SIGNATURE_HEADER: signature(secret, int(clock.now().timestamp()), body),
        }
        from tether.runtime.webhook_post import post  # http.client and ssl: when needed

        try:
            status_code = await asyncio.to_thread(post, policy, delivery.url, body, headers)
        except (OSError, UsageError) as exc:
            error = str(exc) or type(exc).__name__
    now = clock.now()
    outcome, retry_at = _outcome(delivery, status_code, run is None, now)
    if status_code is not None and outcome != "delivered":
        error = f"answered {status_code}"
    if not await store.end_webhook_attempt(
        delivery,
        outcome=outcome,
        next_attempt_at=retry_at,
        status_code=status_code,
        error=error,
        now=now,
    ):
        log.warning("webhook attempt of run %s was taken over", delivery.run_id)


def _outcome(
    delivery: WebhookDelivery, status_code: int | None, gone: bool, now: datetime
) -> tuple[str, datetime | None]:
    if status_code is not None and 200 <= status_code < 300:
        return "delivered", None
    if gone or delivery.attempts >= MAX_ATTEMPTS:
        return "failed", None
    return "retrying", now + timedelta(seconds=backoff(delivery.attempts))
