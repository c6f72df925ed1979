"""Sending one webhook: HTTP(S) to the very address the policy checked (imported when a
delivery is attempted, so that ``import tether`` does not load http.client and ssl)."""

from __future__ import annotations

import contextlib
import http.client
import socket
import ssl
import threading

from tether.runtime.webhooks import DEADLINE, TIMEOUT, Target, WebhookPolicy


class _PinnedHTTP(http.client.HTTPConnection):
    """HTTP to the address checked, with the URL's host in the Host header; expire() cuts
    the connection (from another thread) however far the attempt has come."""

    def __init__(self, target: Target) -> None:
        super().__init__(target.host, target.port, timeout=TIMEOUT)
        self._address = target.address
        self._raw: socket.socket | None = None
        self.expired = threading.Event()

    def _open(self) -> socket.socket:
        self._raw = socket.create_connection((str(self._address), self.port), self.timeout)
        if self.expired.is_set():
            self.expire()
        return self._raw

    def connect(self) -> None:
        self.sock = self._open()

    def expire(self) -> None:
        self.expired.set()
        if self._raw is not None:
            with contextlib.suppress(OSError):
                self._raw.shutdown(socket.SHUT_RDWR)


class _PinnedHTTPS(_PinnedHTTP):
    """HTTPS to the address checked; the certificate is checked against the URL's host."""

    default_port = http.client.HTTPS_PORT  # no ":443" in the Host header

    def __init__(self, target: Target) -> None:
        super().__init__(target)
        self._tls = ssl.create_default_context()

    def connect(self) -> None:
        self.sock = self._tls.wrap_socket(self._open(), server_hostname=self.host)


def post(
    policy: WebhookPolicy,
    url: str,
    body: bytes,
    headers: dict[str, str],
    *,
    deadline: float = DEADLINE,
) -> int:
    """POST body to url (checked again, connected to the address checked); the status code.
    OSError when no answer came within deadline seconds (an HTTP protocol error as a
    ConnectionError)."""
    target = policy.check(url)
    connection = _PinnedHTTPS(target) if target.scheme == "https" else _PinnedHTTP(target)
    timer = threading.Timer(deadline, connection.expire)
    timer.start()
    try:
        connection.request("POST", target.path, body=body, headers=headers)
        response = connection.getresponse()
        response.read(64 * 1024)
        if connection.expired.is_set():  # cut off: what was read may be any part of it
            raise TimeoutError(f"the receiver took longer than {deadline:g} s")
        return response.status
    except (OSError, http.client.HTTPException) as exc:
        if connection.expired.is_set():
            raise TimeoutError(f"the receiver took longer than {deadline:g} s") from exc
        if isinstance(exc, OSError):
            raise
        raise ConnectionError(f"{type(exc).__name__}: {exc}") from exc
    finally:
        timer.cancel()
        connection.close()
