"""DNS rebinding, over real HTTP: a server answers only the hosts it knows (loopback names and
addresses, and those added with --allowed-host / TETHER_ALLOWED_HOSTS); anything else gets a 421
problem, and the UI accepts forms only from an allowed host's own origin."""

from __future__ import annotations

import asyncio
import re
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from starlette.types import Message, Receive, Scope, Send

from tests.api.httpkit import Server, start_server
from tests.serving import cli
from tether.api.hosts import CheckHost
from tether.core.hosts import AllowedHosts

PROBLEM = "application/problem+json"


def _port(server: Server) -> str:
    return server.url.rsplit(":", 1)[1]


@pytest.fixture(scope="module")
def named(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    """A server that also answers tether.example and every subdomain of corp.example."""
    running = start_server(
        tmp_path_factory.mktemp("hosts"),
        "--allowed-host",
        "tether.example",
        env={"TETHER_ALLOWED_HOSTS": "ignored.example"},  # the flag wins over the variable
    )
    yield running
    running.stop()


@pytest.mark.parametrize(
    "host", ["attacker.example", "attacker.example:{port}", "127.0.0.1.nip.io:{port}", "[::2]"]
)
def test_another_host_is_refused_before_anything_else(
    server: Server, alice: httpx.Client, host: str
) -> None:
    headers = {"Host": host.format(port=_port(server))}
    for answer in (
        alice.get("/healthz", headers=headers),
        alice.get("/v1/sessions", headers=headers),
        alice.post("/v1/sessions", json={}, headers={**headers, "Origin": f"http://{host}"}),
        alice.get("/ui/login", headers=headers),
        alice.get("/docs", headers=headers),
    ):
        assert answer.status_code == 421, answer.text
        assert answer.headers["content-type"] == PROBLEM
        assert answer.json()["code"] == "host_not_allowed"
        assert "--allowed-host" in answer.json()["detail"]
    assert alice.get("/v1/sessions").status_code == 200


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:{port}", "localhost:{port}", "LOCALHOST.:{port}", "[::1]:{port}", "127.9.8.7"],
)
def test_loopback_names_and_addresses_are_answered(
    server: Server, alice: httpx.Client, host: str
) -> None:
    headers = {"Host": host.format(port=_port(server))}
    assert alice.get("/healthz", headers=headers).status_code == 200
    assert alice.post("/v1/sessions", json={}, headers=headers).status_code == 201


def test_malformed_hosts_are_refused(server: Server) -> None:
    for host in ("[::1", "127.0.0.1:80:80", "::1", "a b", "127.0.0.1:http", "@127.0.0.1"):
        answer = _raw_get(server, f"Host: {host}\r\n")
        assert answer.startswith(b"HTTP/1.1 421") or answer.startswith(b"HTTP/1.1 400"), answer
    assert _raw_get(server, "").startswith(b"HTTP/1.1 4")  # none at all


def _raw_get(server: Server, host_line: str) -> bytes:
    address = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((address[0], int(address[1])), timeout=30) as sock:
        sock.sendall(f"GET /healthz HTTP/1.0\r\n{host_line}\r\n".encode())
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    return b"".join(chunks)


@pytest.mark.slow
def test_an_allowed_host_is_answered_and_others_still_refused(named: Server) -> None:
    port = _port(named)
    with named.client("alice") as alice:
        for host in ("tether.example", f"tether.example:{port}", f"127.0.0.1:{port}"):
            assert alice.get("/v1/sessions", headers={"Host": host}).status_code == 200
        for host in ("ignored.example", "sub.tether.example", "tether.example.evil"):
            assert alice.get("/healthz", headers={"Host": host}).status_code == 421


