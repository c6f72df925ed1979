"""Service: the library API of tether, in one async facade over a Store.

Every edge (the sync facade, the HTTP API, the CLI, the UI) is a thin layer over this class. It
validates input, applies exact expiry on reads, scopes everything to one owner, and leaves
atomicity to the store. ``for_owner`` gives the same service seen by another owner.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tether.core.clock import Clock, SystemClock
from tether.runtime import limits
from tether.runtime.agent import AgentRegistry, default_registry
from tether.runtime.event_ops import EventOps
from tether.runtime.held_ops import HeldRunOps
from tether.runtime.instruments import Instruments
from tether.runtime.memory_ops import MemoryOps
from tether.runtime.message_ops import MessageOps
from tether.runtime.run_ops import RunOps
from tether.runtime.schedules import ScheduleOps
from tether.runtime.search_ops import SearchOps
from tether.runtime.session_ops import SessionOps
from tether.runtime.settings import RuntimeSettings
from tether.runtime.step_ops import StepOps
from tether.store.base import Store

if TYPE_CHECKING:
    from tether.runtime.executor import ModelResolver


class Service(
    SessionOps,
    SearchOps,
    MessageOps,
    RunOps,
    StepOps,
    MemoryOps,
    EventOps,
    ScheduleOps,
    HeldRunOps,
):
    """Sessions, runs, steps, memory, tool history, context, events and schedules for one
    owner. Each concept's operations are a mixin in a module of its own (runtime.session_ops,
    search_ops, message_ops, run_ops, step_ops, memory_ops, event_ops, schedules, held_ops);
    this class holds the state they share."""

    def __init__(
        self,
        store: Store,
        *,
        agents: AgentRegistry | None = None,
        clock: Clock | None = None,
        settings: RuntimeSettings | None = None,
        models: ModelResolver | None = None,
        owner: str | None = None,
        instruments: Instruments | None = None,
    ) -> None:
        self.store = store
        self.agents = agents or _builtin_agents()
        self.clock = clock or SystemClock()
        self.settings = settings or RuntimeSettings()
        self.models = models
        self.owner = limits.owner(self.settings.owner if owner is None else owner)
        #: Where runs created here are reported (None: the instruments installed when it
        #: happens).
        self.instruments = instruments

    def for_owner(self, owner: str) -> Service:
        """The same service, acting for another owner."""
        return Service(
            self.store,
            agents=self.agents,
            clock=self.clock,
            settings=self.settings,
            models=self.models,
            owner=owner,
            instruments=self.instruments,
        )

    async def close(self) -> None:
        """Close the store (every service sharing it becomes unusable)."""
        await self.store.close()


def _builtin_agents() -> AgentRegistry:
    from tether.runtime import builtin

    builtin.register(default_registry)
    return default_registry
