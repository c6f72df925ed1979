"""Models behind one protocol: scripted ones for tests and the demo, OpenAI-compatible for real."""

from tether.runtime.models.base import Model, ModelResponse, StreamingModel, ToolCall
from tether.runtime.models.scripted import ScriptedModel, UnconsumedResponses, UnexpectedRequest

__all__ = [
    "Model",
    "ModelResponse",
    "ScriptedModel",
    "StreamingModel",
    "ToolCall",
    "UnconsumedResponses",
    "UnexpectedRequest",
]
