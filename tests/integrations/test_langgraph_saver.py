"""TetherCheckpointSaver: a graph's checkpoints in tether, its messages as the conversation."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from tests.integrations.lgkit import langgraph_or_skip

langgraph_or_skip()

from langchain_core.messages import AIMessage, HumanMessage, RemoveMessage  # noqa: E402
from langgraph.graph import END, START, MessagesState, StateGraph  # noqa: E402
from langgraph.types import Command, interrupt  # noqa: E402

import tether  # noqa: E402
from tests.support import Backend  # noqa: E402
from tether.core.message import Role  # noqa: E402
from tether.integrations.langgraph import TetherCheckpointSaver  # noqa: E402
from tether.runtime.checkpoints import Checkpoints  # noqa: E402
from tether.runtime.facade import Tether  # noqa: E402
from tether.runtime.service import Service  # noqa: E402
from tether.store.checkpoint import CONVERSATION_TYPE  # noqa: E402


@pytest.fixture
def tt(backend: Backend, db_url: str) -> Iterator[Tether]:
    """tether on a fresh database of each backend."""
    handle = tether.open(db_url, owner="alice", worker=False)
    yield handle
    handle.close()


def chat(saver: TetherCheckpointSaver) -> Any:
    """A graph that answers each message with how many messages it has seen."""
    graph = StateGraph(MessagesState)
    graph.add_node("reply", lambda s: {"messages": [AIMessage(f"seen {len(s['messages'])}")]})
    graph.add_edge(START, "reply")
    graph.add_edge("reply", END)
    return graph.compile(checkpointer=saver)


def config(thread: str) -> Any:
    return {"configurable": {"thread_id": thread}}


def texts(messages: list[Any]) -> list[str]:
    return [m.content for m in messages]


def stored_values(tt: Tether, thread: str) -> list[Any]:
    """Every channel value stored for the thread's checkpoints (as the store keeps them)."""
    service = tt.async_backend
    assert isinstance(service, Service)
    checkpoints = Checkpoints(service)

    async def read() -> list[Any]:
        session_id = await checkpoints.session_of(thread, create=False)
        loaded = await checkpoints.load(session_id=session_id, limit=1000)
        return [v for c in loaded for v in c.values]

    return tt._call(read())


def test_each_message_is_stored_once_in_the_threads_session(tt: Tether) -> None:
    saver = TetherCheckpointSaver(tt)
    graph = chat(saver)
    for text in ("one", "two", "three"):
        graph.invoke({"messages": [HumanMessage(text)]}, config("t1"))

    state = graph.get_state(config("t1"))
    assert texts(state.values["messages"]) == ["one", "seen 1", "two", "seen 3", "three", "seen 5"]
    session = tt.sessions.get(key="t1")
    assert session.ttl_seconds is None  # a thread does not expire
    conversation = session.messages.list()
    assert [(m.role, m.content) for m in conversation] == [
        (Role.USER, "one"),
        (Role.ASSISTANT, "seen 1"),
        (Role.USER, "two"),
        (Role.ASSISTANT, "seen 3"),
        (Role.USER, "three"),
        (Role.ASSISTANT, "seen 5"),
    ]
    # the messages channel is stored as ranges of the conversation, never as a copy of it
    messages = [v for v in stored_values(tt, "t1") if v.channel == "messages"]
    assert messages and all(v.type == CONVERSATION_TYPE for v in messages)
    assert max(len(v.value) for v in messages) < 32
    # a saver with nothing remembered (another process) rebuilds the same state
    again = chat(TetherCheckpointSaver(tt)).get_state(config("t1"))
    assert again.values["messages"] == state.values["messages"]
    history = list(graph.get_state_history(config("t1")))
    assert len(history) == 9  # input, loop, end per invoke
    assert texts(history[-2].values["messages"]) == ["one"]


