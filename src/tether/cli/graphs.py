"""``--graph`` and ``--langgraph-config`` of ``tether serve`` and ``tether worker``: LangGraph
graphs registered as agents (extra: langgraph)."""

from __future__ import annotations

from typing import Annotated

import typer

from tether.core.errors import MissingExtra
from tether.runtime.agent import default_registry

GraphOption = Annotated[
    list[str] | None,
    typer.Option(
        "--graph",
        envvar="TETHER_GRAPHS",
        help="A LangGraph graph to serve as NAME=module:attr or NAME=./file.py:attr (a compiled "
        "graph or a function making one); repeatable, or comma-separated (extra: langgraph).",
    ),
]
LangGraphConfigOption = Annotated[
    str | None,
    typer.Option(
        "--langgraph-config",
        envvar="TETHER_LANGGRAPH_CONFIG",
        help='A langgraph.json whose "graphs" map names to ./file.py:attr: serve them all.',
    ),
]


def register_graphs(graphs: list[str] | None, config: str | None) -> list[str]:
    """Load and register the graphs given; their names (none: nothing is imported)."""
    if not graphs and not config:
        return []
    try:
        from tether.integrations.langgraph import loading
    except ModuleNotFoundError as exc:
        raise MissingExtra("--graph", "langgraph", exc.name) from exc
    names: list[str] = []
    if config:
        specs, base = loading.graphs_of_config(config)
        names += loading.register_graphs(specs, default_registry, base=base)
    names += loading.register_graphs(loading.parse_graphs(graphs or []), default_registry)
    return names
