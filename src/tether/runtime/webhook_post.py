"""Sending one webhook: HTTP(S) to the very address the policy checked (imported when a
delivery is attempted, so that ``import tether`` does not load http.client and ssl)."""

from __future__ import annotations

import http.client
import socket
import ssl

from tether.runtime.webhooks import TIMEOUT, Target, WebhookPolicy


class _PinnedHTTP(http.client.HTTPConnection):
    """HTTP to the address checked, with the URL's host in the Host header."""

    def __init__(self, target: Target) -> None:
        super().__init__(target.host, target.port, timeout=TIMEOUT)
        self._address = target.address

    def connect(self) -> None:
        self.sock = socket.create_connection((str(self._address), self.port), self.timeout)


class _PinnedHTTPS(http.client.HTTPSConnection):
    """HTTPS to the address checked; the certificate is checked against the URL's host."""

    def __init__(self, target: Target) -> None:
        super().__init__(target.host, target.port, timeout=TIMEOUT)
        self._address = target.address
        self._tls = ssl.create_default_context()

    def connect(self) -> None:
        raw = socket.create_connection((str(self._address), self.port), self.timeout)
        self.sock = self._tls.wrap_socket(raw, server_hostname=self.host)


def post(policy: WebhookPolicy, url: str, body: bytes, headers: dict[str, str]) -> int:
    """POST body to url (checked again, connected to the address checked); the status code.
    OSError when no answer came (an HTTP protocol error as a ConnectionError)."""
    target = policy.check(url)
    connection = _PinnedHTTPS(target) if target.scheme == "https" else _PinnedHTTP(target)
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)
        return response.status
    except http.client.HTTPException as exc:
        raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        connection.close()
