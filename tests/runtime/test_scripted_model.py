"""ScriptedModel takes its replies as texts too (``ScriptedModel(["hello"])``), and refuses
what is not a reply when it is made, not when a run asks for it."""

from __future__ import annotations

import asyncio

import pytest

import tether
from tether.runtime.models.scripted import UnexpectedRequest


def test_texts_are_replies_with_that_content() -> None:
    model = tether.ScriptedModel(["hello", tether.ModelResponse(content="bye")])
    first = asyncio.run(model.complete([{"role": "user", "content": "hi"}], []))
    assert (first.content, first.tool_calls, first.finish_reason) == ("hello", [], "stop")
    assert first.to_message() == {"role": "assistant", "content": "hello"}
    assert asyncio.run(model.complete([], [])).content == "bye"
    model.assert_consumed()
    with pytest.raises(UnexpectedRequest):
        asyncio.run(model.complete([], []))


def test_what_is_not_a_reply_is_refused_up_front() -> None:
    with pytest.raises(TypeError, match=r"replies is a list of replies"):
        tether.ScriptedModel("hello")
    with pytest.raises(TypeError, match=r"reply 1 is a dict: give a text, a ModelResponse"):
        tether.ScriptedModel(["fine", {"content": "no"}])  # type: ignore[list-item]
