"""Responses on a kept-alive connection are not held back by Nagle's algorithm: every
connection the server accepts has TCP_NODELAY set (without it each response waits for the
client's delayed ACK, about 40 ms)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from tether.api.server import _listen


@pytest.mark.parametrize("host", ["127.0.0.1", "::1"])
def test_connections_accepted_on_the_server_socket_have_tcp_nodelay(host: str) -> None:
    if host == "::1" and not socket.has_ipv6:
        pytest.skip("no IPv6 on this machine")

    async def accepted_nodelay() -> int:
        listening = _listen(host, 0)
        port = listening.getsockname()[1]
        accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

        class Probe(asyncio.Protocol):
            def connection_made(self, transport: asyncio.BaseTransport) -> None:
                sock = transport.get_extra_info("socket")
                accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
                transport.close()

        # As uvicorn serves a socket it is handed: loop.create_server(sock=...).
        server = await asyncio.get_running_loop().create_server(Probe, sock=listening)
        try:
            _, writer = await asyncio.open_connection(host, port)
            try:
                return await asyncio.wait_for(accepted, 10)
            finally:
                writer.close()
        finally:
            server.close()
            await server.wait_closed()

    try:
        assert asyncio.run(accepted_nodelay()) != 0
    except OSError as exc:  # no IPv6 loopback configured
        if host == "::1":
            pytest.skip(f"no IPv6 loopback: {exc}")
        raise
