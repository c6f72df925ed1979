"""A thread's state: its values (context + conversation), its status (from its runs) and its
checkpoints, read from the session's event log.

A checkpoint is every event that changes what a thread holds: a run's input (``run.created``,
source ``input``), each step a run finishes (source ``loop``), a run starting to wait for a
person (``loop``, with its interrupt), and a message or context written outside a run
(``update``). Its values are the context as of it and the conversation up to its moment.
"""

from __future__ import annotations

import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from tether.api.langgraph.options import refuse
from tether.api.langgraph.shapes import (
    LG_KEY,
    interrupt_of,
    is_run_output,
    lc_message,
    lg_extra,
    run_error,
)
from tether.core.clock import to_iso
from tether.core.event import STEP_END_EVENTS, Event, EventType
from tether.core.message import Message, Role
from tether.core.run import Run
from tether.core.session import Session
from tether.core.status import RunStatus
from tether.core.step import Step
from tether.store.base import Store

_PAGE = 1000
_CHECKPOINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:tether:langgraph:checkpoint")


class Conversation:
    """A session's messages, read incrementally, as of any moment."""

    def __init__(self, store: Store, session_id: str) -> None:
        self._store = store
        self._session_id = session_id
        self._last = 0
        self.messages: list[Message] = []

    async def refresh(self) -> None:
        while True:
            rows = await self._store.list_messages(
                self._session_id, limit=_PAGE, after_seq=self._last
            )
            self.messages.extend(rows)
            if rows:
                self._last = rows[-1].seq
            if len(rows) < _PAGE:
                return

    async def as_of(self, moment: datetime | None = None) -> list[Message]:
        await self.refresh()
        return [m for m in self.messages if moment is None or m.created_at <= moment]


def values_of(context: dict[str, Any], messages: list[Message]) -> dict[str, Any]:
    """A thread's values: the session's context, and its conversation as ``messages``."""
    values = dict(context)
    if messages:
        values["messages"] = [lc_message(m) for m in messages]
    return values


async def current_values(store: Store, session: Session) -> dict[str, Any]:
    return values_of(session.context, await Conversation(store, session.id).as_of())


async def unseen(
    store: Store, session_id: str, messages: list[tuple[Role, str, dict[str, Any]]], field: str
) -> list[tuple[Role, str, dict[str, Any]]]:
    """The messages not yet in the conversation. A message whose id is already there with the
    same role and content is left out (sending the whole conversation again is harmless); one
    that would replace it is refused, since the conversation is append-only."""
    if not any(metadata[LG_KEY].get("id") for _, _, metadata in messages):
        return messages
    conversation = Conversation(store, session_id)
    await conversation.refresh()
    known: dict[str, Message] = {}
    for message in conversation.messages:
        known[message.id] = message
        given = lg_extra(message).get("id")
        if isinstance(given, str):
            known[given] = message
    fresh = []
    for role, content, metadata in messages:
        given = metadata[LG_KEY].get("id")
        existing = known.get(given) if isinstance(given, str) else None
        if existing is None:
            fresh.append((role, content, metadata))
        elif (existing.role, existing.content) != (role, content):
            raise refuse(
                f"{field} with id {given!r}",
                "it is already in the conversation, which is append-only: a message cannot "
                "be replaced",
            )
    return fresh


# -- status -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Activity:
    """What a thread's runs are doing: the one running, waiting or queued, and the newest."""

    running: Run | None
    waiting: Run | None
    ready: Run | None
    last: Run | None

    @property
    def status(self) -> str:
        if self.running is not None:
            return "busy"
        if self.waiting is not None:
            return "interrupted"
        if self.ready is not None:
            return "busy"
        if self.last is not None and self.last.status in (RunStatus.FAILED, RunStatus.TIMED_OUT):
            return "error"
        return "idle"

    @property
    def interrupts(self) -> dict[str, list[dict[str, Any]]]:
        if self.waiting is None:
            return {}
        return {self.waiting.id: [interrupt_of(self.waiting)]}


