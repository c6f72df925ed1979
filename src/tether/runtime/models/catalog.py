"""Which model a run gets: ``input.model`` names one of the configured models, else the
default (None lets the agent choose its own, e.g. coder's offline policy)."""

from __future__ import annotations

from collections.abc import Mapping

from tether.core.errors import UsageError
from tether.core.run import Run
from tether.runtime.models.base import Model


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
