"""Runs executed by their caller, recorded over HTTP: held-runs, steps, heartbeat, suspend,
held-resume and finish, each with its errors, scoped to the owner and to the holder."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.waiting import eventually_sync

HOLDER = "Tether-Holder"


def _session(client: httpx.Client) -> str:
    answer = client.post("/v1/sessions", json={"title": "held"})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def _start(client: httpx.Client, session_id: str, **body: Any) -> dict[str, Any]:
    answer = client.post(
        f"/v1/sessions/{session_id}/held-runs",
        json={"goal": "Add two numbers", "agent": "openai-agents", **body},
    )
    assert answer.status_code == 201, answer.text
    held: dict[str, Any] = answer.json()
    return held


def _post(client: httpx.Client, path: str, holder: str | None, body: Any = None) -> httpx.Response:
    headers = {} if holder is None else {HOLDER: holder}
    return client.post(path, json=body, headers=headers)


def _problem(answer: httpx.Response, status: int, code: str) -> dict[str, Any]:
    assert (answer.status_code, answer.headers["content-type"]) == (
        status,
        "application/problem+json",
    ), answer.text
    problem: dict[str, Any] = answer.json()
    assert problem["code"] == code
    return problem


def test_a_held_run_records_its_steps_waits_resumes_and_completes(alice: httpx.Client) -> None:
    sid = _session(alice)
    held = _start(alice, sid, input={"text": "2 + 2?"}, metadata={"trace_id": "t1"})
    run, holder = held["run"], held["holder"]
    assert (run["status"], run["agent"], run["seq"]) == ("running", "openai-agents", 1)
    assert run["started_at"] is not None and held["lease_seconds"] > 0
    # the holder is a secret: what readers of the run see is not it
    assert holder not in alice.get(f"/v1/runs/{run['id']}").text
    rid = run["id"]
    usage = {"input_tokens": 12, "output_tokens": 3, "requests": 1}
    model = _post(
        alice,
        f"/v1/runs/{rid}/steps",
        holder,
        {"kind": "model_call", "name": "gpt", "usage": usage},
    )
    assert model.status_code == 201, model.text
    assert (model.json()["status"], model.json()["seq"]) == ("completed", 1)
    tool = _post(
        alice,
        f"/v1/runs/{rid}/steps",
        holder,
        {
            "kind": "tool_call",
            "name": "add",
            "input": {"a": 2},
            "error": {"type": "ValueError", "message": "no b"},
        },
    )
    assert tool.json()["status"] == "failed" and tool.json()["error"]["message"] == "no b"
    beat = _post(alice, f"/v1/runs/{rid}/heartbeat", holder)
    assert beat.status_code == 200 and beat.json()["lease_expires_at"] is not None
    waiting = _post(
        alice,
        f"/v1/runs/{rid}/suspend",
        holder,
        {"kind": "approval", "prompt": "Approve add?", "details": {"tool_call_ids": ["c1"]}},
    )
    assert waiting.status_code == 200, waiting.text
    assert waiting.json()["status"] == "waiting"
    asked = waiting.json()["waiting_for"]
    assert (asked["kind"], asked["prompt"], asked["tool_call_ids"]) == (
        "approval",
        "Approve add?",
        ["c1"],
    )
    # only its caller goes on with it: a plain resume would leave it to a worker
    _problem(alice.post(f"/v1/runs/{rid}/resume", json={"input": "yes"}), 409, "invalid_transition")
    resumed = alice.post(f"/v1/runs/{rid}/held-resume", json={"input": "approved"})
    assert resumed.status_code == 200, resumed.text
    again = resumed.json()["holder"]
    assert again != holder and resumed.json()["run"]["status"] == "running"
    _problem(
        _post(alice, f"/v1/runs/{rid}/steps", holder, {"kind": "note", "name": "x"}),
        409,
        "lease_lost",
    )
    note = _post(alice, f"/v1/runs/{rid}/steps", again, {"kind": "note", "name": "after"})
    assert note.json()["seq"] == 4
    done = _post(
        alice, f"/v1/runs/{rid}/finish", again, {"status": "completed", "output": {"text": "4"}}
    )
    assert done.status_code == 200, done.text
    assert (done.json()["status"], done.json()["output"]) == ("completed", {"text": "4"})
    assert done.json()["usage"]["input_tokens"] == 12
    steps = alice.get(f"/v1/runs/{rid}/steps").json()["data"]
    assert [(s["kind"], s["name"], s["status"]) for s in steps] == [
        ("model_call", "gpt", "completed"),
        ("tool_call", "add", "failed"),
        ("message", "wait_for_approval", "completed"),
        ("note", "after", "completed"),
    ]
    assert steps[2]["output"] == {"input": "approved"}
    # finishing twice: the run is no longer held by anyone
    twice = _post(alice, f"/v1/runs/{rid}/finish", again, {"status": "completed"})
    assert _problem(twice, 409, "lease_lost")["status"] == 409


def test_writes_without_the_holder_are_refused_and_bodies_checked(alice: httpx.Client) -> None:
    rid = _start(alice, _session(alice))["run"]["id"]
    note = {"kind": "note", "name": "n"}
    for holder in (None, "", "th_wrong"):
        for action, body in (
            ("steps", note),
            ("heartbeat", None),
            ("finish", {"status": "completed"}),
        ):
            _problem(_post(alice, f"/v1/runs/{rid}/{action}", holder, body), 409, "lease_lost")
    missing = _post(alice, f"/v1/runs/{rid}/steps", None, note)
    assert "no holder" in missing.json()["detail"]
    holder = _start(alice, _session(alice))["holder"]  # another run's holder holds nothing here
    _problem(_post(alice, f"/v1/runs/{rid}/steps", holder, note), 409, "lease_lost")
    bad_steps: list[dict[str, Any]] = [
        {"kind": "thought", "name": "n"},
        {"kind": "note"},
        {"kind": "note", "name": "n", "usage": {"input_tokens": -1}},
        {"kind": "note", "name": "n", "extra": 1},
    ]
    for step in bad_steps:
        _problem(_post(alice, f"/v1/runs/{rid}/steps", holder, step), 422, "validation_error")
    for status in ("running", "waiting", "done"):
        answer = _post(alice, f"/v1/runs/{rid}/finish", holder, {"status": status})
        _problem(answer, 422, "validation_error")
    suspend = _post(alice, f"/v1/runs/{rid}/suspend", holder, {"kind": "coffee", "prompt": "?"})
    _problem(suspend, 422, "validation_error")
    sid = _session(alice)
    bad_runs: list[dict[str, Any]] = [
        {"goal": "g"},
        {"goal": "g", "agent": "a", "if_busy": "enqueue"},
        {"goal": "g", "agent": "a", "lease_seconds": 0.5},
    ]
    for run in bad_runs:
        _problem(alice.post(f"/v1/sessions/{sid}/held-runs", json=run), 422, "validation_error")


def test_another_owner_sees_the_same_404_as_for_a_random_id(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    held = _start(alice, _session(alice))
    rid, holder = held["run"]["id"], held["holder"]
    random = "0190a000-0000-7000-8000-000000000000"
    for action, body in (
        ("steps", {"kind": "note", "name": "n"}),
        ("heartbeat", None),
        ("suspend", {"kind": "input", "prompt": "?"}),
        ("finish", {"status": "completed"}),
    ):
        theirs = _problem(_post(bob, f"/v1/runs/{rid}/{action}", holder, body), 404, "not_found")
        unknown = _problem(
            _post(bob, f"/v1/runs/{random}/{action}", holder, body), 404, "not_found"
        )
        assert theirs["detail"].replace(rid, random) == unknown["detail"]
    _problem(bob.post(f"/v1/runs/{rid}/held-resume", json={"input": 1}), 404, "not_found")
    _problem(
        bob.post(
            f"/v1/sessions/{held['run']['session_id']}/held-runs", json={"goal": "g", "agent": "a"}
        ),
        404,
        "not_found",
    )
    assert alice.get(f"/v1/runs/{rid}/steps").json()["data"] == []
    assert _post(alice, f"/v1/runs/{rid}/heartbeat", holder).status_code == 200  # still alice's


def test_a_run_a_worker_executes_takes_no_holder(alice: httpx.Client) -> None:
    sid = _session(alice)
    created = alice.post(
        f"/v1/sessions/{sid}/runs", json={"goal": "g", "input": {"wait": "Go on?"}}
    )
    rid = created.json()["id"]
    waiting = alice.get(f"/v1/runs/{rid}/wait", params={"timeout": 15}).json()
    assert waiting["status"] == "waiting"
    _problem(
        alice.post(f"/v1/runs/{rid}/held-resume", json={"input": "x"}), 409, "invalid_transition"
    )
    assert alice.post(f"/v1/runs/{rid}/resume", json={"input": "yes"}).status_code == 200
    sleeping = alice.post(
        f"/v1/sessions/{_session(alice)}/runs", json={"goal": "g", "input": {"sleep": 30}}
    ).json()
    running = eventually_sync(
        lambda: (r := alice.get(f"/v1/runs/{sleeping['id']}").json())["worker_id"] and r,
        what="the worker to hold the run",
    )
    for holder in (running["worker_id"], "th_guess"):  # not even the worker's own id
        answer = _post(
            alice, f"/v1/runs/{running['id']}/steps", holder, {"kind": "note", "name": "x"}
        )
        _problem(answer, 409, "lease_lost")
    alice.post(f"/v1/runs/{running['id']}/cancel")


def test_busy_sessions_answer_by_if_busy_and_interrupted_holders_lose_the_run(
    alice: httpx.Client,
) -> None:
    sid = _session(alice)
    first = _start(alice, sid)
    busy = alice.post(f"/v1/sessions/{sid}/held-runs", json={"goal": "g", "agent": "a"})
    _problem(busy, 409, "session_busy")
    second = _start(alice, sid, if_busy="interrupt")
    assert alice.get(f"/v1/runs/{first['run']['id']}").json()["status"] == "cancelled"
    lost = _post(
        alice,
        f"/v1/runs/{first['run']['id']}/steps",
        first["holder"],
        {"kind": "note", "name": "n"},
    )
    assert "cancelled" in _problem(lost, 409, "lease_lost")["detail"]
    alice.post(f"/v1/runs/{second['run']['id']}/cancel")  # cancelled from outside (the UI, the CLI)
    gone = _post(alice, f"/v1/runs/{second['run']['id']}/heartbeat", second["holder"])
    _problem(gone, 409, "lease_lost")


@pytest.mark.slow
def test_a_holder_that_stops_heartbeating_leaves_the_run_to_the_reaper(alice: httpx.Client) -> None:
    held = _start(alice, _session(alice), agent="echo", lease_seconds=1)  # an agent workers have
    rid = held["run"]["id"]
    failed = eventually_sync(
        lambda: (r := alice.get(f"/v1/runs/{rid}").json())["status"] == "failed" and r,
        what="the reaper to fail the run",
    )
    assert failed["error"]["type"] == "worker_lost" and failed["attempt"] == 1
    _problem(
        _post(alice, f"/v1/runs/{rid}/steps", held["holder"], {"kind": "note", "name": "n"}),
        409,
        "lease_lost",
    )


def _nested(depth: int) -> Any:
    value: Any = []
    for _ in range(depth - 1):
        value = [value]
    return value


def test_json_nested_too_deep_is_a_422_not_kept(alice: httpx.Client) -> None:
    """A value nesting deeper than tether keeps (stored, it failed every read that rendered
    it: the run list among them) is refused where it comes in, in words."""
    held = _start(alice, _session(alice))
    rid, holder = held["run"]["id"], held["holder"]
    deep, fine = _nested(101), _nested(100)
    for body in (
        {"kind": "note", "name": "n", "input": deep},
        {"kind": "note", "name": "n", "output": {"a": deep}},
    ):
        problem = _problem(
            _post(alice, f"/v1/runs/{rid}/steps", holder, body), 422, "validation_error"
        )
        assert "deeper than 100 levels" in problem["detail"]
    kept = _post(
        alice, f"/v1/runs/{rid}/steps", holder, {"kind": "note", "name": "n", "input": fine}
    )
    assert kept.status_code == 201, kept.text
    finish = _post(alice, f"/v1/runs/{rid}/finish", holder, {"status": "completed", "output": deep})
    _problem(finish, 422, "validation_error")
    waiting = _post(alice, f"/v1/runs/{rid}/suspend", holder, {"kind": "input", "prompt": "?"})
    assert waiting.status_code == 200, waiting.text
    resume = alice.post(f"/v1/runs/{rid}/held-resume", json={"input": deep})
    _problem(resume, 422, "validation_error")
    assert alice.get(f"/v1/runs/{rid}").json()["status"] == "waiting"  # nothing changed
    sid = _session(alice)
    run = alice.post(f"/v1/sessions/{sid}/runs", json={"goal": "g", "input": {"a": deep}})
    _problem(run, 422, "validation_error")
    assert alice.get("/v1/runs").status_code == 200


def test_a_steps_usage_is_bounded_so_totals_stay_whole_numbers(alice: httpx.Client) -> None:
    """2**53 tokens a step let 1024 steps overflow the run's and session's 64-bit totals
    (floats on SQLite, an error on PostgreSQL)."""
    held = _start(alice, _session(alice))
    rid, holder = held["run"]["id"], held["holder"]
    for field in ("input_tokens", "output_tokens", "requests"):
        body = {"kind": "model_call", "name": "m", "usage": {field: 10**9 + 1}}
        _problem(_post(alice, f"/v1/runs/{rid}/steps", holder, body), 422, "validation_error")
    most = {"input_tokens": 10**9, "output_tokens": 10**9, "requests": 10**9}
    step = _post(
        alice, f"/v1/runs/{rid}/steps", holder, {"kind": "model_call", "name": "m", "usage": most}
    )
    assert step.status_code == 201, step.text
    assert alice.get(f"/v1/runs/{rid}").json()["usage"]["total_tokens"] == 2 * 10**9


@pytest.mark.slow
def test_a_held_runs_timeout_ends_it_however_long_its_lease(alice: httpx.Client) -> None:
    """timeout_seconds bounds a held run as it does a worker's (it was taken and ignored: a
    holder heartbeating kept the run running for ever)."""
    held = _start(alice, _session(alice), timeout_seconds=1, lease_seconds=3600)
    rid = held["run"]["id"]
    ended = eventually_sync(
        lambda: (r := alice.get(f"/v1/runs/{rid}").json())["status"] == "timed_out" and r,
        what="the reaper to time the run out",
    )
    assert ended["error"]["type"] == "timeout"
    _problem(_post(alice, f"/v1/runs/{rid}/heartbeat", held["holder"]), 409, "lease_lost")


def test_steps_come_a_page_at_a_time(alice: httpx.Client) -> None:
    held = _start(alice, _session(alice))
    rid, holder = held["run"]["id"], held["holder"]
    for turn in range(5):
        made = _post(alice, f"/v1/runs/{rid}/steps", holder, {"kind": "note", "name": f"t{turn}"})
        assert made.status_code == 201, made.text
    names, query = [], "limit=2"
    while True:
        page = alice.get(f"/v1/runs/{rid}/steps?{query}")
        assert page.status_code == 200, page.text
        names += [s["name"] for s in page.json()["data"]]
        if page.json()["next_cursor"] is None:
            break
        query = f"limit=2&cursor={page.json()['next_cursor']}"
    assert names == ["t0", "t1", "t2", "t3", "t4"]
    _problem(alice.get(f"/v1/runs/{rid}/steps?cursor=nonsense"), 422, "validation_error")
    _problem(alice.get("/v1/runs/no-such-run/steps"), 404, "not_found")
