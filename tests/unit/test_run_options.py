"""RunOptions: one frozen value for how a run is made; its keyword twin and the HTTP body stay in
step with it, so a new option is added in one place and reaches every layer."""

from __future__ import annotations

import dataclasses
import typing

import pytest

from tether.api.schemas import RunCreate
from tether.core.errors import UsageError
from tether.core.run import IfBusy, RunOptionFields, RunOptions

FIELDS = {f.name for f in dataclasses.fields(RunOptions)}


def test_the_keyword_twin_has_the_same_fields_and_types() -> None:
    twin = typing.get_type_hints(RunOptionFields)
    own = typing.get_type_hints(RunOptions)
    assert twin == own
    assert set(twin) == FIELDS
    assert not RunOptionFields.__required_keys__  # every keyword is optional


def test_the_http_body_carries_every_option() -> None:
    assert set(RunCreate.model_fields) == FIELDS | {"goal", "assistant_id"}
    body = RunCreate.model_validate(
        {"goal": "g", "agent": "echo", "if_busy": "enqueue", "max_attempts": 3, "input": {"a": 1}}
    )
    assert body.options() == RunOptions(
        agent="echo", if_busy="enqueue", max_attempts=3, input={"a": 1}
    )
    assert RunCreate.model_validate({"goal": "g"}).options() == RunOptions()


def test_options_are_frozen_and_keywords_override_them() -> None:
    base = RunOptions(agent="coder", max_attempts=2)
    with pytest.raises(dataclasses.FrozenInstanceError):
        base.agent = "echo"  # type: ignore[misc]
    assert RunOptions.of() == RunOptions()
    assert RunOptions.of(base) is base
    assert RunOptions.of(base, if_busy=IfBusy.ENQUEUE) == RunOptions(
        agent="coder", max_attempts=2, if_busy=IfBusy.ENQUEUE
    )
    assert base.if_busy is IfBusy.REJECT
    with pytest.raises(TypeError):
        RunOptions.of(base, agnet="echo")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        RunOptions("coder")  # type: ignore[call-arg]
    with pytest.raises(UsageError, match="options must be a RunOptions, not dict"):
        RunOptions.of({"agent": "echo"})  # type: ignore[arg-type]
