"""LangGraph on tether (``pip install 'tether[langgraph]'``): a graph's checkpoints in the
session of its thread, and its long-term memory in the owner's user memory.

    from tether.integrations.langgraph import TetherCheckpointSaver, TetherStore

    saver = TetherCheckpointSaver("tether.db")       # or a tether.open(...) handle
    graph = builder.compile(checkpointer=saver, store=TetherStore(saver.tether))
"""

from __future__ import annotations

from tether.core.errors import MissingExtra

try:
    import langgraph.checkpoint.base
    import langgraph.store.base  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised without the extra
    raise MissingExtra("tether.integrations.langgraph", "langgraph", exc.name) from exc

from tether.integrations.langgraph.saver import TetherCheckpointSaver
from tether.integrations.langgraph.store import TetherStore

__all__ = ["TetherCheckpointSaver", "TetherStore"]
