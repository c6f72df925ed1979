"""Models behind one protocol: scripted ones for tests and the demo, OpenAI-compatible for real.

Its names load on first use: ``tether.open`` reads the model catalog (``.catalog``) without the
models' records.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tether.runtime.models.base import Model, ModelResponse, StreamingModel, ToolCall
    from tether.runtime.models.scripted import (
        ScriptedModel,
        UnconsumedResponses,
        UnexpectedRequest,
    )

__all__ = [
    "Model",
    "ModelResponse",
    "ScriptedModel",
    "StreamingModel",
    "ToolCall",
    "UnconsumedResponses",
    "UnexpectedRequest",
]

_HOME_OF = {
    **dict.fromkeys(("Model", "ModelResponse", "StreamingModel", "ToolCall"), "base"),
    **dict.fromkeys(("ScriptedModel", "UnconsumedResponses", "UnexpectedRequest"), "scripted"),
}


def __getattr__(name: str) -> Any:
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{home}"), name)
