"""SSE streams of the event log: wire format, exact resume with Last-Event-ID, heartbeats, the
end of a run's stream."""

from __future__ import annotations

import httpx

from tests.api.httpkit import events_of, new_run, new_session, read_sse, wait_run

TERMINAL = {"run.completed", "run.failed", "run.timed_out", "run.cancelled"}


def test_run_stream_carries_id_event_and_data_and_ends_after_the_terminal_event(
    alice: httpx.Client,
) -> None:
    sid = new_session(alice)["id"]
    run = new_run(alice, sid, input={"steps": 2})
    with alice.stream("GET", f"/v1/runs/{run['id']}/events") as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        frames, _ = read_sse(response)  # reads until the server ends the stream
    assert [f.event for f in frames] == [
        "run.created",
        "run.started",
        "step.completed",
        "step.completed",
        "message.added",
        "step.completed",
        "run.completed",
    ]
    logged = events_of(alice, f"/v1/runs/{run['id']}/events")
    assert [f.data for f in frames] == logged
    for frame in frames:
        assert frame.data["id"] == frame.id and frame.data["type"] == frame.event
        assert frame.data["run_id"] == run["id"]
    assert frames[-1].data["data"]["run"]["status"] == "completed"


def test_reconnecting_with_last_event_id_gets_every_later_event_exactly_once(
    alice: httpx.Client,
) -> None:
    sid = new_session(alice)["id"]
    run = new_run(alice, sid, input={"steps": 1, "wait": "continue?"})
    path = f"/v1/runs/{run['id']}/events"
    with alice.stream("GET", path) as response:
        first, _ = read_sse(response, until=lambda f: f.event == "run.waiting")
    # The connection is dropped mid-run; the run goes on without the client.
    assert wait_run(alice, run["id"])["status"] == "waiting"
    assert alice.post(f"/v1/runs/{run['id']}/resume", json={"input": "yes"}).status_code == 200
    assert wait_run(alice, run["id"])["status"] == "completed"

    with alice.stream("GET", path, headers={"Last-Event-ID": str(first[-1].id)}) as response:
        rest, _ = read_sse(response)

    seen = first + rest
    assert [f.event for f in seen] == [
        "run.created",
        "run.started",
        "step.completed",
        "step.started",
        "run.waiting",
        "step.completed",
        "run.resumed",
        "message.added",
        "step.completed",
        "run.completed",
    ]
    ids = [f.id for f in seen]
    assert ids == sorted(set(ids))  # in order, no duplicate
    assert [f.data for f in seen] == events_of(alice, path)  # no gap

    # The `after` query parameter resumes the same way (for clients that cannot set headers).
    with alice.stream("GET", path, params={"after": first[-1].id}) as response:
        again, _ = read_sse(response)
    assert [f.id for f in again] == [f.id for f in rest]


def test_session_stream_sends_heartbeats_when_idle_and_resumes(alice: httpx.Client) -> None:
    session = new_session(alice)
    sid = session["id"]
    path = f"/v1/sessions/{sid}/events"
    with alice.stream("GET", path, params={"heartbeat": 0.2}) as response:
        frames, beats = read_sse(response, heartbeats=2)
    assert [f.event for f in frames] == ["session.created"] and beats == 2

    said = alice.post(f"/v1/sessions/{sid}/messages", json={"role": "user", "content": "hi"})
    assert said.status_code == 201
    headers = {"Last-Event-ID": str(frames[-1].id)}
    with alice.stream("GET", path, headers=headers, params={"heartbeat": 0.2}) as response:
        later, _ = read_sse(response, until=lambda f: f.event == "message.added")
    assert [f.event for f in later] == ["message.added"]
    assert later[0].data["data"]["message"]["content"] == "hi"


def test_stream_of_a_finished_run_from_its_end_is_empty(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    run = wait_run(alice, new_run(alice, sid)["id"])
    last = events_of(alice, f"/v1/runs/{run['id']}/events")[-1]
    assert last["type"] in TERMINAL
    headers = {"Last-Event-ID": str(last["id"])}
    with alice.stream("GET", f"/v1/runs/{run['id']}/events", headers=headers) as response:
        assert response.status_code == 200
        assert read_sse(response) == ([], 0)


def test_bad_last_event_id_is_a_validation_problem(alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    answer = alice.get(f"/v1/sessions/{sid}/events", headers={"Last-Event-ID": "soon"})
    assert answer.status_code == 422
    assert answer.json()["code"] == "validation_error"
    assert "Last-Event-ID" in answer.json()["detail"]
    missing = alice.get("/v1/runs/no-such-run/events")
    assert missing.status_code == 404 and missing.json()["code"] == "not_found"
