"""The seed scenario over HTTP: three runs in one session, each with its own lifecycle; only the
user ends the session."""

from __future__ import annotations

import httpx

from tests.api.httpkit import new_run, new_session, wait_run


def test_three_runs_keep_their_own_lifecycle_and_the_session_stays_active(
    alice: httpx.Client,
) -> None:
    session = new_session(
        alice, title="Keep helping me with this project", project={"workspace": "./calc"}
    )
    assert session["status"] == "active"
    assert session["expires_at"] is not None
    sid = session["id"]
    assert alice.put(f"/v1/sessions/{sid}/memory/python", json={"value": "3.9"}).status_code == 200

    analyse = new_run(alice, sid, goal="First find out why the tests fail", input={"steps": 2})
    assert (analyse["status"], analyse["seq"]) == ("ready", 1)
    analyse = wait_run(alice, analyse["id"])
    fix = wait_run(alice, new_run(alice, sid, goal="Fix it", input={"fail": True})["id"])
    verify = wait_run(alice, new_run(alice, sid, goal="Run the full suite again")["id"])

    assert [r["status"] for r in (analyse, fix, verify)] == ["completed", "failed", "completed"]
    assert analyse["error"] is None and verify["error"] is None
    assert fix["error"]["type"] == "ValueError" and fix["error"]["message"] == "boom"
    assert analyse["output"] == {"text": "echo: First find out why the tests fail"}
    for run in (analyse, fix, verify):
        assert run["session_id"] == sid
        assert run["started_at"] <= run["ended_at"]
    # Each run has its own times: run 2 started after run 1 ended, and so on.
    assert analyse["ended_at"] <= fix["started_at"] <= fix["ended_at"] <= verify["started_at"]

    steps = alice.get(f"/v1/runs/{analyse['id']}/steps").json()
    assert steps["next_cursor"] is None
    assert [s["kind"] for s in steps["data"]] == ["note", "note", "message"]
    assert [s["seq"] for s in steps["data"]] == [1, 2, 3]
    assert alice.get(f"/v1/runs/{fix['id']}/steps").json()["data"] == []

    listed = alice.get(f"/v1/sessions/{sid}/runs").json()
    assert [(r["seq"], r["status"]) for r in listed["data"]] == [
        (1, "completed"),
        (2, "failed"),
        (3, "completed"),
    ]
    assert listed["next_cursor"] is None
    failed = alice.get(f"/v1/sessions/{sid}/runs", params={"status": "failed"}).json()["data"]
    assert [r["id"] for r in failed] == [fix["id"]]

    # No run outcome changed the session.
    session = alice.get(f"/v1/sessions/{sid}").json()
    assert (session["status"], session["run_count"]) == ("active", 3)
    messages = alice.get(f"/v1/sessions/{sid}/messages").json()["data"]
    assert [m["content"] for m in messages] == [
        "echo: First find out why the tests fail",
        "echo: Run the full suite again",
    ]
    context = alice.get(f"/v1/sessions/{sid}/context", params={"budget_tokens": 2000}).json()
    assert context["session_id"] == sid
    assert len(context["earlier_runs"]) == 3

    # Only the user ends the session; then it is read-only, and still readable.
    closed = alice.post(f"/v1/sessions/{sid}/close")
    assert closed.status_code == 200 and closed.json()["status"] == "closed"
    assert alice.post(f"/v1/sessions/{sid}/close").json()["status"] == "closed"  # idempotent
    refused = alice.post(f"/v1/sessions/{sid}/runs", json={"goal": "a summary, please"})
    assert refused.status_code == 409
    assert refused.headers["content-type"] == "application/problem+json"
    problem = refused.json()
    assert problem["code"] == "session_closed"
    assert problem["status"] == 409
    assert {"type", "title", "detail"} <= problem.keys()
    message = alice.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hi"})
    assert message.status_code == 409 and message.json()["code"] == "session_closed"
    assert len(alice.get(f"/v1/sessions/{sid}/runs").json()["data"]) == 3


