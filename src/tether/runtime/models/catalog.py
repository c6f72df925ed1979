"""Which model a run gets: ``input.model`` names one of the configured models, else the
default (None lets the agent choose its own, e.g. coder's offline policy).

``model_catalog()`` reads the one configuration every entry point shares (``tether.open``,
``tether.open_async``, a Worker, ``tether serve``, ``tether worker``): ``TETHER_MODEL_BASE_URL``,
``TETHER_MODEL`` and ``TETHER_MODEL_API_KEY`` name an OpenAI-compatible server, its model and key;
``TETHER_MODEL_STREAM=1`` has it stream its answers (token chunks in the runs' streams).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from tether.core.errors import MissingExtra, UsageError

if TYPE_CHECKING:
    from tether.core.run import Run
    from tether.runtime.builtin.coder.policy import OfflineCoderModel
    from tether.runtime.models.base import Model, ModelResponse

#: What to do when a run needs a model and none is configured (the ModelError says it).
HOW_TO_CONFIGURE = (
    "set TETHER_MODEL_BASE_URL (an OpenAI-compatible server, e.g. http://127.0.0.1:11434/v1), "
    "TETHER_MODEL (the model's name) and, if the server wants one, TETHER_MODEL_API_KEY in the "
    "environment of the process that runs it; or pass models= to tether.open / "
    "tether.open_async / Worker, or give the agent a model"
)


class ModelCatalog:
    """Configured models by name; callable as the runtime's model resolver."""

    def __init__(self, models: Mapping[str, Model] | None = None, default: str | None = None):
        self.models = dict(models or {})
        if default is not None and default not in self.models:
            raise UsageError(f"the default model {default!r} is not configured")
        self.default = default

    def __call__(self, run: Run) -> Model | None:
        name = run.input.get("model") or self.default
        if name is None:
            return None
        if not isinstance(name, str) or name not in self.models:
            known = ", ".join(sorted(self.models)) or "none"
            raise UsageError(f"no model named {name!r} is configured (configured: {known})")
        return self.models[name]


class OfflineModel:
    """The offline coder policy as the catalog's ``offline`` model, imported when a run first
    uses it (every ``tether.open`` makes a catalog; a read uses no model)."""

    #: The policy's own name (tests/unit/test_lazy_start.py checks that they agree).
    name = "offline-coder"

    def __init__(self) -> None:
        self._policy: OfflineCoderModel | None = None

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        return await self._loaded().complete(messages, tools)

    def _loaded(self) -> OfflineCoderModel:
        if self._policy is None:
            from tether.runtime.builtin.coder.policy import OfflineCoderModel

            self._policy = OfflineCoderModel()
        return self._policy


def model_catalog(env: Mapping[str, str] | None = None) -> ModelCatalog:
    """The models the environment configures (default: ``os.environ``): the offline coder
    policy as ``offline`` always, and the ``TETHER_MODEL`` at ``TETHER_MODEL_BASE_URL`` as the
    default model when set."""
    env = os.environ if env is None else env
    models: dict[str, Model] = {"offline": OfflineModel()}
    base_url = env.get("TETHER_MODEL_BASE_URL")
    if not base_url:
        return ModelCatalog(models)
    name = env.get("TETHER_MODEL")
    if not name:
        raise UsageError("TETHER_MODEL_BASE_URL is set but TETHER_MODEL (the model name) is not")
    try:
        from tether.runtime.models.openai import OpenAIChatModel
    except ImportError as exc:  # the adapter is an HTTP client: tether[client]
        raise MissingExtra("the OpenAI-compatible model", "client", exc.name) from exc
    models[name] = OpenAIChatModel(
        base_url=base_url,
        model=name,
        api_key=env.get("TETHER_MODEL_API_KEY") or None,
        stream=env.get("TETHER_MODEL_STREAM", "").strip().lower() in ("1", "true", "yes"),
    )
    return ModelCatalog(models, default=name)
