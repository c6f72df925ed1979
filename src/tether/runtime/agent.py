"""Agents: async callables that receive a RunContext and return the run's output."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, overload

from tether.core.errors import AgentNotFound, UsageError

if TYPE_CHECKING:
    from tether.runtime.model_agent import ModelAgent
    from tether.runtime.models.base import Model
    from tether.runtime.run_context import RunContext
    from tether.runtime.tools import Tool

#: How many model and tool calls one run of a model agent may make, unless told otherwise
#: (here, not in runtime.model_agent: a registry, which every Service has, costs no tools,
#: models or pydantic to import).
DEFAULT_MAX_STEPS = 50

Agent = Callable[["RunContext"], Awaitable[Any]]


class AgentRegistry:
    """Agents by name; a run names the agent that executes it."""

    def __init__(self) -> None:
        self._agents: dict[str, Agent] = {}
        self._descriptions: dict[str, str] = {}
        self._tools: dict[str, list[Tool]] = {}

    def register(
        self,
        name: str,
        fn: Agent,
        *,
        description: str | None = None,
        tools: list[Tool] | None = None,
    ) -> Agent:
        """Add fn under name; tools are put in its RunContext (``ctx.tool(name, ...)``)."""
        if not name or not name.replace("-", "_").replace(".", "_").isidentifier():
            raise ValueError(f"invalid agent name {name!r}")
        self._agents[name] = fn
        self._descriptions[name] = description or (fn.__doc__ or "").strip().split("\n")[0]
        self._tools[name] = list(tools or [])
        return fn

    def tools(self, name: str) -> list[Tool]:
        """The tools registered with an agent."""
        self.get(name)
        return list(self._tools[name])

    def get(self, name: str) -> Agent:
        try:
            return self._agents[name]
        except KeyError:
            known = ", ".join(sorted(self._agents)) or "none"
            raise AgentNotFound(
                f"no agent named {name!r} is registered (known: {known})", agent=name
            ) from None

    def describe(self, name: str) -> str:
        self.get(name)
        return self._descriptions[name]

    def __contains__(self, name: object) -> bool:
        return name in self._agents

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(self._agents))

    def copy(self) -> AgentRegistry:
        other = AgentRegistry()
        other._agents = dict(self._agents)
        other._descriptions = dict(self._descriptions)
        other._tools = dict(self._tools)
        return other


#: The registry ``@tether.agent`` adds to; the built-in agents are registered on import.
default_registry = AgentRegistry()


@overload
def agent(
    name: str,
    *,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    registry: AgentRegistry | None = None,
) -> Callable[[Agent], Agent]: ...


@overload
def agent(
    name: str,
    *,
    instructions: str,
    model: Model | None = None,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    registry: AgentRegistry | None = None,
) -> ModelAgent: ...


def agent(
    name: str,
    *,
    instructions: str | None = None,
    model: Model | None = None,
    tools: Sequence[Tool | Callable[..., Any]] | None = None,
    max_steps: int = DEFAULT_MAX_STEPS,
    registry: AgentRegistry | None = None,
) -> Callable[[Agent], Agent] | ModelAgent:
    """Register an agent under name, with its tools.

    As a decorator (``@tether.agent("name")``) it registers the decorated async function. With
    ``instructions=`` it registers and returns a ModelAgent, the built-in loop over a model
    (model=, else the run's model) and the tools (Tools, or typed functions made into tools).
    """
    from tether.runtime.model_agent import ModelAgent
    from tether.runtime.tools import Tool
    from tether.runtime.tools import tool as make_tool

    target = registry or default_registry
    made = [t if isinstance(t, Tool) else make_tool(t) for t in tools or ()]
    if instructions is None:
        if model is not None or max_steps != DEFAULT_MAX_STEPS:
            raise UsageError(
                f"agent {name!r}: model= and max_steps= make a model agent, which needs "
                "instructions= too"
            )

        def decorate(fn: Agent) -> Agent:
            return target.register(name, fn, tools=made)

        return decorate
    looping = ModelAgent(name, instructions, model=model, max_steps=max_steps)
    first_line = instructions.strip().split("\n")[0]
    target.register(name, looping, description=first_line, tools=made)
    return looping