async def activity(store: Store, session_id: str) -> Activity:
    async def first(status: RunStatus | None) -> Run | None:
        page = await store.list_runs(
            session_id=session_id, status=status, limit=1, newest_first=status is None
        )
        return page.data[0] if page.data else None

    return Activity(
        running=await first(RunStatus.RUNNING),
        waiting=await first(RunStatus.WAITING),
        ready=await first(RunStatus.READY),
        last=await first(None),
    )


def thread_dict(
    session: Session,
    act: Activity,
    values: dict[str, Any],
    *,
    include_ttl: bool = False,
) -> dict[str, Any]:
    """A session as LangGraph's Thread."""
    updated = max(session.updated_at, session.last_activity_at)
    status = act.status
    thread: dict[str, Any] = {
        "thread_id": session.id,
        "created_at": to_iso(session.created_at),
        "updated_at": to_iso(updated),
        "state_updated_at": to_iso(session.last_activity_at),
        "metadata": session.metadata,
        "status": status,
        "values": values or None,
        "interrupts": act.interrupts,
        "config": {},
        "error": run_error(act.last) if status == "error" and act.last is not None else None,
    }
    if include_ttl:
        thread["ttl"] = (
            None
            if session.ttl_seconds is None
            else {
                "strategy": "delete",
                "ttl": session.ttl_seconds / 60,
                "expires_at": to_iso(session.expires_at),
            }
        )
    return thread


# -- checkpoints --------------------------------------------------------------------------------


@dataclass
class Checkpoint:
    """One state a thread was in."""

    id: str
    moment: datetime
    source: str
    step: int
    context: dict[str, Any]
    run_id: str | None = None
    writes: dict[str, Any] | None = None
    waiting: Run | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _checkpoint_id(session_id: str, event: Event) -> str:
    return str(uuid.uuid5(_CHECKPOINT_NAMESPACE, f"{session_id}/{event.id}"))


def step_update(step: Step, messages: list[Message]) -> dict[str, Any]:
    """What a step wrote, as a LangGraph node's update."""
    if messages:
        return {"messages": [lc_message(m) for m in messages]}
    update: dict[str, Any] = {}
    if step.output is not None:
        update["output"] = step.output
    if step.error is not None:
        update["error"] = {"error": step.error.type, "message": step.error.message}
    return update


async def checkpoints(store: Store, session_id: str) -> list[Checkpoint]:
    """Every checkpoint of the thread, oldest first."""
    found: list[Checkpoint] = []
    context: dict[str, Any] = {}
    pending: dict[str, list[Message]] = defaultdict(list)
    steps: dict[str, int] = {}
    after = 0
    while True:
        events = await store.list_events(session_id=session_id, after_id=after, limit=_PAGE)
        for event in events:
            after = event.id
            made = _checkpoint(event, context, pending, steps, found)
            if made is not None:
                made.id = _checkpoint_id(session_id, event)
                found.append(made)
            if event.type in (EventType.SESSION_CREATED, EventType.SESSION_UPDATED):
                context = dict(event.session.context)
                if event.type == EventType.SESSION_UPDATED and "context" in event.changed:
                    found.append(
                        Checkpoint(
                            id=_checkpoint_id(session_id, event),
                            moment=event.created_at,
                            source="update",
                            step=_next_step(found),
                            context=context,
                            writes={"__update__": {"context": context}},
                        )
                    )
        if len(events) < _PAGE:
            return found


def _next_step(found: list[Checkpoint]) -> int:
    return found[-1].step + 1 if found else 0


