"""AllowedHosts: the names a server answers for (its defence against DNS rebinding).

A web page on another site can make the browser send requests to a server on this machine by
pointing its own name at 127.0.0.1; the browser then sends ``Host: <that name>``. A server that
answers only the names it knows (loopback ones by default) refuses those requests.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass

from tether.core.errors import UsageError

#: Loopback names: a browser never asks DNS for them.
LOOPBACK_NAMES = frozenset({"localhost"})
#: Any host: turns the check off (for a server behind a proxy that checks names itself).
ANY = "*"
_LABELS = re.compile(r"^[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]*[a-z0-9_])?)*$")
_PORT = re.compile(r"^[0-9]{1,5}$")


def host_of(header: str) -> str | None:
    """The host of a ``Host`` header value (``name``, ``name:port``, ``[v6]:port``), lower-cased,
    without brackets, port or trailing dot; None when it is not a well-formed host."""
    value = header.strip().lower()
    if value.startswith("["):
        address, bracket, rest = value[1:].partition("]")
        if not bracket or (rest and not (rest.startswith(":") and _PORT.match(rest[1:]))):
            return None
        return address if _is_ip(address) and ":" in address else None
    name, colon, port = value.rpartition(":") if ":" in value else (value, "", "")
    if colon and not _PORT.match(port):
        return None
    name = name[:-1] if name.endswith(".") else name
    return name if name and (_LABELS.match(name) or _is_ip(name)) else None


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def is_loopback(host: str) -> bool:
    """True for a loopback name or address (127.0.0.0/8, ::1, localhost)."""
    if host in LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def pattern(text: str) -> str:
    """An allowed-host entry as given on the command line, normalised: a name, an address
    (IPv6 with or without brackets), ``*.example.com`` (its subdomains) or ``*`` (any)."""
    value = text.strip().lower()
    if value == ANY:
        return ANY
    wildcard = value.startswith("*.")
    name = value[2:] if wildcard else value
    if name.startswith("[") and name.endswith("]"):
        name = name[1:-1]
    name = name[:-1] if name.endswith(".") else name
    if not name or not (_LABELS.match(name) or (not wildcard and _is_ip(name))):
        raise UsageError(f"allowed host {text!r} must be a host name, an IP address, *.domain or *")
    return f"*.{name}" if wildcard else name


@dataclass(frozen=True, slots=True)
class AllowedHosts:
    """Loopback names and addresses, and the extra entries an operator adds."""

    #: Normalised entries (see ``pattern``).
    extra: tuple[str, ...] = ()

    @classmethod
    def of(cls, entries: list[str] | tuple[str, ...]) -> AllowedHosts:
        """From entries as given (each checked and normalised; UsageError names a bad one)."""
        return cls(tuple(dict.fromkeys(pattern(entry) for entry in entries)))

    def permits(self, header: str | None) -> bool:
        """Whether a request with this ``Host`` header (None: without one) is answered."""
        if ANY in self.extra:
            return True
        host = None if header is None else host_of(header)
        if host is None:
            return False
        if is_loopback(host) or host in self.extra:
            return True
        return any(e.startswith("*.") and host.endswith(e[1:]) for e in self.extra)
