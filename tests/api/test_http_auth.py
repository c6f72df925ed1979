"""API keys: made by `tether keys create`, required on every route but /healthz, refused when
missing or wrong; a public bind refuses to start without keys."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest

from tests.api.httpkit import Server, new_session
from tests.serving import cli

KEY = re.compile(r"tk_[A-Za-z0-9_-]{43}")


@pytest.mark.slow
def test_keys_create_prints_the_key_alone_and_stores_only_its_hash(tmp_path: Path) -> None:
    db = tmp_path / "keys.db"
    made = cli("keys", "create", "--owner", "carol", "--db", db)
    assert made.returncode == 0, made.stderr
    assert KEY.fullmatch(made.stdout.rstrip("\n")) and made.stdout.count("\n") == 1
    assert made.stdout.strip().encode() not in db.read_bytes()
    listed = cli("keys", "list", "--db", db, "--json")
    assert '"owner": "carol"' in listed.stdout


def test_every_route_but_healthz_needs_a_valid_key(server: Server, alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    with server.client() as anonymous:
        assert anonymous.get("/healthz").json()["status"] == "ok"
        assert anonymous.get("/openapi.json").status_code == 200
        for headers in ({}, {"Authorization": "Bearer tk_wrong"}, {"Authorization": "Basic eA=="}):
            for method, path in (
                ("GET", "/v1/sessions"),
                ("POST", "/v1/sessions"),
                ("GET", f"/v1/sessions/{sid}"),
                ("GET", f"/v1/sessions/{sid}/events"),
                ("GET", "/v1/users/me/memory"),
            ):
                answer = anonymous.request(method, path, headers=headers)
                assert answer.status_code == 401, (method, path, headers)
                assert answer.headers["www-authenticate"].startswith("Bearer")
                assert answer.headers["content-type"] == "application/problem+json"
                assert answer.json()["code"] == "unauthorized"
        # Even a malformed body is refused for want of a key first.
        bad = anonymous.post(
            "/v1/sessions", content=b"{", headers={"content-type": "application/json"}
        )
        assert bad.status_code == 401


@pytest.mark.slow
def test_a_revoked_key_stops_working(server: Server) -> None:
    made = cli("keys", "create", "--owner", "dave", "--name", "laptop", "--db", server.db)
    key = made.stdout.strip()
    with server.client(key=key) as dave:
        assert dave.get("/v1/sessions").status_code == 200
        listed = cli("keys", "list", "--db", server.db, "--owner", "dave", "--json")
        key_id = listed.stdout.split('"id": "')[1].split('"')[0]
        assert cli("keys", "revoke", key_id, "--db", server.db).returncode == 0
        assert dave.get("/v1/sessions").status_code == 401


@pytest.mark.slow
def test_a_public_bind_refuses_to_start_without_keys(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    refused = cli("serve", "--host", "0.0.0.0", "--port", "0", "--db", db, timeout=30)
    assert refused.returncode != 0
    assert refused.stdout == ""
    lines = refused.stderr.strip().splitlines()
    assert len(lines) == 1 and "without API keys" in lines[0], refused.stderr
    assert "Traceback" not in refused.stderr

    from_env = cli("serve", "--db", db, env={"TETHER_HOST": "0.0.0.0", "TETHER_PORT": "0"})
    assert from_env.returncode != 0 and "without API keys" in from_env.stderr

    no_auth = cli("serve", "--host", "0.0.0.0", "--port", "0", "--no-auth", "--db", db)
    assert no_auth.returncode != 0 and "loopback" in no_auth.stderr
    env_no_auth = cli("serve", "--db", db, env={"TETHER_NO_AUTH": "1", "TETHER_HOST": "10.1.2.3"})
    assert env_no_auth.returncode != 0 and "loopback" in env_no_auth.stderr
