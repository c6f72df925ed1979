"""An adapter for any OpenAI-compatible chat-completions server, with tool calling.

Base URL, key and model name come from configuration. 429 and 5xx answers (and connection
failures) are retried with exponential backoff, honouring ``Retry-After``; any other error
answer becomes a ModelError carrying the provider's own message.

With ``stream=True`` (``TETHER_MODEL_STREAM=1``) ``complete_stream`` asks for ``stream: true``
and reads the answer's Server-Sent Events chunks, handing each piece of text on as it comes; a
stream that breaks once it has begun is a ModelError (it is not retried, its text being out).
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeVar

import httpx

from tether.core.errors import ModelError
from tether.core.usage import Usage
from tether.runtime.models.base import ModelResponse, TextSink, ToolCall, as_messages

_RETRYABLE = {408, 409, 429, 500, 502, 503, 504}
T = TypeVar("T")


class OpenAIChatModel:
    """A model behind ``POST {base_url}/chat/completions``."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str | None = None,
        timeout: float = 120.0,
        max_retries: int = 4,
        backoff: float = 0.5,
        client: httpx.AsyncClient | None = None,
        stream: bool = False,
    ) -> None:
        self.name = model
        #: complete_stream streams the answer (else it is complete()).
        self.stream = stream
        self.model = model
        self._url = base_url.rstrip("/") + "/chat/completions"
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._timeout = timeout
        self._max_retries = max_retries
        self._backoff = backoff
        self._client = client

    async def complete(
        self, messages: Sequence[Mapping[str, Any] | ModelResponse], tools: list[dict[str, Any]]
    ) -> ModelResponse:
        body = await self._request(self._payload(messages, tools), _read_json)
        return _parse(body, self.model)

    async def complete_stream(
        self,
        messages: Sequence[Mapping[str, Any] | ModelResponse],
        tools: list[dict[str, Any]],
        on_text: TextSink,
    ) -> ModelResponse:
        if not self.stream:
            return await self.complete(messages, tools)
        payload = self._payload(messages, tools)
        payload["stream"] = True
        payload["stream_options"] = {"include_usage": True}

        async def read(response: httpx.Response) -> ModelResponse:
            return await _read_stream(response, on_text, self.model)

        return await self._request(payload, read)

    def _payload(
        self, messages: Sequence[Mapping[str, Any] | ModelResponse], tools: list[dict[str, Any]]
    ) -> dict[str, Any]:
        wired = _wire_messages(as_messages(messages))
        payload: dict[str, Any] = {"model": self.model, "messages": wired}
        if tools:
            payload["tools"] = tools
        return payload

    async def _request(
        self, payload: dict[str, Any], read: Callable[[httpx.Response], Awaitable[T]]
    ) -> T:
        """read(response) of the first successful answer, retrying what may be retried."""
        client = self._client or httpx.AsyncClient(timeout=self._timeout)
        try:
            for attempt in range(self._max_retries + 1):
                last = attempt == self._max_retries
                try:
                    async with client.stream(
                        "POST", self._url, json=payload, headers=self._headers
                    ) as response:
                        if response.status_code < 400:
                            return await read(response)
                        await response.aread()
                except httpx.TransportError as exc:
                    if last:
                        raise ModelError(f"cannot reach the model at {self._url}: {exc}") from exc
                    await asyncio.sleep(self._delay(attempt, None))
                    continue
                if response.status_code in _RETRYABLE and not last:
                    await asyncio.sleep(self._delay(attempt, response.headers.get("retry-after")))
                    continue
                raise ModelError(
                    f"the model server refused the request ({response.status_code}): "
                    f"{_provider_message(response)}",
                    status=response.status_code,
                )
            raise AssertionError("unreachable")
        finally:
            if self._client is None:
                await client.aclose()

    def _delay(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(float(retry_after), 60.0)
            except ValueError:
                pass
        return float(self._backoff * 2.0**attempt * (1 + random.random() / 4))


async def _read_json(response: httpx.Response) -> dict[str, Any]:
    await response.aread()
    try:
        data = response.json()
    except ValueError as exc:
        raise ModelError("the model server answered with invalid JSON") from exc
    if not isinstance(data, dict):
        raise ModelError("the model server answered with an unexpected body")
    return data


async def _read_stream(response: httpx.Response, on_text: TextSink, model: str) -> ModelResponse:
    """The reply a ``stream: true`` answer's chunks add up to, its text handed on as it comes."""
    reply = _Assembled(model)
    try:
        async for line in response.aiter_lines():
            if not line.startswith("data:"):
                continue  # blank lines, comments, event names
            data = line[5:].strip()
            if data == "[DONE]":
                break
            text = reply.add(_chunk_json(data))
            if text:
                await on_text(text)
    except httpx.TransportError as exc:
        raise ModelError(f"the model server's stream broke off: {exc}") from exc
    return reply.response()


def _chunk_json(data: str) -> dict[str, Any]:
    try:
        chunk = json.loads(data)
    except ValueError as exc:
        raise ModelError("the model server streamed a chunk that is not JSON") from exc
    if not isinstance(chunk, dict):
        raise ModelError("the model server streamed an unexpected chunk")
    if isinstance(chunk.get("error"), dict | str):
        raise ModelError(f"the model server failed while streaming: {_error_text(chunk)}")
    return chunk


class _Assembled:
    """A streamed answer put together: its text, tool calls (by index), usage and model."""

    def __init__(self, model: str) -> None:
        self.model = model
        self.text: list[str] = []
        self.calls: dict[int, dict[str, Any]] = {}
        self.usage: dict[str, Any] = {}
        self.finish_reason: str | None = None

    def add(self, chunk: dict[str, Any]) -> str:
        """Take one chunk in; the text it adds."""
        self.model = str(chunk.get("model") or self.model)
        if isinstance(chunk.get("usage"), dict):
            self.usage = chunk["usage"]
        choices = chunk.get("choices") or []
        if not choices or not isinstance(choices[0], dict):
            return ""
        choice = choices[0]
        self.finish_reason = choice.get("finish_reason") or self.finish_reason
        delta = choice.get("delta") or {}
        for part in delta.get("tool_calls") or []:
            call = self.calls.setdefault(int(part.get("index", len(self.calls))), {"args": []})
            fn = part.get("function") or {}
            call["id"] = part.get("id") or call.get("id")
            call["name"] = fn.get("name") or call.get("name")
            call["args"].append(fn.get("arguments") or "")
        text = delta.get("content")
        if isinstance(text, str) and text:
            self.text.append(text)
            return text
        return ""

    def response(self) -> ModelResponse:
        calls = [
            {
                "id": c.get("id"),
                "function": {"name": c.get("name"), "arguments": "".join(c["args"])},
            }
            for _, c in sorted(self.calls.items())
        ]
        message = {"content": "".join(self.text) or None, "tool_calls": calls}
        choice = {"message": message, "finish_reason": self.finish_reason}
        return _parse({"choices": [choice], "usage": self.usage, "model": self.model}, self.model)


def _wire_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Messages as the wire wants them: tool-call arguments are JSON strings."""
    wired = []
    for message in messages:
        out = {k: v for k, v in message.items() if v is not None or k == "content"}
        if message.get("tool_calls"):
            out["tool_calls"] = [
                {
                    "id": call["id"],
                    "type": "function",
                    "function": {
                        "name": call["function"]["name"],
                        "arguments": _as_json_text(call["function"]["arguments"]),
                    },
                }
                for call in message["tool_calls"]
            ]
        wired.append(out)
    return wired


def _as_json_text(arguments: Any) -> str:
    return arguments if isinstance(arguments, str) else json.dumps(arguments)


def _parse(body: dict[str, Any], model: str) -> ModelResponse:
    try:
        choice = body["choices"][0]
        message = choice["message"]
    except (KeyError, IndexError, TypeError) as exc:
        raise ModelError("the model server's answer has no choices[0].message") from exc
    calls = []
    for call in message.get("tool_calls") or []:
        fn = call.get("function") or {}
        raw = fn.get("arguments") or "{}"
        try:
            arguments = json.loads(raw) if isinstance(raw, str) else dict(raw)
        except ValueError:
            arguments = {"_unparsed": raw}
        if not isinstance(arguments, dict):
            arguments = {"value": arguments}
        calls.append(
            ToolCall(id=call.get("id") or "", name=fn.get("name", ""), arguments=arguments)
        )
    usage = body.get("usage") or {}
    return ModelResponse(
        content=message.get("content"),
        tool_calls=calls,
        usage=Usage(
            input_tokens=int(usage.get("prompt_tokens", 0)),
            output_tokens=int(usage.get("completion_tokens", 0)),
            requests=1,
        ),
        model=str(body.get("model") or model),
        finish_reason=choice.get("finish_reason"),
    )


def _provider_message(response: httpx.Response) -> str:
    try:
        data = response.json()
    except ValueError:
        return response.text[:300] or response.reason_phrase
    return _error_text(data)


def _error_text(data: Any) -> str:
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(data)[:300]
