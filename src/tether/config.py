"""Configuration from the environment, for the edges (CLI, HTTP service).

``TETHER_MODEL_BASE_URL``, ``TETHER_MODEL`` and ``TETHER_MODEL_API_KEY`` configure an
OpenAI-compatible model; when set, it is the default model of runs (the ``coder`` agent uses
it), and a run can still ask for ``input.model = "offline"``. ``model_catalog`` is the library's
own (``tether.open``, ``tether.open_async`` and a Worker read the same settings the same way).
``TETHER_AGENTS`` lists modules to import so that their ``@tether.agent`` functions are
registered.
"""

from __future__ import annotations

import importlib
import os
import sys

from tether.core.errors import UsageError
from tether.runtime.models.catalog import model_catalog

__all__ = ["import_agents", "model_catalog"]


def import_agents(modules: str | None) -> list[str]:
    """Import comma-separated modules that register agents; their names. As with
    ``python -m``, the current folder is searched first: ``--agents triage`` finds ./triage.py."""
    names = [m.strip() for m in (modules or "").split(",") if m.strip()]
    if names:
        _search_current_folder()
    for name in names:
        try:
            importlib.import_module(name)
        except ImportError as exc:
            if exc.name is not None and (name + ".").startswith(exc.name + "."):
                raise UsageError(
                    f"cannot import agent module {name!r}: no {exc.name!r} in the current "
                    f"folder ({os.getcwd()}) or on PYTHONPATH"
                ) from exc
            raise UsageError(f"cannot import agent module {name!r}: {exc}") from exc
    return names


def _search_current_folder() -> None:
    folder = os.getcwd()
    if folder not in sys.path and "" not in sys.path:
        sys.path.insert(0, folder)
