"""Tools: a JSON schema from a typed signature, errors as results, capped output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Literal

import pytest

from tests.engine.engine_helpers import Engine, wait_status
from tether.core.status import RUN_TERMINAL, RunStatus, StepStatus
from tether.runtime.run_context import RunContext
from tether.runtime.tools import Tool, ToolError, ToolRegistry, tool

TERMINAL = tuple(RUN_TERMINAL)


@tool
def search(
    query: str,
    limit: int = 10,
    exact: bool = False,
    tags: list[str] | None = None,
    order: Literal["newest", "oldest"] = "newest",
) -> list[str]:
    """Search the notes.

    Longer explanation that stays in the description."""
    return [f"{query}:{limit}:{exact}:{tags}:{order}"]


@tool(name="divide", description="Divide a by b.")
async def _divide(a: float, b: float) -> float:
    return a / b


@tool(max_output_chars=50)
def big(n: int) -> Any:
    """A large output."""
    return "x" * n if n >= 0 else {"items": ["y" * 10] * 20}


@tool
def read_binary(structured: bool) -> Any:
    """What reading a binary file as text gives."""
    text = "PK\x03\x04\x00\x00"
    return {"path": "a.zip", "lines": [text], "k\x00": 1} if structured else text


@tool
def refuse(reason: str) -> str:
    """Always refuses."""
    raise ToolError(f"refused: {reason}")


def test_the_schema_comes_from_the_signature() -> None:
    spec = search.spec()
    assert spec["type"] == "function"
    fn = spec["function"]
    assert fn["name"] == "search"
    assert fn["description"].startswith("Search the notes.")
    params = fn["parameters"]
    assert params["type"] == "object"
    assert params["required"] == ["query"], "only parameters without defaults are required"
    assert params["additionalProperties"] is False
    props = params["properties"]
    assert list(props) == ["query", "limit", "exact", "tags", "order"]
    assert props["query"] == {"type": "string"}
    assert props["limit"] == {"type": "integer", "default": 10}
    assert props["exact"] == {"type": "boolean", "default": False}
    assert props["tags"]["default"] is None
    assert {"type": "array", "items": {"type": "string"}} in props["tags"]["anyOf"]
    assert props["order"]["enum"] == ["newest", "oldest"]
    assert all("title" not in p for p in props.values())
    json.dumps(spec)  # plain JSON

    assert _divide.name == "divide" and _divide.description == "Divide a by b."
    assert _divide.parameters["required"] == ["a", "b"]
    assert _divide.parameters["properties"]["a"] == {"type": "number"}


def test_a_function_with_star_arguments_is_refused() -> None:
    def loose(*args: int, **kwargs: int) -> None: ...

    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        tool(loose)


@pytest.mark.parametrize("name", ["schema", "json", "copy", "validate", "model_config", "_hidden"])
async def test_any_parameter_name_is_a_schema_property(name: str) -> None:
    """Parameter names that pydantic's BaseModel uses itself (or treats as private) are
    ordinary arguments of a tool."""
    namespace: dict[str, Any] = {}
    exec(f"def echo_it({name}: str) -> str:\n    return {name}\n", namespace)
    made = tool(namespace["echo_it"])
    assert list(made.parameters["properties"]) == [name]
    assert made.parameters["required"] == [name]
    assert await made.invoke({name: "value"}) == "value"
    with pytest.raises(ToolError, match=name):
        await made.invoke({})


async def test_valid_arguments_are_validated_and_defaults_applied() -> None:
    assert await search.invoke({"query": "q"}) == ["q:10:False:None:newest"]
    assert await search.invoke({"query": "q", "limit": 3, "tags": ["a"], "order": "oldest"}) == [
        "q:3:False:['a']:oldest"
    ]
    assert await _divide.invoke({"a": 1, "b": 4}) == 0.25


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ({}, ["query", "required"]),
        ({"query": "q", "limit": "many"}, ["limit", "integer"]),
        ({"query": "q", "order": "random"}, ["order"]),
        ({"query": "q", "colour": "red"}, ["colour"]),
        ({"query": 42}, ["query", "string"]),
    ],
)
async def test_invalid_arguments_are_an_error_naming_the_field(
    arguments: dict[str, Any], named: list[str]
) -> None:
    with pytest.raises(ToolError) as raised:
        await search.invoke(arguments)
    message = str(raised.value)
    assert message.startswith("search: invalid arguments")
    for word in named:
        assert word in message


async def test_arguments_must_be_an_object() -> None:
    with pytest.raises(ToolError, match="must be a JSON object"):
        await search.invoke(["q"])  # type: ignore[arg-type]


async def test_nul_characters_in_an_output_become_replacement_characters() -> None:
    # no store keeps NUL (PostgreSQL refuses it), so the step's result must not carry one
    assert await read_binary.invoke({"structured": False}) == "PK\x03\x04\ufffd\ufffd"
    assert await read_binary.invoke({"structured": True}) == {
        "path": "a.zip",
        "lines": ["PK\x03\x04\ufffd\ufffd"],
        "k\ufffd": 1,
    }


async def test_a_tool_raising_is_an_error_result_not_a_crash() -> None:
    with pytest.raises(ToolError) as raised:
        await _divide.invoke({"a": 1, "b": 0})
    assert str(raised.value) == "divide failed: ZeroDivisionError: float division by zero"
    with pytest.raises(ToolError, match=r"^refused: no$"):
        await refuse.invoke({"reason": "no"})


async def test_output_is_capped_with_a_truncation_note() -> None:
    assert await big.invoke({"n": 50}) == "x" * 50
    capped = await big.invoke({"n": 200})
    assert capped.startswith("x" * 50 + "\n")
    assert capped.endswith("[output truncated: 150 more characters]")
    structured = await big.invoke({"n": -1})
    assert isinstance(structured, str) and "[output truncated:" in structured
    assert structured.startswith('{"items": ["yyyyyyyyyy"')


async def _tool_errors(ctx: RunContext) -> dict[str, Any]:
    """Calls tools the ways a model might get wrong; every outcome comes back as a result."""
    ctx.tools = ToolRegistry([search, _divide, big])
    results = {}
    for label, name, arguments in [
        ("missing", "search", {"limit": 2}),
        ("crash", "divide", {"a": 1, "b": 0}),
        ("unknown", "nope", {}),
        ("capped", "big", {"n": 1000}),
        ("fine", "divide", {"a": 3, "b": 2}),
    ]:
        outcome = await ctx.call_tool(name, arguments, call_id=label)
        results[label] = {"ok": outcome.ok, "text": outcome.for_model()}
    try:
        await ctx.tool("divide", a=1, b=0)
    except ToolError as exc:
        results["raised"] = {"ok": False, "text": str(exc)}
    return results


async def test_tool_errors_reach_the_agent_as_results_and_are_recorded(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        eng.agents.register("engine_tool_errors", _tool_errors)
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="tools")
        run = await svc.create_run(session.id, "misuse tools", agent="engine_tool_errors")
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.COMPLETED, done.error
        out = done.output
        assert out["missing"]["ok"] is False
        assert out["missing"]["text"].startswith("ERROR: search: invalid arguments")
        assert "query" in out["missing"]["text"]
        assert (
            out["crash"]["text"]
            == "ERROR: divide failed: ZeroDivisionError: float division by zero"
        )
        assert out["unknown"]["text"].startswith("ERROR: no tool named 'nope'")
        assert "search" in out["unknown"]["text"] and "divide" in out["unknown"]["text"]
        assert out["capped"]["ok"] is True
        assert out["capped"]["text"].endswith("[output truncated: 950 more characters]")
        assert out["fine"] == {"ok": True, "text": "1.5"}
        assert out["raised"]["text"].startswith("divide failed: ZeroDivisionError")

        steps = (await svc.list_tool_calls(run_id=run.id)).data
        assert [(s.name, s.status) for s in steps] == [
            ("search", StepStatus.FAILED),
            ("divide", StepStatus.FAILED),
            ("nope", StepStatus.FAILED),
            ("big", StepStatus.COMPLETED),
            ("divide", StepStatus.COMPLETED),
            ("divide", StepStatus.FAILED),
        ]
        assert steps[0].error is not None and steps[0].error.type == "ToolError"
        assert "query" in steps[0].error.message
        assert steps[0].input == {"arguments": {"limit": 2}, "call_id": "missing"}
        assert steps[3].output.endswith("[output truncated: 950 more characters]")
        assert len(steps[3].output) < 100
        assert steps[4].output == 1.5


def test_a_registry_refuses_two_tools_of_one_name() -> None:
    registry = ToolRegistry([search])
    with pytest.raises(ValueError, match="already registered"):
        registry.add(Tool("search", "again", {}, lambda: None))
    assert [s["function"]["name"] for s in registry.specs()] == ["search"]


async def _lets_a_tool_error_through(ctx: RunContext) -> None:
    ctx.tools = ToolRegistry([refuse])
    await ctx.note("before", None)
    await ctx.tool("refuse", reason="not today")


async def test_a_tool_error_that_ends_the_run_names_its_step(db_path: Path) -> None:
    async with Engine(db_path) as eng:
        eng.agents.register("engine_tool_error_ends", _lets_a_tool_error_through)
        svc = eng.service
        eng.worker()
        session = await svc.create_session(title="tools")
        run = await svc.create_run(session.id, "refused", agent="engine_tool_error_ends")
        done = await wait_status(svc, run.id, *TERMINAL)
        assert done.status is RunStatus.FAILED and done.error is not None
        assert (done.error.type, done.error.message) == ("ToolError", "refused: not today")
        (call,) = (await svc.list_tool_calls(run_id=run.id)).data
        assert done.error.step_id == call.id
