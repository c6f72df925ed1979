"""/v1/schedules: create, list by cursor, read, pause and resume, delete; bad input is a
problem naming the field; another owner sees nothing; the same through tether.connect."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx

import tether
from tests.api.httpkit import Server, new_session


def _problem(answer: httpx.Response, status: int, text: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert text in answer.json()["detail"], answer.json()


def test_schedules_over_http(alice: httpx.Client, bob: httpx.Client) -> None:
    session = new_session(alice)
    end = (datetime.now(UTC) + timedelta(days=30)).isoformat()
    made = alice.post(
        "/v1/schedules",
        json={
            "cron": "0 9 * * mon-fri",
            "timezone": "Europe/Paris",
            "session_id": session["id"],
            "input": {"text": "standup"},
            "end_at": end,
        },
    )
    assert made.status_code == 201, made.text
    schedule = made.json()
    assert made.headers["location"] == f"/v1/schedules/{schedule['id']}"
    assert schedule["enabled"] and schedule["next_run_at"] is not None
    assert schedule["session_id"] == session["id"] and schedule["agent"] == "echo"
    assert alice.get(f"/v1/schedules/{schedule['id']}").json() == schedule
    second = alice.post("/v1/schedules", json={"cron": "0 0 * * *"})
    assert second.status_code == 201 and second.json()["session_id"] is None

    page = alice.get("/v1/schedules", params={"limit": 1}).json()
    assert len(page["data"]) == 1 and page["next_cursor"]
    rest = alice.get("/v1/schedules", params={"limit": 1, "cursor": page["next_cursor"]}).json()
    assert [s["id"] for s in page["data"] + rest["data"]][-1] is not None
    mine = alice.get("/v1/schedules", params={"session_id": session["id"]}).json()["data"]
    assert [s["id"] for s in mine] == [schedule["id"]]

    paused = alice.patch(f"/v1/schedules/{schedule['id']}", json={"enabled": False})
    assert paused.status_code == 200 and paused.json()["enabled"] is False
    listed = alice.get("/v1/schedules", params={"enabled": "false"}).json()["data"]
    assert schedule["id"] in [s["id"] for s in listed]
    resumed = alice.patch(f"/v1/schedules/{schedule['id']}", json={"enabled": True}).json()
    assert resumed["enabled"] is True

    assert bob.get(f"/v1/schedules/{schedule['id']}").status_code == 404
    assert bob.patch(f"/v1/schedules/{schedule['id']}", json={"enabled": False}).status_code == 404
    assert bob.delete(f"/v1/schedules/{schedule['id']}").status_code == 404
    assert alice.delete(f"/v1/schedules/{schedule['id']}").status_code == 204
    assert alice.get(f"/v1/schedules/{schedule['id']}").status_code == 404


def test_bad_schedules_are_problems(alice: httpx.Client) -> None:
    _problem(alice.post("/v1/schedules", json={"cron": "61 * * * *"}), 422, "minute")
    _problem(alice.post("/v1/schedules", json={"cron": "* * *"}), 422, "5 fields")
    _problem(
        alice.post("/v1/schedules", json={"cron": "* * * * *", "timezone": "Nowhere/Town"}),
        422,
        "timezone",
    )
    _problem(
        alice.post("/v1/schedules", json={"cron": "* * * * *", "agent": "nobody"}), 404, "nobody"
    )
    _problem(alice.post("/v1/schedules", json={"cron": "0 0 31 2 *"}), 422, "never fires")
    _problem(
        alice.post("/v1/schedules", json={"cron": "* * * * *", "end_at": "2020-01-01T00:00"}),
        422,
        "time zone",
    )
    missing = alice.post(
        "/v1/schedules",
        json={"cron": "* * * * *", "session_id": "0190d6a0-0000-7000-8000-000000000000"},
    )
    assert missing.status_code == 404
    assert alice.post("/v1/schedules", json={"cron": 5}).status_code == 422
    made = alice.post("/v1/schedules", json={"cron": "* * * * *"}).json()
    _problem(alice.patch(f"/v1/schedules/{made['id']}", json={"cron": None}), 422, "cron")
    _problem(alice.patch(f"/v1/schedules/{made['id']}", json={"enabled": None}), 422, "enabled")
    assert alice.get("/v1/schedules", params={"cursor": "nope"}).status_code == 422


def test_schedules_through_connect(server: Server) -> None:
    with tether.connect(server.url, api_key=server.keys["alice"]) as tt:
        made = tt.schedules.create("30 6 * * *", goal="morning", timezone="America/New_York")
        assert isinstance(made, tether.Schedule) and made.goal == "morning"
        assert tt.schedules.get(made.id) == made
        paused = tt.schedules.update(made.id, enabled=False, end_at=None)
        assert not paused.enabled
        assert made.id in [s.id for s in tt.schedules.list(enabled=False)]
        tt.schedules.delete(made.id)
        assert made.id not in [s.id for s in tt.schedules.list()]
