"""The CLI against a remote server: --url/--api-key (or TETHER_URL/TETHER_API_KEY) on sessions
and runs, and `tether tail` following a run live."""

from __future__ import annotations

import json
import os
import subprocess

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, wait_run
from tests.serving import TETHER, cli

pytestmark = pytest.mark.slow


def test_sessions_and_runs_commands_work_against_a_server(
    server: Server, alice: httpx.Client
) -> None:
    sid = new_session(alice, title="remote view")["id"]
    run = wait_run(alice, new_run(alice, sid, goal="look", input={"steps": 1})["id"])
    remote = ("--url", server.url, "--api-key", server.keys["alice"])

    listed = cli("sessions", "list", "--json", *remote)
    assert listed.returncode == 0, listed.stderr
    assert sid in [s["id"] for s in json.loads(listed.stdout)["data"]]

    env = {"TETHER_URL": server.url, "TETHER_API_KEY": server.keys["alice"]}
    shown = cli("runs", "show", run["id"], "--json", env=env)
    assert shown.returncode == 0, shown.stderr
    report = json.loads(shown.stdout)
    assert (report["status"], len(report["steps"])) == ("completed", 2)

    runs = cli("runs", "list", sid, "--json", env=env)
    assert [r["id"] for r in json.loads(runs.stdout)["data"]] == [run["id"]]
    session = cli("sessions", "show", sid, env=env)
    assert session.returncode == 0 and "remote view" in session.stdout
    closed = cli("sessions", "close", sid, "--json", env=env)
    assert json.loads(closed.stdout)["status"] == "closed"

    bob = cli("runs", "show", run["id"], "--url", server.url, "--api-key", server.keys["bob"])
    assert bob.returncode == 1 and bob.stdout == ""
    assert bob.stderr.strip().splitlines() == [f"error: run {run['id']} not found"]
    anonymous = cli("sessions", "list", "--url", server.url)
    assert anonymous.returncode == 1 and "API key" in anonymous.stderr
    assert "Traceback" not in anonymous.stderr
    down = cli("sessions", "list", "--url", "http://127.0.0.1:9", "--api-key", "tk_x")
    assert down.returncode == 1 and len(down.stderr.strip().splitlines()) == 1


def test_tail_follows_a_run_until_its_terminal_event(server: Server, alice: httpx.Client) -> None:
    sid = new_session(alice)["id"]
    run = new_run(alice, sid, input={"wait": "proceed?"})
    env = {"TETHER_URL": server.url, "TETHER_API_KEY": server.keys["alice"]}
    with subprocess.Popen(
        [*TETHER, "tail", run["id"], "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env},
    ) as tail:
        assert tail.stdout is not None
        lines = []
        for line in tail.stdout:  # live: the run is still waiting while we read
            lines.append(json.loads(line))
            if lines[-1]["type"] == "run.waiting":
                answer = alice.post(f"/v1/runs/{run['id']}/resume", json={"input": "go"})
                assert answer.status_code == 200
        assert tail.wait(15) == 0
    types = [e["type"] for e in lines]
    assert types[0] == "run.created" and types[-1] == "run.completed"
    assert "run.waiting" in types and "run.resumed" in types

    rendered = cli("tail", run["id"], env=env)
    assert rendered.returncode == 0
    assert "run.completed" in rendered.stdout and "echo: echo this go" in rendered.stdout
