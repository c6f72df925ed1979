"""Finding the graphs an operator serves: ``NAME=module:attr`` or ``NAME=./path.py:attr``
(``--graph``, ``TETHER_GRAPHS``), or the ``graphs`` map of a ``langgraph.json``; each made a
ServedGraph and registered as an agent."""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import inspect
import json
import sys
from pathlib import Path
from typing import Any

from langgraph.graph import StateGraph
from langgraph.pregel import Pregel as _Pregel

from tether.core.errors import UsageError
from tether.integrations.langgraph.served import ServedGraph
from tether.runtime.agent import AgentRegistry

#: A compiled graph, whatever its state, input, output and context.
Pregel = _Pregel[Any, Any, Any, Any]


def parse_graphs(values: list[str]) -> dict[str, str]:
    """``NAME=spec`` entries (repeated, or comma-separated) as {name: spec}."""
    found: dict[str, str] = {}
    for value in values:
        for entry in (e.strip() for e in value.split(",")):
            if not entry:
                continue
            name, sep, spec = entry.partition("=")
            if not sep or not name.strip() or not spec.strip():
                raise UsageError(f"--graph {entry!r}: give NAME=module:attr or NAME=./file.py:attr")
            found[name.strip()] = spec.strip()
    return found


def graphs_of_config(path: str | Path) -> tuple[dict[str, str], Path]:
    """The ``graphs`` map of a langgraph.json, and the folder its paths are relative to."""
    file = Path(path)
    try:
        config = json.loads(file.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read the LangGraph config {str(file)!r}: {exc}") from exc
    graphs = config.get("graphs") if isinstance(config, dict) else None
    if not isinstance(graphs, dict) or not graphs:
        raise UsageError(f'{str(file)!r} has no "graphs" map of name: "./file.py:attr"')
    specs: dict[str, str] = {}
    for name, spec in graphs.items():
        if isinstance(spec, dict):
            spec = spec.get("path")
        if not isinstance(spec, str):
            raise UsageError(f'{str(file)!r}: graph {name!r} needs a "./file.py:attr" path')
        specs[str(name)] = spec
    return specs, file.resolve().parent


def load_graph(spec: str, *, base: Path | None = None) -> Pregel:
    """The compiled graph spec names (a compiled graph, a StateGraph, or a factory of one)."""
    where, sep, attr = spec.rpartition(":")
    if not sep or not where or not attr:
        raise UsageError(f"graph {spec!r}: give module:attr or ./file.py:attr")
    module = _module(where, base or Path.cwd())
    try:
        found = getattr(module, attr)
    except AttributeError:
        raise UsageError(f"graph {spec!r}: {where} has no {attr!r}") from None
    return _compiled(found, spec)


def _module(where: str, base: Path) -> Any:
    if where.endswith(".py") or "/" in where or "\\" in where:
        file = (base / where).resolve()
        if not file.is_file():
            raise UsageError(f"no graph file {str(file)!r}")
        name = f"tether_graph_{abs(hash(str(file)))}"
        module_spec = importlib.util.spec_from_file_location(name, file)
        if module_spec is None or module_spec.loader is None:
            raise UsageError(f"cannot load {str(file)!r} as a Python module")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[name] = module
        module_spec.loader.exec_module(module)
        return module
    folder = str(base)
    if folder not in sys.path:
        sys.path.insert(0, folder)
    try:
        return importlib.import_module(where)
    except ImportError as exc:
        raise UsageError(f"cannot import graph module {where!r}: {exc}") from exc


def _compiled(found: Any, spec: str) -> Pregel:
    if isinstance(found, StateGraph):
        found = found.compile()
    if isinstance(found, _Pregel):
        return found
    if callable(found):
        wanted = len(inspect.signature(found).parameters)
        made = found({}) if wanted else found()
        if inspect.isawaitable(made):
            made = asyncio.run(_await(made))
        return _compiled_only(made, spec)
    raise UsageError(f"graph {spec!r} is not a compiled graph nor a function making one")


async def _await(made: Any) -> Any:
    return await made


def _compiled_only(made: Any, spec: str) -> Pregel:
    if isinstance(made, StateGraph):
        made = made.compile()
    if not isinstance(made, _Pregel):
        raise UsageError(f"graph {spec!r}: its factory returned {type(made).__name__}, not a graph")
    return made


def register_graphs(
    specs: dict[str, str], registry: AgentRegistry, *, base: Path | None = None
) -> list[str]:
    """Load each graph and register it as the agent of its name; the names."""
    for name, spec in specs.items():
        graph = load_graph(spec, base=base)
        try:
            registry.register(name, ServedGraph(name, graph), description=f"LangGraph graph {spec}")
        except ValueError as exc:
            raise UsageError(f"graph {name!r}: {exc}") from exc
    return list(specs)
