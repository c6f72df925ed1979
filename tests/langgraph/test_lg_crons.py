"""Crons through the official langgraph-sdk client: create (for a thread, or a new thread each
time), search, count, update, delete, as tether schedules; a cron due within the minute
creates its run, which the client then waits for."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import httpx
import pytest
from langgraph_sdk.client import SyncLangGraphClient
from langgraph_sdk.errors import NotFoundError, UnprocessableEntityError

from tests.langgraph.lgkit import said, wire
from tests.waiting import eventually_sync


def test_crons_are_schedules(
    client: SyncLangGraphClient, bob: SyncLangGraphClient, native: httpx.Client
) -> None:
    thread = client.threads.create(metadata={"kind": "crons"})
    tid = thread["thread_id"]
    end = datetime.now(UTC) + timedelta(days=7)
    on_thread = wire(
        client.crons.create_for_thread(
            tid,
            "echo",
            schedule="0 9 * * mon-fri",
            input=said("daily standup"),
            metadata={"team": "core"},
            timezone="Europe/Berlin",
            end_time=end,
            config={"configurable": {"model": "small"}},
        )
    )
    cid = on_thread["cron_id"]
    assert on_thread["thread_id"] == tid and on_thread["assistant_id"] == "echo"
    assert on_thread["schedule"] == "0 9 * * mon-fri" and on_thread["timezone"] == "Europe/Berlin"
    assert on_thread["enabled"] is True and on_thread["next_run_date"] is not None
    assert on_thread["metadata"] == {"team": "core"}
    assert on_thread["payload"]["config"] == {"configurable": {"model": "small"}}
    stateless = wire(client.crons.create("echo", schedule="*/15 * * * *", input={"text": "tidy"}))
    assert stateless["thread_id"] is None and stateless["on_run_completed"] == "keep"

    # The same schedule through the native API.
    native_view = native.get(f"/v1/schedules/{cid}").json()
    assert native_view["session_id"] == tid and native_view["goal"] == "daily standup"

    mine = {c["cron_id"] for c in client.crons.search(limit=100)}
    assert {cid, stateless["cron_id"]} <= mine
    assert [c["cron_id"] for c in client.crons.search(thread_id=tid)] == [cid]
    assert [c["cron_id"] for c in client.crons.search(metadata={"team": "core"})] == [cid]
    assert client.crons.search(thread_id=tid, select=["cron_id", "schedule"]) == [
        {"cron_id": cid, "schedule": "0 9 * * mon-fri"}
    ]
    assert client.crons.count(thread_id=tid) == 1
    assert client.crons.count(assistant_id="echo") >= 2
    assert bob.crons.count(thread_id=tid) == 0

    paused = client.crons.update(cid, enabled=False, schedule="30 8 * * *", end_time=None)
    assert paused["enabled"] is False and paused["schedule"] == "30 8 * * *"
    assert paused["end_time"] is None and paused["next_run_date"] is None
    assert client.crons.search(thread_id=tid, enabled=False)[0]["cron_id"] == cid
    changed = client.crons.update(cid, input={"text": "new input"}, metadata={"team": "web"})
    assert changed["payload"]["input"] == {"text": "new input"}
    assert changed["metadata"] == {"team": "web"}
    assert changed["payload"]["config"] == {"configurable": {"model": "small"}}  # kept

    with pytest.raises(NotFoundError):
        bob.crons.delete(cid)
    client.crons.delete(cid)
    client.crons.delete(stateless["cron_id"])
    assert client.crons.count(thread_id=tid) == 0
    with pytest.raises(NotFoundError):
        client.crons.delete(cid)


def test_bad_crons_are_refused(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    with pytest.raises(UnprocessableEntityError, match="minute"):
        client.crons.create_for_thread(tid, "echo", schedule="75 * * * *")
    with pytest.raises(UnprocessableEntityError, match="timezone"):
        client.crons.create("echo", schedule="* * * * *", timezone="Atlantis/Central")
    with pytest.raises(UnprocessableEntityError, match="on_run_completed"):
        client.crons.create("echo", schedule="* * * * *", on_run_completed="delete")
    with pytest.raises(NotFoundError):
        client.crons.create_for_thread(
            "0190d6a0-0000-7000-8000-000000000000", "echo", schedule="* * * * *"
        )
    with pytest.raises(NotFoundError):
        client.crons.create("nobody", schedule="* * * * *")


@pytest.mark.slow
def test_a_cron_creates_its_run_at_the_next_minute(client: SyncLangGraphClient) -> None:
    tid = client.threads.create()["thread_id"]
    cron = wire(
        client.crons.create_for_thread(tid, "echo", schedule="* * * * *", input=said("tick"))
    )
    try:
        runs = eventually_sync(lambda: client.runs.list(tid), timeout=90, what="the cron's run")
        run = wire(runs[0])
        assert run["metadata"]["schedule_id"] == cron["cron_id"]
        client.runs.join(tid, run["run_id"])
        assert client.runs.get(tid, run["run_id"])["status"] == "success"
        assert (
            wire(client.threads.get_state(tid)["values"])["messages"][-1]["content"] == "echo: tick"
        )
    finally:
        client.crons.delete(cron["cron_id"])


def test_a_cron_of_a_stored_assistant_runs_its_agent_with_its_config(
    client: SyncLangGraphClient,
) -> None:
    made = client.assistants.create("echo", config={"configurable": {"tone": "dry"}})
    aid = made["assistant_id"]
    cron = wire(client.crons.create(aid, schedule="0 3 * * *", input={"text": "nightly"}))
    assert cron["assistant_id"] == aid
    assert cron["payload"]["config"] == {"configurable": {"tone": "dry"}}
    plain = wire(client.crons.create("echo", schedule="0 4 * * *", input={"text": "plain"}))
    found = [c["cron_id"] for c in client.crons.search(assistant_id=aid)]
    assert found == [cron["cron_id"]]  # not the crons of its agent's default assistant
    assert plain["cron_id"] in {c["cron_id"] for c in client.crons.search(assistant_id="echo")}
    for made_cron in (cron, plain):
        client.crons.delete(made_cron["cron_id"])
