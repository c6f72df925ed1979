"""What the Agents SDK's trace spans say, as tether steps: a model call (``generation`` or
``response`` span) with its usage, a tool call (``function`` span: arguments and result
together), a handoff or a guardrail result (a note). Errors keep the SDK's message."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from agents.tracing import (
    AgentSpanData,
    FunctionSpanData,
    GenerationSpanData,
    GuardrailSpanData,
    HandoffSpanData,
    ResponseSpanData,
    Span,
)

from tether.core.run import ErrorInfo
from tether.core.step import StepKind
from tether.core.usage import Usage
from tether.integrations._json import jsonable


@dataclass(slots=True)
class StepRecord:
    """A step to record, as a span described it."""

    kind: StepKind
    name: str
    input: Any = None
    output: Any = None
    #: A model call's tokens (None: the span did not say; its turn may).
    usage: Usage | None = None
    error: ErrorInfo | None = None

    @property
    def unanswered(self) -> bool:
        """A tool call that ended with no result and no error: it may await approval."""
        return self.kind is StepKind.TOOL_CALL and self.output is None and self.error is None


def span_step(span: Span[Any]) -> StepRecord | None:
    """The step a span stands for, or None."""
    data, error = span.span_data, span_error(span)
    if isinstance(data, FunctionSpanData):
        given = jsonable(_parsed(data.input))
        return StepRecord(StepKind.TOOL_CALL, data.name, given, jsonable(data.output), error=error)
    if isinstance(data, GenerationSpanData):
        name = data.model or "model"
        return StepRecord(StepKind.MODEL_CALL, name, usage=usage_of(data.usage), error=error)
    if isinstance(data, ResponseSpanData):
        response = data.response
        name = getattr(response, "model", None) or "model"
        used = getattr(response, "usage", None)
        tokens = None if used is None else usage_of(used.model_dump())
        output = {"response_id": getattr(response, "id", None)}
        return StepRecord(StepKind.MODEL_CALL, name, output=output, usage=tokens, error=error)
    if isinstance(data, HandoffSpanData):
        handoff = {"from_agent": data.from_agent, "to_agent": data.to_agent}
        return StepRecord(StepKind.NOTE, "handoff", handoff)
    if isinstance(data, GuardrailSpanData):
        return StepRecord(
            StepKind.NOTE, "guardrail", {"name": data.name}, {"triggered": data.triggered}
        )
    return None


def usage_of(tokens: dict[str, Any] | None) -> Usage | None:
    """One model call's usage from the SDK's token counts (None when there are none)."""
    if not tokens:
        return None
    given = [tokens.get("input_tokens"), tokens.get("output_tokens")]
    counts = [n if isinstance(n, int) and n > 0 else 0 for n in given]
    if not any(counts):
        return None
    return Usage(input_tokens=counts[0], output_tokens=counts[1], requests=1)


#: The error type a failed span of each kind gives its step or run.
_ERROR_TYPES: dict[type[Any], str] = {
    AgentSpanData: "agent_error",
    FunctionSpanData: "tool_error",
    GenerationSpanData: "model_error",
    ResponseSpanData: "model_error",
}


def span_error(span: Span[Any]) -> ErrorInfo | None:
    """The error a span ended with (the SDK's message, with its detail when it traced one)."""
    found = span.error
    if not found:
        return None
    message = str(found.get("message") or "error")
    data = found.get("data")
    if isinstance(data, dict) and isinstance(data.get("error"), str):
        message = f"{message}: {data['error']}"
    return ErrorInfo(type=_ERROR_TYPES.get(type(span.span_data), "error"), message=message)


def _parsed(arguments: Any) -> Any:
    """A tool's arguments: the JSON text parsed (as given when it is not JSON)."""
    if isinstance(arguments, str):
        try:
            return json.loads(arguments)
        except ValueError:
            return arguments
    return arguments
