"""tether records in LangGraph's wire shapes, and LangGraph input messages as tether messages.

Status mapping (run): ready → pending, running → running, waiting → interrupted (it waits for a
person), completed → success, failed → error, timed_out → timeout, cancelled → interrupted.
"""

from __future__ import annotations

from typing import Any

from tether.api.langgraph.options import refuse
from tether.core.clock import to_iso
from tether.core.errors import UsageError
from tether.core.memory import MemoryItem
from tether.core.message import Message, Role
from tether.core.run import IfBusy, Run, RunSummary
from tether.core.status import RunStatus
from tether.runtime import limits
from tether.runtime.run_context import MODEL_STEP_KEY
from tether.runtime.run_shapes import LG_KEY as LG_KEY
from tether.runtime.run_shapes import RUN_FIELDS as RUN_FIELDS
from tether.runtime.run_shapes import RUN_STATUS as RUN_STATUS
from tether.runtime.run_shapes import lg_info as lg_info
from tether.runtime.run_shapes import run_dict as run_dict
from tether.runtime.run_shapes import run_error as run_error

#: The tether statuses each LangGraph run status stands for.
RUN_STATUSES: dict[str, frozenset[RunStatus]] = {
    lg: frozenset(s for s, mapped in RUN_STATUS.items() if mapped == lg)
    for lg in ("pending", "running", "error", "success", "timeout", "interrupted")
}
#: How multitask_strategy maps onto if_busy (rollback: interrupt, then delete what was cut off).
MULTITASK: dict[str, IfBusy] = {
    "reject": IfBusy.REJECT,
    "enqueue": IfBusy.ENQUEUE,
    "interrupt": IfBusy.INTERRUPT,
    "rollback": IfBusy.INTERRUPT,
}
_ROLES = {
    "human": Role.USER,
    "user": Role.USER,
    "ai": Role.ASSISTANT,
    "assistant": Role.ASSISTANT,
    "system": Role.SYSTEM,
    "developer": Role.SYSTEM,
    "tool": Role.TOOL,
}
_TYPES = {Role.USER: "human", Role.ASSISTANT: "ai", Role.SYSTEM: "system", Role.TOOL: "tool"}


# -- messages -----------------------------------------------------------------------------------


def _text(content: Any, field: str) -> str:
    """The text of a message's content: a string, or the text of its content blocks."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict) and isinstance(block.get("text"), str):
                parts.append(block["text"])
        return "".join(parts)
    raise UsageError(f"{field}.content must be a string or a list of content blocks")


def input_message(raw: Any, field: str, source: str) -> tuple[Role, str, dict[str, Any]]:
    """One LangGraph message (a dict, a string, or a (role, content) pair) as tether's
    (role, content, metadata); what tether has no column for rides in metadata.langgraph."""
    if isinstance(raw, str):
        raw = {"type": "human", "content": raw}
    elif isinstance(raw, list) and len(raw) == 2 and all(isinstance(x, str) for x in raw):
        raw = {"type": raw[0], "content": raw[1]}
    if not isinstance(raw, dict):
        raise UsageError(f"{field} must be a message object")
    kind = raw.get("role", raw.get("type"))
    if isinstance(kind, str) and kind.endswith("MessageChunk"):
        kind = kind.removesuffix("MessageChunk").lower()
    if kind == "remove":
        raise refuse(f"{field} (RemoveMessage)", "the conversation is append-only")
    role = _ROLES.get(kind) if isinstance(kind, str) else None
    if role is None:
        raise UsageError(
            f"{field}.type must be one of human, ai, system, tool (or role user, assistant)"
        )
    content = raw.get("content", "")
    text = limits.content(_text(content, field))
    extra: dict[str, Any] = {"source": source}
    for key in ("id", "name", "additional_kwargs", "response_metadata"):
        if raw.get(key):
            extra[key] = raw[key]
    if not isinstance(content, str):
        extra["content"] = content
    metadata: dict[str, Any] = {LG_KEY: extra}
    calls = raw.get("tool_calls")
    if role is Role.ASSISTANT and isinstance(calls, list) and calls:
        metadata["tool_calls"] = [
            {"id": c.get("id"), "name": c.get("name"), "arguments": c.get("args") or {}}
            for c in calls
            if isinstance(c, dict)
        ]
    if role is Role.TOOL and raw.get("tool_call_id") is not None:
        metadata["tool_call_id"] = raw["tool_call_id"]
    return role, text, metadata


def input_messages(value: Any, field: str, source: str) -> list[tuple[Role, str, dict[str, Any]]]:
    if value is None:
        return []
    items = value if isinstance(value, list) else [value]
    return [input_message(m, f"{field}[{i}]", source) for i, m in enumerate(items)]


def lg_extra(message: Message) -> dict[str, Any]:
    extra = message.metadata.get(LG_KEY)
    return extra if isinstance(extra, dict) else {}


def is_run_output(message: Message) -> bool:
    """True for a message a run's agent wrote (in a step), not one given as its input."""
    return message.run_id is not None and "step_id" in message.metadata


