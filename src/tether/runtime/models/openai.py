"""An adapter for any OpenAI-compatible chat-completions server, with tool calling.

Base URL, key and model name come from configuration. 429 and 5xx answers (and connection
failures) are retried with exponential backoff, honouring ``Retry-After``; any other error
answer becomes a ModelError carrying the provider's own message.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections.abc import Mapping, Sequence
from typing import Any

import httpx

from tether.core.errors import ModelError
from tether.core.usage import Usage
from tether.runtime.models.base import ModelResponse, ToolCall, as_messages

_RETRYABLE = {408, 409, 429, 500, 502, 503, 504}


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
    ) -> None:
        self.name = model
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
        wired = _wire_messages(as_messages(messages))
        payload: dict[str, Any] = {"model": self.model, "messages": wired}
        if tools:
            payload["tools"] = tools
        body = await self._post(payload)
        return _parse(body, self.model)

    async def _post(self, payload: dict[str, Any]) -> dict[str, Any]:
        client = self._client or httpx.AsyncClient(timeout=self._timeout)
        try:
            for attempt in range(self._max_retries + 1):
                last = attempt == self._max_retries
                try:
                    response = await client.post(self._url, json=payload, headers=self._headers)
                except httpx.TransportError as exc:
                    if last:
                        raise ModelError(f"cannot reach the model at {self._url}: {exc}") from exc
                    await asyncio.sleep(self._delay(attempt, None))
                    continue
                if response.status_code < 400:
                    try:
                        data = response.json()
                    except ValueError as exc:
                        raise ModelError("the model server answered with invalid JSON") from exc
                    if not isinstance(data, dict):
                        raise ModelError("the model server answered with an unexpected body")
                    return data
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
    error = data.get("error") if isinstance(data, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    if isinstance(error, str):
        return error
    return json.dumps(data)[:300]
