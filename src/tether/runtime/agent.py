"""Agents: async callables that receive a RunContext and return the run's output."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from tether.core.errors import AgentNotFound
from tether.runtime.tools import Tool

if TYPE_CHECKING:
    from tether.runtime.run_context import RunContext

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


def agent(
    name: str, *, tools: list[Tool] | None = None, registry: AgentRegistry | None = None
) -> Callable[[Agent], Agent]:
    """Register the decorated async function as an agent under name, with its tools."""

    def decorate(fn: Agent) -> Agent:
        return (registry or default_registry).register(name, fn, tools=tools)

    return decorate
