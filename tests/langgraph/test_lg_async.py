"""The official async client (get_client) through the same core flow."""

from __future__ import annotations

import asyncio

import pytest
from langgraph_sdk.errors import AuthenticationError, ConflictError, NotFoundError

from tests.langgraph.lgkit import Server, contents, said, wire


async def test_the_async_client_core_flow(server: Server) -> None:
    async with server.async_sdk("alice") as client:
        thread = await client.threads.create(metadata={"via": "async"})
        tid = thread["thread_id"]
        waited = await client.runs.wait(tid, "echo", input=said("one"))
        assert contents(waited) == [("human", "one"), ("ai", "echo: one")]

        parts = [
            p
            async for p in client.runs.stream(
                tid, "echo", input=said("two"), stream_mode=["updates", "values"]
            )
        ]
        assert [p.event for p in parts] == ["metadata", "values", "updates", "values"]
        assert contents(parts[-1].data)[-1] == ("ai", "echo: two")

        run = await client.runs.create(tid, "echo", input=said("three"))
        joined = await client.runs.join(tid, run["run_id"])
        assert contents(joined)[-1] == ("ai", "echo: three")
        assert [r["status"] for r in await client.runs.list(tid)] == ["success"] * 3

        sleeper = await client.runs.create(tid, "echo", input={"sleep": 60})
        with pytest.raises(ConflictError):
            await client.runs.create(tid, "echo", input={})
        await client.runs.cancel(tid, sleeper["run_id"], wait=True)
        assert (await client.runs.get(tid, sleeper["run_id"]))["status"] == "interrupted"

        failed = await client.runs.wait(
            tid, "echo", input={"text": "x", "fail": True}, raise_error=False
        )
        assert wire(failed)["__error__"]["error"] == "ValueError"
        assert (await client.threads.get(tid))["status"] == "error"

        state = await client.threads.get_state(tid)
        history = await client.threads.get_history(tid, limit=3)
        assert history[0]["checkpoint"] == state["checkpoint"] and len(history) == 3

        await client.store.put_item(["async", tid], key="k", value={"v": 1})
        item = await client.store.get_item(["async", tid], key="k")
        assert item is not None and item["value"] == {"v": 1}
        found = await client.store.search_items(["async", tid])
        assert [i["key"] for i in found["items"]] == ["k"]
        await client.store.delete_item(["async", tid], key="k")
        assert await client.store.get_item(["async", tid], key="k") is None

        found_threads = await client.threads.search(metadata={"via": "async"}, limit=100)
        assert tid in [t["thread_id"] for t in found_threads]
        await client.threads.delete(tid)
        with pytest.raises(NotFoundError):
            await client.threads.get(tid)


async def test_async_threads_run_concurrently(server: Server) -> None:
    async with server.async_sdk("alice") as client:
        threads = [await client.threads.create() for _ in range(4)]
        answers = await asyncio.gather(
            *(
                client.runs.wait(t["thread_id"], "echo", input=said(f"n{i}"))
                for i, t in enumerate(threads)
            )
        )
        assert [contents(a)[-1] for a in answers] == [("ai", f"echo: n{i}") for i in range(4)]


async def test_async_client_with_a_wrong_key_is_refused(server: Server) -> None:
    from langgraph_sdk import get_client

    async with get_client(url=server.url, api_key="tk_nope") as client:
        with pytest.raises(AuthenticationError):
            await client.threads.create()
