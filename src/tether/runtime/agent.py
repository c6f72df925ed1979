"""Agents: async callables that receive a RunContext and return the run's output."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator
from typing import TYPE_CHECKING, Any

from tether.core.errors import AgentNotFound

if TYPE_CHECKING:
    from tether.runtime.run_context import RunContext

Agent = Callable[["RunContext"], Awaitable[Any]]


class AgentRegistry:
    """Agents by name; a run names the agent that executes it."""

    def __init__(self) -> None:
        self._agents: dict[str, Agent] = {}
        self._descriptions: dict[str, str] = {}

    def register(self, name: str, fn: Agent, *, description: str | None = None) -> Agent:
        if not name or not name.replace("-", "_").replace(".", "_").isidentifier():
            raise ValueError(f"invalid agent name {name!r}")
        self._agents[name] = fn
        self._descriptions[name] = description or (fn.__doc__ or "").strip().split("\n")[0]
        return fn

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
        return other


#: The registry ``@tether.agent`` adds to; the built-in agents are registered on import.
default_registry = AgentRegistry()


def agent(name: str, *, registry: AgentRegistry | None = None) -> Callable[[Agent], Agent]:
    """Register the decorated async function as an agent under name."""

    def decorate(fn: Agent) -> Agent:
        return (registry or default_registry).register(name, fn)

    return decorate