def wire_id(message: Message) -> str:
    """A message's id on the LangGraph wire: the one its sender gave; for a model's answer the
    id of its model_call step (the id its streamed chunks had); else its own."""
    given = lg_extra(message).get("id") or message.metadata.get(MODEL_STEP_KEY)
    return given if isinstance(given, str) and given else message.id


def lc_chunk(message_id: str, text: str) -> dict[str, Any]:
    """A piece of a model's streamed answer as LangChain serializes an AIMessageChunk."""
    return {
        "type": "AIMessageChunk",
        "content": text,
        "id": message_id,
        "name": None,
        "additional_kwargs": {},
        "response_metadata": {},
        "tool_calls": [],
        "invalid_tool_calls": [],
        "tool_call_chunks": [],
        "usage_metadata": None,
    }


def lc_message(message: Message) -> dict[str, Any]:
    """A message as LangChain serializes it (type, content, id, …)."""
    extra = lg_extra(message)
    out: dict[str, Any] = {
        "type": _TYPES[message.role],
        "content": extra.get("content", message.content),
        "id": wire_id(message),
        "name": extra.get("name"),
        "additional_kwargs": extra.get("additional_kwargs", {}),
        "response_metadata": extra.get("response_metadata", {}),
    }
    if message.role is Role.ASSISTANT:
        calls = message.metadata.get("tool_calls")
        out["tool_calls"] = [
            {
                "name": c.get("name"),
                "args": c.get("arguments") or {},
                "id": c.get("id"),
                "type": "tool_call",
            }
            for c in (calls if isinstance(calls, list) else [])
            if isinstance(c, dict)
        ]
        out["invalid_tool_calls"] = []
        out["usage_metadata"] = None
    if message.role is Role.TOOL:
        out["tool_call_id"] = message.metadata.get("tool_call_id")
    return out


# -- runs ---------------------------------------------------------------------------------------


def interrupt_of(run: Run | RunSummary) -> dict[str, Any]:
    """What a waiting run waits for, as a LangGraph Interrupt: its prompt (or, for an approval,
    everything it asks about) as the value; the waiting step's id as the interrupt id."""
    waiting = dict(run.waiting_for or {})
    if "interrupt_id" in waiting:  # a served graph's interrupt()
        return {"value": waiting.get("value"), "id": waiting["interrupt_id"]}
    step_id = waiting.pop("step_id", None)
    value: Any = waiting
    if waiting.get("kind") == "input" and set(waiting) <= {"kind", "prompt"}:
        value = waiting.get("prompt")
    return {"value": value, "id": step_id or run.id}


# -- store items --------------------------------------------------------------------------------


def item_dict(item: MemoryItem) -> dict[str, Any]:
    return {
        "namespace": list(item.namespace),
        "key": item.key,
        "value": item.value,
        "created_at": to_iso(item.created_at),
        "updated_at": to_iso(item.updated_at),
    }