def _checkpoint(
    event: Event,
    context: dict[str, Any],
    pending: dict[str, list[Message]],
    steps: dict[str, int],
    found: list[Checkpoint],
) -> Checkpoint | None:
    kind = event.type
    if kind == EventType.MESSAGE_ADDED:
        message = event.message
        if message.run_id is None:
            node = lg_extra(message).get("as_node") or "__update__"
            return Checkpoint(
                id="",
                moment=event.created_at,
                source="update",
                step=_next_step(found),
                context=context,
                writes={node: {"messages": [lc_message(message)]}},
            )
        if is_run_output(message):
            pending[message.run_id].append(message)
        return None
    if kind == EventType.RUN_CREATED:
        run = event.run
        steps[run.id] = -1
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="input",
            step=-1,
            context=context,
            run_id=run.id,
            writes={"__start__": run.input},
        )
    if kind in STEP_END_EVENTS and event.run_id is not None:
        step = event.step
        steps[event.run_id] = steps.get(event.run_id, -1) + 1
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="loop",
            step=steps[event.run_id],
            context=context,
            run_id=event.run_id,
            writes={step.name: step_update(step, pending.pop(event.run_id, []))},
        )
    if kind == EventType.RUN_WAITING and event.run_id is not None:
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="loop",
            step=steps.get(event.run_id, -1) + 1,
            context=context,
            run_id=event.run_id,
            waiting=event.run,
        )
    return None


def _ref(thread_id: str, checkpoint: Checkpoint | None) -> dict[str, Any] | None:
    if checkpoint is None:
        return None
    return {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": checkpoint.id,
        "checkpoint_map": None,
    }


def state_dict(
    thread_id: str,
    checkpoint: Checkpoint | None,
    parent: Checkpoint | None,
    values: dict[str, Any],
    waiting: Run | None,
) -> dict[str, Any]:
    """LangGraph's ThreadState for one checkpoint (waiting: the run the thread waits on then)."""
    interrupts = [] if waiting is None else [interrupt_of(waiting)]
    name = f"wait_for_{(waiting.waiting_for or {}).get('kind', 'input')}" if waiting else ""
    tasks = [
        {
            "id": interrupts[0]["id"],
            "name": name,
            "error": None,
            "interrupts": interrupts,
            "checkpoint": None,
            "state": None,
            "result": None,
        }
        for _ in interrupts
    ]
    metadata: dict[str, Any] = {}
    if checkpoint is not None:
        metadata = {
            "source": checkpoint.source,
            "step": checkpoint.step,
            "writes": checkpoint.writes,
            "parents": {},
            "thread_id": thread_id,
        }
        if checkpoint.run_id is not None:
            metadata["run_id"] = checkpoint.run_id
    return {
        "values": values,
        "next": [name] if waiting else [],
        "checkpoint": _ref(thread_id, checkpoint)
        or {"thread_id": thread_id, "checkpoint_ns": "", "checkpoint_id": None},
        "metadata": metadata,
        "created_at": None if checkpoint is None else to_iso(checkpoint.moment),
        "parent_checkpoint": _ref(thread_id, parent),
        "tasks": tasks,
        "interrupts": interrupts,
    }


async def states(store: Store, session: Session, now_waiting: Run | None) -> list[dict[str, Any]]:
    """The thread's states, newest first; the newest is the current state (it carries the
    interrupt of the run waiting now, if any). Never empty."""
    found = await checkpoints(store, session.id)
    conversation = Conversation(store, session.id)
    await conversation.refresh()
    if not found:
        values = values_of(session.context, conversation.messages)
        return [state_dict(session.id, None, None, values, now_waiting)]
    out = []
    for index in range(len(found) - 1, -1, -1):
        checkpoint = found[index]
        parent = found[index - 1] if index > 0 else None
        messages = [m for m in conversation.messages if m.created_at <= checkpoint.moment]
        waiting = now_waiting if index == len(found) - 1 else checkpoint.waiting
        out.append(
            state_dict(
                session.id,
                checkpoint,
                parent,
                values_of(checkpoint.context, messages),
                waiting,
            )
        )
    return out


def select_fields(state: dict[str, Any], select: list[str] | None) -> dict[str, Any]:
    """Only the fields asked for; ``values.<key>`` picks one key of the values."""
    if not select:
        return state
    out: dict[str, Any] = {}
    for name in select:
        if name.startswith("values."):
            key = name.removeprefix("values.")
            values = out.setdefault("values", {})
            if key in state["values"]:
                values[key] = state["values"][key]
        elif name in state:
            out[name] = state[name]
    return out
