"""A run's tool calls as LangGraph messages: the AI message whose ``tool_calls`` asked for them
(a model_call step's reply) and a ``tool`` message per result (a tool_call step made for a
model's call), as chat UIs built on the SDK expect them among a thread's messages.

tether's conversation does not hold them (its tool history does): they are read from the steps
of the session's runs that called tools, and placed among the conversation's messages by time.
Their ids are their steps' ids.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from tether.core.message import Message, Role
from tether.core.status import StepStatus
from tether.core.step import Step, StepKind
from tether.runtime.service import Service

_PAGE = 1000


def step_messages(step: Step) -> list[Message]:
    """The message a finished step shows as: an AI message with tool_calls for a model call
    that asked for tools, a tool message for a tool call a model asked for; else none."""
    output, given = step.output, step.input if isinstance(step.input, dict) else {}
    moment = step.ended_at or step.started_at
    if step.kind is StepKind.MODEL_CALL and step.status is StepStatus.COMPLETED:
        calls = output.get("tool_calls") if isinstance(output, dict) else None
        if not calls:
            return []
        asked = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("arguments") or {}}
            for c in calls
            if isinstance(c, dict)
        ]
        content = str(output.get("content") or "")
        metadata: dict[str, Any] = {"tool_calls": asked, "step_id": step.id}
        return [_message(step, Role.ASSISTANT, content, moment, metadata)]
    if step.kind is StepKind.TOOL_CALL and step.ended_at is not None and given.get("call_id"):
        metadata = {"tool_call_id": given["call_id"], "step_id": step.id}
        return [_message(step, Role.TOOL, _result(step), moment, metadata)]
    return []


def _message(
    step: Step, role: Role, content: str, moment: Any, metadata: dict[str, Any]
) -> Message:
    return Message(
        id=step.id,
        session_id=step.session_id,
        seq=0,
        role=role,
        content=content,
        created_at=moment,
        run_id=step.run_id,
        metadata=metadata,
    )


def _result(step: Step) -> str:
    """What the model was shown as the call's result."""
    if step.status is StepStatus.COMPLETED:
        out = step.output
        return out if isinstance(out, str) else json.dumps(out, ensure_ascii=False, default=str)
    return f"ERROR: {step.error.message if step.error else step.status.value}"


class ToolTurns:
    """The tool-call messages of a session's runs, read incrementally: each read asks only for
    the tool calls started since the oldest one still running at the previous read (or since
    the newest one then), and reads again the steps of a run only when its calls changed."""

    def __init__(self, svc: Service, session_id: str) -> None:
        self._svc = svc
        self._session_id = session_id
        self._since: datetime | None = None
        self._calls: dict[str, dict[str, str]] = {}
        self._messages: dict[str, list[Message]] = {}

    async def messages(self) -> list[Message]:
        changed: set[str] = set()
        seen: list[Step] = []
        cursor = None
        while True:
            page = await self._svc.list_tool_calls(
                session_id=self._session_id, since=self._since, limit=_PAGE, cursor=cursor
            )
            for step in page.data:
                calls = self._calls.setdefault(step.run_id, {})
                if calls.get(step.id) != step.status.value:
                    calls[step.id] = step.status.value
                    changed.add(step.run_id)
            seen += page.data
            cursor = page.next_cursor
            if cursor is None:
                break
        running = [s.started_at for s in seen if s.ended_at is None]
        self._since = min(running, default=max((s.started_at for s in seen), default=self._since))
        for run_id in sorted(changed):
            self._messages[run_id] = run_messages(await self._svc.list_steps(run_id))
        return [m for run_id in self._calls for m in self._messages.get(run_id, [])]


def run_messages(steps: list[Step]) -> list[Message]:
    """The messages of a run's steps: of each position, its latest attempt only."""
    latest: dict[int, Step] = {}
    for step in steps:
        latest[step.position] = step
    return [m for step in sorted(latest.values(), key=lambda s: s.seq) for m in step_messages(step)]


def merged(conversation: list[Message], turns: list[Message]) -> list[Message]:
    """The conversation with the tool-call messages among it, by time (a tool-call message
    first at the same moment: the answer it led to comes after)."""
    if not turns:
        return conversation
    return sorted([*turns, *conversation], key=lambda m: m.created_at)
