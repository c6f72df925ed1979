"""Configuration from the environment, for the edges (CLI, HTTP service).

``TETHER_MODEL_BASE_URL``, ``TETHER_MODEL`` and ``TETHER_MODEL_API_KEY`` configure an
OpenAI-compatible model; when set, it is the default model of runs (the ``coder`` agent uses
it), and a run can still ask for ``input.model = "offline"``. ``TETHER_AGENTS`` lists modules
to import so that their ``@tether.agent`` functions are registered.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Mapping

from tether.core.errors import UsageError
from tether.runtime.builtin.coder import OfflineCoderModel
from tether.runtime.models.base import Model
from tether.runtime.models.catalog import ModelCatalog
from tether.runtime.models.openai import OpenAIChatModel


def model_catalog(env: Mapping[str, str] | None = None) -> ModelCatalog:
    """The models the environment configures (the offline policy is always there)."""
    env = os.environ if env is None else env
    models: dict[str, Model] = {"offline": OfflineCoderModel()}
    base_url = env.get("TETHER_MODEL_BASE_URL")
    if not base_url:
        return ModelCatalog(models)
    name = env.get("TETHER_MODEL")
    if not name:
        raise UsageError("TETHER_MODEL_BASE_URL is set but TETHER_MODEL (the model name) is not")
    models[name] = OpenAIChatModel(
        base_url=base_url, model=name, api_key=env.get("TETHER_MODEL_API_KEY")
    )
    return ModelCatalog(models, default=name)


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
