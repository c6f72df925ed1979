"""Tools an agent can call: built from typed Python functions (JSON schema from the signature).

A tool's errors are results, not crashes: ``Tool.invoke`` raises ToolError with a message meant
for the model, and the run context records the failed call and hands the message back.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, overload

import pydantic

from tether.core.serde import to_data

#: Tool outputs longer than this (as JSON text) are cut, with a note saying how much was cut.
DEFAULT_MAX_OUTPUT_CHARS = 16_000


class ToolError(Exception):
    """A tool refused or failed; the message is given back to the model as the result.
    Raised by ``ctx.tool``, it names the tool's step: a run it ends has that step in
    ``run.error.step_id``."""

    def __init__(self, *args: object, step_id: str | None = None) -> None:
        super().__init__(*args)
        self.step_id = step_id


@dataclass(frozen=True)
class Tool:
    """A callable an agent may use, with the JSON schema of its arguments."""

    name: str
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any]
    #: The run waits for a person's approval before each call.
    needs_approval: bool = False
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS
    _validator: Any = field(default=None, repr=False, compare=False)

    def spec(self) -> dict[str, Any]:
        """The OpenAI-style function description of the tool."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    async def invoke(self, arguments: dict[str, Any]) -> Any:
        """Validate arguments, call the function and cap the output; ToolError on failure."""
        if not isinstance(arguments, dict):
            raise ToolError(f"{self.name}: arguments must be a JSON object")
        try:
            bound = self._validator.validate_python(arguments) if self._validator else arguments
        except pydantic.ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors()
            )
            raise ToolError(f"{self.name}: invalid arguments ({problems})") from exc
        kwargs = dict(bound)
        try:
            if inspect.iscoroutinefunction(self.fn):
                result = await self.fn(**kwargs)
            else:  # a blocking function must not stall every other run on the loop
                result = await asyncio.to_thread(self.fn, **kwargs)
                if inspect.isawaitable(result):
                    result = await result
        except ToolError as exc:
            if "\x00" not in str(exc):
                raise
            raise ToolError(str(exc).replace("\x00", "\ufffd")) from exc
        except Exception as exc:  # a tool crashing is a result the model should see
            text = f"{self.name} failed: {type(exc).__name__}: {exc}".replace("\x00", "\ufffd")
            raise ToolError(text) from exc
        return cap_output(result, self.max_output_chars)


def cap_output(value: Any, limit: int) -> Any:
    """value as JSON data, or a truncated text of it when its JSON form exceeds limit
    characters; ToolError when it is not JSON (NaN included). NUL characters (a binary file
    read as text, say), which no store keeps, become U+FFFD."""
    value = to_data(value)
    try:
        text = value if isinstance(value, str) else json.dumps(value, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ToolError(f"the tool's output is not JSON: {exc}") from exc
    if "\x00" in text or "\\u0000" in text:
        value = _without_nul(value)
        text = value if isinstance(value, str) else json.dumps(value)
    if len(text) <= limit:
        return value
    cut = len(text) - limit
    return f"{text[:limit]}\n… [output truncated: {cut} more characters]"


def _without_nul(value: Any) -> Any:
    """JSON data with every NUL character, in keys and texts, replaced by U+FFFD."""
    if isinstance(value, str):
        return value.replace("\x00", "\ufffd")
    if isinstance(value, list):
        return [_without_nul(item) for item in value]
    if isinstance(value, dict):
        return {_without_nul(k): _without_nul(v) for k, v in value.items()}
    return value


@overload
def tool(fn: Callable[..., Any]) -> Tool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> Callable[[Callable[..., Any]], Tool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    needs_approval: bool = False,
    max_output_chars: int = DEFAULT_MAX_OUTPUT_CHARS,
) -> Tool | Callable[[Callable[..., Any]], Tool]:
    """Make a Tool from a typed function (usable as ``@tool`` or ``@tool(name=…)``)."""

    def build(func: Callable[..., Any]) -> Tool:
        model = _arguments_model(func)
        schema = model.model_json_schema()
        schema.pop("title", None)
        for prop in schema.get("properties", {}).values():
            prop.pop("title", None)
        return Tool(
            name=name or func.__name__,
            description=description or inspect.getdoc(func) or func.__name__,
            parameters=schema,
            fn=func,
            needs_approval=needs_approval,
            max_output_chars=max_output_chars,
            _validator=_Validator(model),
        )

    return build(fn) if fn is not None else build


class _Validator:
    def __init__(self, model: type[pydantic.BaseModel]) -> None:
        self._model = model

    def validate_python(self, arguments: dict[str, Any]) -> dict[str, Any]:
        parsed = self._model.model_validate(arguments)
        return {
            info.alias or name: getattr(parsed, name)
            for name, info in type(parsed).model_fields.items()
        }


def _arguments_model(func: Callable[..., Any]) -> type[pydantic.BaseModel]:
    hints = inspect.get_annotations(func, eval_str=True)
    fields: dict[str, Any] = {}
    for i, param in enumerate(inspect.signature(func).parameters.values()):
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            raise TypeError(f"tool {func.__name__}: *args and **kwargs are not supported")
        annotation = hints.get(param.name, Any)
        default = ... if param.default is param.empty else param.default
        # Fields get neutral names and the parameter's name as alias: a parameter may be called
        # like a BaseModel attribute (schema, json, copy, model_config) or start with "_".
        fields[f"p{i}"] = (annotation, pydantic.Field(default, alias=param.name))
    return pydantic.create_model(
        f"{func.__name__}_arguments",
        __config__=pydantic.ConfigDict(extra="forbid"),
        **fields,
    )


class ToolRegistry:
    """Tools by name."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        for t in tools:
            self.add(t)

    def add(self, t: Tool) -> None:
        if t.name in self._tools:
            raise ValueError(f"a tool named {t.name!r} is already registered")
        self._tools[t.name] = t

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def specs(self) -> list[dict[str, Any]]:
        return [t.spec() for t in self._tools.values()]

    def __iter__(self) -> Any:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)


ToolFunction = Callable[..., Awaitable[Any] | Any]
