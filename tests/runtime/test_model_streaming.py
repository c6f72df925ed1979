"""A model that streams (``ScriptedModel(chunk_size=n)``): while ``ctx.complete`` runs, each
piece of the answer becomes a step.model_chunk event of the model_call step; the whole answer is
still recorded once (the step's output, the conversation's message, tied to the step)."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime

import pytest

import tether
from tests.waiting import WAIT
from tether.core.errors import LeaseLost
from tether.core.event import EventType
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.runtime.agent import AgentRegistry
from tether.runtime.models import ModelResponse, ScriptedModel, StreamingModel, ToolCall
from tether.runtime.run_context import MODEL_STEP_KEY
from tether.runtime.service import Service
from tether.store.base import Store

with_worker = pytest.mark.usefixtures("worker")


def weather(city: str) -> str:
    """Today's weather in a city."""
    return f"sunny in {city}"


async def _finish(service: Service, agent: str) -> Run:
    session = await service.create_session()
    run = await service.create_run(session.id, "Weather in Oslo?", agent=agent)
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.COMPLETED, done.error
    return done


@with_worker
async def test_a_streamed_answer_is_recorded_piece_by_piece_then_whole(
    service: Service, agents: AgentRegistry
) -> None:
    answer = "Sunny in Oslo, go out."
    model = ScriptedModel(
        [ModelResponse(tool_calls=[ToolCall("c1", "weather", {"city": "Oslo"})]), answer],
        chunk_size=5,
    )
    assert isinstance(model, StreamingModel)
    tether.agent("streamer", instructions="Weather.", model=model, tools=[weather], registry=agents)
    done = await _finish(service, "streamer")

    steps = await service.list_steps(done.id)
    calls = [s for s in steps if s.kind is StepKind.MODEL_CALL]
    assert len(calls) == 2 and calls[1].output["content"] == answer
    events = await service.list_events(run_id=done.id, limit=1000)
    chunks = [e.data for e in events if e.type == EventType.MODEL_CHUNK]
    # The reply with only a tool call has no text to stream; the answer comes in 5 pieces.
    assert [c["index"] for c in chunks] == [0, 1, 2, 3, 4]
    assert {c["step_id"] for c in chunks} == {calls[1].id}
    assert [c["text"] for c in chunks] == ["Sunny", " in O", "slo, ", "go ou", "t."]
    # Every piece comes before the step ends; the answer is in the conversation once.
    kinds = [(e.type, e.data.get("step", {}).get("id")) for e in events]
    ended = kinds.index((EventType.STEP_COMPLETED, calls[1].id))
    pieces = [i for i, e in enumerate(events) if e.type == EventType.MODEL_CHUNK]
    assert max(pieces) < ended
    said = [m for m in await service.conversation(done.session_id) if m.run_id == done.id]
    assert [m.content for m in said] == [answer]
    assert said[0].metadata[MODEL_STEP_KEY] == calls[1].id


@with_worker
async def test_a_model_that_does_not_stream_writes_no_pieces(
    service: Service, agents: AgentRegistry
) -> None:
    tether.agent(
        "plain", instructions="Hi.", model=ScriptedModel(["Hello there."]), registry=agents
    )
    done = await _finish(service, "plain")
    events = await service.list_events(run_id=done.id, limit=1000)
    assert EventType.MODEL_CHUNK not in {e.type for e in events}
    said = [m for m in await service.conversation(done.session_id) if m.run_id == done.id]
    assert said[0].content == "Hello there." and MODEL_STEP_KEY in said[0].metadata


async def test_only_the_worker_holding_the_run_writes_its_pieces(
    service: Service, store: Store
) -> None:
    session = await service.create_session()
    run = await service.create_run(session.id, "never claimed", agent="echo")
    with pytest.raises(LeaseLost):
        await store.add_model_chunk(
            "step", run_id=run.id, worker_id="w", index=0, text="x", now=datetime.now(UTC)
        )


def test_chunked_replies_come_in_pieces_of_the_size_asked() -> None:
    pieces: list[str] = []

    async def keep(text: str) -> None:
        pieces.append(text)

    model = ScriptedModel(["abcdefg", ModelResponse(tool_calls=[ToolCall("c", "t")])], chunk_size=3)
    reply = asyncio.run(model.complete_stream([], [], keep))
    assert (reply.content, pieces) == ("abcdefg", ["abc", "def", "g"])
    asyncio.run(model.complete_stream([], [], keep))  # no text: no piece
    assert pieces == ["abc", "def", "g"]
    with pytest.raises(TypeError, match="chunk_size"):
        ScriptedModel(["x"], chunk_size=0)
