"""A LangGraph graph served as a tether agent, through the library: a run of it, its wait for
approval and its resumption, the steps it records, and how graphs are found and loaded."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.integrations.lgkit import langgraph_or_skip

langgraph_or_skip()

import tether  # noqa: E402
from tests.support import Backend  # noqa: E402
from tether.core.errors import UsageError  # noqa: E402
from tether.core.status import RunStatus  # noqa: E402
from tether.integrations.langgraph.loading import (  # noqa: E402
    graphs_of_config,
    load_graph,
    parse_graphs,
    register_graphs,
)
from tether.integrations.langgraph.served import ServedGraph  # noqa: E402
from tether.runtime.agent import AgentRegistry  # noqa: E402
from tether.runtime.builtin import register  # noqa: E402
from tether.runtime.facade import Tether  # noqa: E402
from tether.runtime.graphs import graph_agent  # noqa: E402

GRAPHS = Path(__file__).resolve().parents[1] / "langgraph" / "graphs"


@pytest.fixture
def agents() -> AgentRegistry:
    registry = register(AgentRegistry())
    register_graphs({"weather": f"{GRAPHS / 'weather.py'}:graph"}, registry)
    return registry


@pytest.fixture
def tt(backend: Backend, db_url: str, agents: AgentRegistry) -> Iterator[Tether]:
    handle = tether.open(db_url, owner="alice", agents=agents)
    yield handle
    handle.close()


def test_a_run_waits_for_the_graphs_interrupt_and_resumes_with_the_answer(tt: Tether) -> None:
    session = tt.sessions.create()
    run = session.runs.create("weather in Lima?", agent="weather").wait()
    assert run.status is RunStatus.WAITING
    asked = run.waiting_for or {}
    assert asked["value"]["tool_calls"][0]["args"] == {"city": "Lima"}
    done = run.resume("yes").wait()
    assert done.status is RunStatus.COMPLETED, done.error
    assert [m["type"] for m in done.output["messages"]] == ["human", "ai", "tool", "ai"]
    assert done.output["messages"][-1]["content"] == "The weather: sunny in Lima."
    # the graph's messages are the session's conversation, each stored once
    assert [m.content for m in session.messages.list()] == [
        "weather in Lima?",
        "Checking Lima",
        "sunny in Lima",
        "The weather: sunny in Lima.",
    ]
    kinds = [(s.kind.value, s.name) for s in done.steps]
    assert kinds[:3] == [("note", "graph_input"), ("note", "__start__"), ("note", "agent")]
    assert ("message", "wait_for_input") in kinds and ("tool_call", "get_weather") in kinds
    model_calls = [s for s in done.steps if s.kind.value == "model_call"]
    assert len(model_calls) == 2
    assert done.usage is not None and done.usage.requests == 2
    assert done.usage.output_tokens == 10
    # a later run's output holds the messages it added, not the whole history
    later = session.runs.create("weather in Cusco?", agent="weather").wait().resume("yes").wait()
    assert [m["content"] for m in later.output["messages"]] == [
        "weather in Cusco?",
        "Checking Cusco",
        "sunny in Cusco",
        "The weather: sunny in Cusco.",
    ]


def test_a_declined_call_ends_the_graph_without_the_tool(tt: Tether) -> None:
    session = tt.sessions.create()
    run = session.runs.create("weather in Quito?", agent="weather").wait()
    done = run.resume("no").wait()
    assert done.status is RunStatus.COMPLETED
    assert done.output["messages"][-1]["content"] == "Not run."
    assert not [s for s in done.steps if s.kind.value == "tool_call"]


def test_an_interrupt_inside_a_tool_of_a_prebuilt_react_agent(
    backend: Backend, db_url: str
) -> None:
    from langchain_core.tools import tool
    from langgraph.prebuilt import create_react_agent
    from langgraph.types import interrupt

    model = _scripted_model()

    @tool
    def get_weather(city: str) -> str:
        """The weather in a city, once a person allows it."""
        allowed = interrupt({"approve": city})
        return f"sunny in {city}" if allowed == "yes" else "not allowed"

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (create_react_agent is deprecated since LangGraph 1.0)
        graph = create_react_agent(model, [get_weather])
    agents = register(AgentRegistry())
    agents.register("react", ServedGraph("react", graph))
    with tether.open(db_url, owner="alice", agents=agents) as tt:
        run = tt.sessions.create().runs.create("weather in Rome?", agent="react").wait()
        assert (run.waiting_for or {})["value"] == {"approve": "Rome"}
        done = run.resume("yes").wait()
        assert done.status is RunStatus.COMPLETED, done.error
        assert done.output["messages"][-1]["content"] == "The weather: sunny in Rome."
        calls = [s for s in done.steps if s.kind.value == "tool_call"]
        assert [c.status.value for c in calls] == ["completed", "completed"]
        assert "interrupted" in calls[0].output and calls[1].output == "sunny in Rome"


def _scripted_model() -> Any:
    import importlib.util

    spec = importlib.util.spec_from_file_location("served_weather", GRAPHS / "weather.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # (pydantic resolves the model's annotations there)
    spec.loader.exec_module(module)
    return module.ScriptedModel()


def test_a_graph_agent_answers_for_its_threads_state(agents: AgentRegistry) -> None:
    found = graph_agent(agents, "weather")
    assert isinstance(found, ServedGraph) and found.graph_id == "weather"
    assert graph_agent(agents, "echo") is None and graph_agent(agents, "nobody") is None


def test_graph_specs_are_parsed_and_loaded(tmp_path: Path) -> None:
    assert parse_graphs(["a=m:g, b=./f.py:g", "c=x:y"]) == {
        "a": "m:g",
        "b": "./f.py:g",
        "c": "x:y",
    }
    for wrong in ("nameless", "=m:g", "a="):
        with pytest.raises(UsageError, match="NAME=module:attr"):
            parse_graphs([wrong])
    factory = load_graph("counter.py:make_graph", base=GRAPHS)
    assert set(factory.nodes) >= {"bump", "inner"}
    with pytest.raises(UsageError, match="has no 'missing'"):
        load_graph("counter.py:missing", base=GRAPHS)
    with pytest.raises(UsageError, match="not a compiled graph"):
        load_graph("weather.py:HERE_IS_NO_GRAPH", base=_module_with(tmp_path))
    with pytest.raises(UsageError, match="no graph file"):
        load_graph("./absent.py:graph", base=tmp_path)
    with pytest.raises(UsageError, match="cannot import graph module"):
        load_graph("no_such_module_here:graph", base=tmp_path)
    with pytest.raises(UsageError, match="module:attr"):
        load_graph("graph", base=tmp_path)


def _module_with(folder: Path) -> Path:
    (folder / "weather.py").write_text("HERE_IS_NO_GRAPH = 42\n")
    return folder


def test_a_langgraph_json_names_graphs_relative_to_itself(tmp_path: Path) -> None:
    config = tmp_path / "langgraph.json"
    config.write_text(json.dumps({"graphs": {"w": "./w.py:graph", "c": {"path": "./c.py:make"}}}))
    specs, base = graphs_of_config(config)
    assert specs == {"w": "./w.py:graph", "c": "./c.py:make"} and base == tmp_path.resolve()
    bad: list[Any] = [{"graphs": {}}, [], {"graphs": {"w": 3}}]
    for content in bad:
        config.write_text(json.dumps(content))
        with pytest.raises(UsageError, match="graph"):
            graphs_of_config(config)
    with pytest.raises(UsageError, match="cannot read"):
        graphs_of_config(tmp_path / "absent.json")
