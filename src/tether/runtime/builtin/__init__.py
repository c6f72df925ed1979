"""The agents tether ships: ``echo`` (deterministic, for tests and trials) and ``coder``."""

from __future__ import annotations

from tether.runtime.agent import AgentRegistry
from tether.runtime.builtin.coder import coder
from tether.runtime.builtin.echo import echo


def register(registry: AgentRegistry) -> AgentRegistry:
    """Add the built-in agents to registry (keeping any of the same name already there)."""
    for name, fn in (("echo", echo), ("coder", coder)):
        if name not in registry:
            registry.register(name, fn)
    return registry
