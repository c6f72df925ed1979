"""A Server-Sent Events parser: text lines in, messages out (per the WHATWG EventSource rules)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Message:
    """One dispatched SSE message, or a comment (``data`` None, ``comment`` set)."""

    event: str = "message"
    data: str | None = None
    id: str | None = None
    comment: str | None = None


async def messages(lines: AsyncIterator[str]) -> AsyncIterator[Message]:
    """Messages and comments, in order, from the lines of a stream."""
    event, ident = "", None
    data: list[str] = []
    async for line in lines:
        if not line:
            if data:
                yield Message(event=event or "message", data="\n".join(data), id=ident)
            event, data, ident = "", [], None
            continue
        if line.startswith(":"):
            yield Message(comment=line[1:].strip())
            continue
        name, _, value = line.partition(":")
        value = value.removeprefix(" ")
        if name == "event":
            event = value
        elif name == "data":
            data.append(value)
        elif name == "id" and "\0" not in value:
            ident = value
