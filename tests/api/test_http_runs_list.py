"""GET /v1/runs: the caller's runs across sessions, newest first, filtered by status, agent,
time and text, paginated by cursor; the same through tether.connect; bad filters are problems."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

import tether
from tests.api.httpkit import Server, new_run, new_session, wait_run


def _ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [r["id"] for r in answer.json()["data"]]


def _three_runs(alice: httpx.Client, token: str) -> list[dict[str, Any]]:
    """Run 1 completed and Run 2 failed (saying "it broke" and token: other tests share the
    server) in one session, Run 1 of another completed: oldest first."""
    first, second = new_session(alice)["id"], new_session(alice)["id"]
    made = [
        new_run(alice, first, goal=f"{token} greet"),
        new_run(
            alice,
            first,
            goal=f"{token} break",
            input={"fail": f"it broke {token}"},
            if_busy="enqueue",
        ),
        new_run(alice, second, goal=f"{token} other"),
    ]
    return [wait_run(alice, r["id"]) for r in made]


def test_runs_of_every_session_newest_first_with_filters(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    token = uuid.uuid4().hex
    greet, broke, other = _three_runs(alice, token)
    assert (broke["status"], broke["error"]["message"]) == ("failed", f"it broke {token}")
    mine = {"q": token}
    listed = alice.get("/v1/runs", params=mine)
    assert _ids(listed) == [other["id"], broke["id"], greet["id"]]
    assert all(r.get("context") is None for r in listed.json()["data"])  # lists stay small
    assert _ids(alice.get("/v1/runs", params={**mine, "status": "failed"})) == [broke["id"]]
    assert _ids(alice.get("/v1/runs", params={"q": f"it broke {token}"})) == [broke["id"]]
    assert _ids(alice.get("/v1/runs", params={**mine, "agent": "coder"})) == []
    assert _ids(alice.get("/v1/runs", params={**mine, "agent": "echo"})) == [
        other["id"],
        broke["id"],
        greet["id"],
    ]
    assert _ids(alice.get("/v1/runs", params={**mine, "since": broke["created_at"]})) == [
        other["id"],
        broke["id"],
    ]
    assert _ids(alice.get("/v1/runs", params={**mine, "until": broke["created_at"]})) == [
        greet["id"]
    ]
    assert _ids(bob.get("/v1/runs", params=mine)) == []  # another owner's runs are not seen


def test_pages_follow_the_cursor_without_gaps_or_repeats(alice: httpx.Client) -> None:
    token = uuid.uuid4().hex
    made = _three_runs(alice, token)
    first = alice.get("/v1/runs", params={"q": token, "limit": 2}).json()
    assert first["next_cursor"] is not None
    rest = alice.get("/v1/runs", params={"q": token, "limit": 2, "cursor": first["next_cursor"]})
    seen = [r["id"] for r in first["data"]] + _ids(rest)
    assert seen == [r["id"] for r in reversed(made)]
    assert rest.json()["next_cursor"] is None


def test_bad_filters_are_problems(alice: httpx.Client) -> None:
    for params, status, code in (
        ({"status": "lost"}, 422, "validation_error"),
        ({"since": "2026-01-01T00:00:00"}, 422, "validation_error"),  # no time zone
        ({"cursor": "not-a-cursor"}, 422, "validation_error"),
        ({"limit": 0}, 422, "validation_error"),
    ):
        answer = alice.get("/v1/runs", params=params)
        assert answer.status_code == status, (params, answer.text)
        assert answer.headers["content-type"].startswith("application/problem+json")
        assert answer.json()["code"] == code, answer.json()


def test_the_client_lists_runs_across_sessions(server: Server, alice: httpx.Client) -> None:
    token = uuid.uuid4().hex
    greet, broke, other = _three_runs(alice, token)
    with tether.connect(server.url, api_key=server.keys["alice"]) as tt:
        assert [r.id for r in tt.runs.list(query=token)] == [other["id"], broke["id"], greet["id"]]
        failed = tt.runs.list(query=token, status="failed")
        assert [r.id for r in failed] == [broke["id"]]
        assert [r.id for r in tt.runs.list(query=token, limit=1)] == [other["id"]]