def test_forks_and_edits_rebuild_each_branch(tt: Tether) -> None:
    graph = chat(TetherCheckpointSaver(tt))
    graph.invoke({"messages": [HumanMessage("a", id="a")]}, config("f"))
    graph.invoke({"messages": [HumanMessage("b", id="b")]}, config("f"))
    history = list(graph.get_state_history(config("f")))
    first_answer = next(h for h in history if texts(h.values["messages"]) == ["a", "seen 1"])

    # fork from the first answer: the branch does not hold b
    forked = graph.invoke({"messages": [HumanMessage("c", id="c")]}, first_answer.config)
    assert texts(forked["messages"]) == ["a", "seen 1", "c", "seen 3"]
    # edit a message in place (same id) and remove another
    edited = graph.update_state(
        config("f"), {"messages": [HumanMessage("A!", id="a"), RemoveMessage(id="c")]}
    )
    assert texts(graph.get_state(edited).values["messages"]) == ["A!", "seen 1", "seen 3"]
    # the main branch is as it was
    main = graph.get_state(history[0].config).values["messages"]
    assert texts(main) == ["a", "seen 1", "b", "seen 3"]
    fresh = chat(TetherCheckpointSaver(tt))
    assert texts(fresh.get_state(config("f")).values["messages"]) == ["A!", "seen 1", "seen 3"]
    assert texts(fresh.get_state(history[0].config).values["messages"]) == texts(main)


def test_a_message_that_is_not_json_is_kept_by_the_serializer(tt: Tether) -> None:
    graph = chat(TetherCheckpointSaver(tt))
    odd = HumanMessage("raw", additional_kwargs={"payload": b"\x00\x01"})
    graph.invoke({"messages": [odd]}, config("odd"))
    fresh = chat(TetherCheckpointSaver(tt)).get_state(config("odd")).values["messages"]
    assert fresh[0].additional_kwargs == {"payload": b"\x00\x01"}
    assert texts(fresh) == ["raw", "seen 1"]


def test_an_interrupted_graph_resumes_from_its_pending_writes(tt: Tether) -> None:
    graph = StateGraph(MessagesState)

    def ask(state: MessagesState) -> dict[str, Any]:
        answer = interrupt("approve?")
        return {"messages": [AIMessage(f"approved: {answer}")]}

    graph.add_node("ask", ask)
    graph.add_edge(START, "ask")
    graph.add_edge("ask", END)
    compiled = graph.compile(checkpointer=TetherCheckpointSaver(tt))
    out = compiled.invoke({"messages": [HumanMessage("go")]}, config("i"))
    assert out["__interrupt__"][0].value == "approve?"

    resumed = graph.compile(checkpointer=TetherCheckpointSaver(tt))  # as after a restart
    done = resumed.invoke(Command(resume="yes"), config("i"))
    assert texts(done["messages"]) == ["go", "approved: yes"]


def test_async_methods_and_threads(tt: Tether, loop: asyncio.AbstractEventLoop) -> None:
    saver = TetherCheckpointSaver(tt)
    graph = chat(saver)

    async def scenario() -> None:
        await graph.ainvoke({"messages": [HumanMessage("x")]}, config("a1"))
        await graph.ainvoke({"messages": [HumanMessage("y")]}, config("a2"))
        state = await graph.aget_state(config("a1"))
        assert texts(state.values["messages"]) == ["x", "seen 1"]
        everything = [t async for t in saver.alist(None)]
        assert {t.config["configurable"]["thread_id"] for t in everything} == {"a1", "a2"}
        await saver.adelete_thread("a1")
        assert await saver.aget_tuple(config("a1")) is None
        assert (await saver.aget_tuple(config("a2"))) is not None

    loop.run_until_complete(scenario())
    assert [s.external_key for s in tt.sessions.list()] == ["a2"]


def test_another_owner_sees_none_of_the_threads(tt: Tether) -> None:
    graph = chat(TetherCheckpointSaver(tt))
    graph.invoke({"messages": [HumanMessage("mine")]}, config("shared name"))
    other = TetherCheckpointSaver(tt, owner="bob")
    assert other.get_tuple(config("shared name")) is None
    assert list(other.list(None)) == []


