"""The agents tether ships: ``echo`` (deterministic, for tests and trials) and ``coder``.

Every Service registers them, a read too: each is imported when a run first calls it (the run
context, tools, pydantic and the coder's workspace then), not when it is registered.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from tether.runtime.agent import Agent, AgentRegistry

if TYPE_CHECKING:
    from tether.runtime.run_context import RunContext


def _on_first_call(module: str, name: str, doc: str) -> Agent:
    """The agent module.name, imported when a run first calls it; doc is the first line of its
    docstring, which the registry describes it by (a test checks that they agree)."""

    async def run(ctx: RunContext) -> Any:
        agent: Agent = getattr(importlib.import_module(module), name)
        return await agent(ctx)

    run.__name__ = run.__qualname__ = name
    run.__doc__ = doc
    return run


#: By name (not bound as ``echo`` and ``coder`` here: importing the submodules of those names
#: sets them on this package).
AGENTS = {
    "echo": _on_first_call(
        "tether.runtime.builtin.echo",
        "echo",
        "Echoes its input; can record steps, sleep, wait for a person or fail, on request.",
    ),
    "coder": _on_first_call(
        "tether.runtime.builtin.coder.agent",
        "coder",
        "The seed's coding assistant: analyses, fixes and verifies a project in a workspace.",
    ),
}


def register(registry: AgentRegistry) -> AgentRegistry:
    """Add the built-in agents to registry (keeping any of the same name already there)."""
    for name, fn in AGENTS.items():
        if name not in registry:
            registry.register(name, fn)
    return registry