def test_session_lifecycle_routes(alice: httpx.Client) -> None:
    created = alice.post("/v1/sessions")
    assert created.status_code == 201
    sid = created.json()["id"]
    assert created.headers["location"] == f"/v1/sessions/{sid}"
    assert created.json()["ttl_seconds"] == 30 * 24 * 3600

    forever = new_session(alice, ttl_seconds=None, title="forever")
    assert forever["ttl_seconds"] is None and forever["expires_at"] is None

    patched = alice.patch(f"/v1/sessions/{sid}", json={"title": "renamed", "metadata": {"k": 1}})
    assert patched.status_code == 200
    assert (patched.json()["title"], patched.json()["metadata"]) == ("renamed", {"k": 1})
    assert alice.get(f"/v1/sessions/{sid}").json()["title"] == "renamed"

    page = alice.get("/v1/sessions", params={"limit": 1}).json()
    assert len(page["data"]) == 1 and page["next_cursor"]
    rest = alice.get("/v1/sessions", params={"limit": 1000, "cursor": page["next_cursor"]}).json()
    ids = [s["id"] for s in page["data"] + rest["data"]]
    assert len(ids) == len(set(ids)) and {sid, forever["id"]} <= set(ids)

    said = alice.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hello"})
    assert said.status_code == 201 and said.json()["seq"] == 1

    assert alice.delete(f"/v1/sessions/{sid}").status_code == 204
    gone = alice.get(f"/v1/sessions/{sid}")
    assert gone.status_code == 404 and gone.json()["code"] == "not_found"


def test_busy_session_and_finished_runs_answer_409(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    waiting = new_run(alice, sid, input={"wait": "ok?"})
    assert wait_run(alice, waiting["id"])["status"] == "waiting"
    busy = alice.post(f"/v1/sessions/{sid}/runs", json={"goal": "another"})
    assert busy.status_code == 409 and busy.json()["code"] == "session_busy"
    assert busy.json()["active_run_id"] == waiting["id"]

    queued = new_run(alice, sid, goal="queued", if_busy="enqueue")
    resumed = alice.post(f"/v1/runs/{waiting['id']}/resume", json={"input": "yes"})
    assert resumed.status_code == 200
    assert wait_run(alice, waiting["id"])["output"] == {"text": "echo: echo this yes"}
    assert wait_run(alice, queued["id"])["status"] == "completed"

    again = alice.post(f"/v1/runs/{queued['id']}/cancel")
    assert again.status_code == 409 and again.json()["code"] == "invalid_transition"

    sleeper = new_run(alice, sid, input={"sleep": 30})
    cancelled = alice.post(f"/v1/runs/{sleeper['id']}/cancel", json={"reason": "changed my mind"})
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    assert cancelled.json()["error"]["message"] == "changed my mind"


def test_memory_scopes_and_tool_history(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    put = alice.put(f"/v1/sessions/{sid}/memory/the/lang", json={"value": {"name": "python"}})
    assert put.status_code == 200 and put.json()["key"] == "the/lang"
    got = alice.get(f"/v1/sessions/{sid}/memory/the/lang").json()
    assert got["value"] == {"name": "python"} and got["scope"] == "session"
    assert [i["key"] for i in alice.get(f"/v1/sessions/{sid}/memory").json()["data"]] == [
        "the/lang"
    ]
    assert alice.delete(f"/v1/sessions/{sid}/memory/the/lang").status_code == 204
    assert alice.get(f"/v1/sessions/{sid}/memory/the/lang").status_code == 404

    assert alice.put("/v1/users/me/memory/tz", json={"value": "UTC"}).status_code == 200
    assert alice.get("/v1/users/me/memory/tz").json()["value"] == "UTC"
    assert "tz" in [i["key"] for i in alice.get("/v1/users/me/memory").json()["data"]]
    assert alice.delete("/v1/users/me/memory/tz").status_code == 204

    run = wait_run(alice, new_run(alice, sid)["id"])
    assert alice.get(f"/v1/runs/{run['id']}/memory").json() == {"data": [], "next_cursor": None}
    missing = alice.post(f"/v1/runs/{run['id']}/memory/nothing/promote")
    assert missing.status_code == 404
    tools = alice.get(f"/v1/sessions/{sid}/tool-calls", params={"tool": "run_command"}).json()
    assert tools == {"data": [], "next_cursor": None}
    assert alice.get(f"/v1/runs/{run['id']}/tool-calls").json()["data"] == []