def test_a_saver_opened_on_a_path_owns_its_tether(tmp_path: Any) -> None:
    with TetherCheckpointSaver(str(tmp_path / "graph.db")) as saver:
        chat(saver).invoke({"messages": [HumanMessage("hi")]}, config("p"))
    with tether.open(tmp_path / "graph.db", worker=False) as tt:
        assert [m.content for m in tt.sessions.get(key="p").messages.list()] == ["hi", "seen 1"]


def test_a_read_never_hands_out_the_graphs_own_objects(tt: Tether) -> None:
    canned = AIMessage("", id="ai1", tool_calls=[{"id": "c", "name": "f", "args": {"q": "x"}}])
    graph = StateGraph(MessagesState)
    graph.add_node("model", lambda s: {"messages": [canned]})
    graph.add_edge(START, "model")
    graph.add_edge("model", END)
    compiled = graph.compile(checkpointer=TetherCheckpointSaver(tt))
    compiled.invoke({"messages": [HumanMessage("q")]}, config("alias"))
    read = compiled.get_state(config("alias")).values["messages"][-1]
    assert read == canned and read is not canned
    read.tool_calls[0]["args"]["q"] = "changed by the reader"
    assert canned.tool_calls[0]["args"] == {"q": "x"}


def test_a_saver_closes_inside_a_running_loop(
    tmp_path: Any, loop: asyncio.AbstractEventLoop
) -> None:
    saver = TetherCheckpointSaver(str(tmp_path / "closing.db"))
    assert saver.get_tuple(config("none")) is None  # a synchronous call first

    async def close() -> None:
        saver.close()

    loop.run_until_complete(close())


def test_copy_prune_and_delete_for_runs(tt: Tether) -> None:
    saver = TetherCheckpointSaver(tt)
    graph = chat(saver)
    graph.invoke({"messages": [HumanMessage("one")]}, config("src"))
    graph.invoke({"messages": [HumanMessage("two")]}, config("src"))

    saver.copy_thread("src", "dst")
    copied = chat(TetherCheckpointSaver(tt)).get_state(config("dst")).values["messages"]
    assert texts(copied) == ["one", "seen 1", "two", "seen 3"]
    assert len(list(saver.list(config("dst")))) == len(list(saver.list(config("src")))) == 6
    assert [m.content for m in tt.sessions.get(key="dst").messages.list()] == texts(copied)

    saver.prune(["dst"], strategy="keep_latest")
    assert len(list(saver.list(config("dst")))) == 1
    pruned = chat(TetherCheckpointSaver(tt)).get_state(config("dst")).values["messages"]
    assert texts(pruned) == texts(copied)
    saver.prune(["dst"], strategy="delete")
    assert list(saver.list(config("dst"))) == []

    run_id = "3f0e6f36-0000-4000-8000-000000000001"
    graph.invoke(
        {"messages": [HumanMessage("three")]}, {**config("src"), "metadata": {"run_id": run_id}}
    )
    made = [t for t in saver.list(config("src")) if t.metadata.get("run_id") == run_id]
    assert made
    saver.delete_for_runs([run_id])
    assert all(t.metadata.get("run_id") != run_id for t in saver.list(config("src")))
    assert len(list(saver.list(config("src")))) == 6


def test_versions_are_short_and_increase(tt: Tether) -> None:
    saver = TetherCheckpointSaver(tt)
    versions = [saver.get_next_version(None, None)]
    for _ in range(40):
        versions.append(saver.get_next_version(versions[-1], None))
    assert versions == sorted(versions) and len(set(versions)) == len(versions)
    assert {len(v) for v in versions} == {15}
    assert saver.get_next_version(35, None) < saver.get_next_version(36, None)
    assert saver.get_next_version(45, None).startswith("0000001a.")  # 46 in base 36
