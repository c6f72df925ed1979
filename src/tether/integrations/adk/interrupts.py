"""What an ADK invocation asks a person, as a tether wait, and the answer that resumes it.

ADK pauses an invocation on an *interrupt*: a function call whose id the event lists in
``long_running_tool_ids`` — a tool confirmation (``adk_request_confirmation``, from
``ToolContext.request_confirmation`` or a tool built with ``require_confirmation``), a
long-running tool's call, a request for input or credentials. The user answers with a
function response carrying that id, in a new ``run_async`` that ADK gives the paused
invocation's id.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from tether.integrations._json import jsonable

if TYPE_CHECKING:
    from google.adk.events.event import Event
    from google.adk.sessions.session import Session
    from google.genai import types

#: The function call of a tool confirmation (ADK's wire name).
CONFIRMATION = "adk_request_confirmation"


def interrupts(event: Event) -> list[types.FunctionCall]:
    """The function calls an event leaves for a person (or another system) to answer."""
    waiting = event.long_running_tool_ids or set()
    return [call for call in event.get_function_calls() if call.id in waiting]


def wait_request(calls: list[types.FunctionCall]) -> tuple[str, str, dict[str, Any]]:
    """(kind, prompt, details) of the wait for calls: an ``approval`` of the tool call a
    confirmation holds, else ``input`` (a long-running tool's result, a requested input);
    details name the tool, its arguments and every function call to answer."""
    first = calls[0]
    args = first.args or {}
    if first.name == CONFIRMATION:
        held = args.get("originalFunctionCall") or {}
        tool, arguments = held.get("name"), held.get("args") or {}
        hint = (args.get("toolConfirmation") or {}).get("hint")
        kind, prompt = "approval", hint or f"Allow {tool}?"
    else:
        tool, arguments = first.name, args
        kind, prompt = "input", args.get("message") or f"the result of {tool}"
    details = {
        "tool": tool,
        "arguments": jsonable(arguments),
        "function_calls": [
            {"id": c.id, "name": c.name, "args": jsonable(c.args or {})} for c in calls
        ],
    }
    return kind, str(prompt), details


def answers(session: Session, invocation_id: str) -> list[dict[str, Any]]:
    """The function responses of the user's message that resumes invocation_id (the
    session's newest event, appended by the Runner before the invocation starts)."""
    last = session.events[-1] if session.events else None
    if last is None or last.author != "user" or last.invocation_id != invocation_id:
        return []
    return [
        {"id": r.id, "name": r.name, "response": jsonable(r.response)}
        for r in last.get_function_responses()
    ]