@pytest.mark.slow
def test_the_ui_takes_forms_only_from_an_allowed_hosts_own_origin(named: Server) -> None:
    port = _port(named)
    own = f"tether.example:{port}"
    with httpx.Client(base_url=named.url, headers={"Host": own}) as browser:
        login = browser.post(
            "/ui/login",
            data={"key": named.keys["alice"], "next": "/ui"},
            headers={"Origin": f"http://{own}"},
        )
        assert login.status_code == 303, login.text
        browser.headers["Cookie"] = f"tether_session={login.cookies['tether_session']}"
        token = re.search(r'name="csrf" value="([0-9a-f]+)"', browser.get("/ui").text)
        assert token is not None
        form = {"csrf": token[1], "title": "made here"}
        for origin in (
            "http://evil.example",
            f"http://evil.example:{port}",
            f"http://localhost:{port}",  # allowed, but another origin than the page's
            f"https://{own}",
            f"http://{own.replace(port, '1')}",
        ):
            refused = browser.post("/ui/sessions", data=form, headers={"Origin": origin})
            assert refused.status_code == 403, origin
        made = browser.post("/ui/sessions", data=form, headers={"Origin": f"http://{own}"})
        assert made.status_code == 303 and made.headers["location"].startswith("/ui/sessions/")


@pytest.mark.slow
def test_bad_allowed_hosts_are_refused_at_start(tmp_path: Path) -> None:
    db = tmp_path / "t.db"
    for args, env in (
        (["--allowed-host", "bad/host"], {}),
        ([], {"TETHER_ALLOWED_HOSTS": "good.example,bad/host"}),
        (["--no-auth", "--allowed-host", "*"], {}),
    ):
        refused = cli("serve", "--port", "0", "--db", db, *args, env=env, timeout=30)
        assert refused.returncode != 0, refused.stderr
        lines = refused.stderr.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("error:"), refused.stderr


def test_remembered_hosts_never_let_a_refused_one_through() -> None:
    """CheckHost remembers the Host headers it allowed (at most 64): the same header is answered
    again, a refused one is refused every time, and past the limit hosts are still checked."""
    passed: list[bytes] = []

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        passed.append(dict(scope["headers"])[b"host"])

    async def status(check: CheckHost, host: bytes) -> int:
        sent: list[Message] = []

        async def receive() -> Message:
            return {"type": "http.request", "body": b""}

        async def send(message: Message) -> None:
            sent.append(message)

        scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"host", host)]}
        await check(scope, receive, send)
        return int(sent[0]["status"]) if sent else 200

    async def scenario() -> None:
        check = CheckHost(app, hosts=AllowedHosts.of(["*.corp.example"]))
        many = [f"h{n}.corp.example".encode() for n in range(100)]
        for host in [b"127.0.0.1:8000", b"127.0.0.1:8000", *many, *many]:
            assert await status(check, host) == 200, host
        for host in [b"attacker.example", b"attacker.example", b"corp.example.evil"]:
            assert await status(check, host) == 421, host
        assert passed == [b"127.0.0.1:8000", b"127.0.0.1:8000", *many, *many]

    asyncio.run(scenario())


def test_hosts_sent_once_each_do_not_end_the_remembering() -> None:
    """Past 64 different allowed Host headers (any client can send them: 127.0.0.1:1, :2, …),
    a header the server keeps seeing is still parsed once, not at every request."""
    checked: list[str | None] = []

    class Counting(AllowedHosts):
        def permits(self, header: str | None) -> bool:
            checked.append(header)
            return AllowedHosts.permits(self, header)

    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        return None

    async def receive() -> Message:
        return {"type": "http.request", "body": b""}

    async def send(message: Message) -> None:
        raise AssertionError(f"refused: {message}")

    async def scenario() -> None:
        check = CheckHost(app, hosts=Counting())
        odd = [f"127.0.0.1:{port}".encode() for port in range(1, 101)]
        for host in [*odd, b"localhost:8000", b"localhost:8000", b"localhost:8000"]:
            scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"host", host)]}
            await check(scope, receive, send)

    asyncio.run(scenario())
    assert checked.count("localhost:8000") == 1
