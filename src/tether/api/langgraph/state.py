"""A thread's state: its values (project + conversation), its status (from its runs) and its
checkpoints, read from the session's event log.

Its messages are the conversation's, with the runs' tool calls among them (``tool_turns``).

A checkpoint is every event that changes what a thread holds: a run's input (``run.created``,
source ``input``), each step a run finishes (source ``loop``), a run starting to wait for a
person (``loop``, with its interrupt), and a message or project written outside a run
(``update``). Its values are the project as of it and the conversation up to its moment.
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
    wire_id,
)
from tether.api.langgraph.tool_turns import ToolTurns, merged, step_messages
from tether.core.clock import to_iso
from tether.core.event import STEP_END_EVENTS, Event, EventType
from tether.core.message import Message, Role
from tether.core.run import Activity, Run, RunActivity, RunSummary
from tether.core.session import Session
from tether.core.step import Step
from tether.runtime.service import Service

_PAGE = 1000
_CHECKPOINT_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_URL, "urn:tether:langgraph:checkpoint")


class Conversation:
    """A session's messages, read incrementally (through the service), as of any moment."""

    def __init__(self, svc: Service, session_id: str) -> None:
        self._svc = svc
        self._session_id = session_id
        self._last = 0
        self.messages: list[Message] = []
        self._turns = ToolTurns(svc, session_id)

    async def refresh(self) -> None:
        rows = await self._svc.conversation(self._session_id, after_seq=self._last)
        self.messages.extend(rows)
        if rows:
            self._last = rows[-1].seq

    async def as_of(self, moment: datetime | None = None) -> list[Message]:
        """The thread's messages (tool calls among them) up to moment."""
        await self.refresh()
        shown = merged(self.messages, await self._turns.messages())
        return [m for m in shown if moment is None or m.created_at <= moment]


def values_of(project: dict[str, Any], messages: list[Message]) -> dict[str, Any]:
    """A thread's values: the session's project, and its conversation as ``messages``."""
    values = dict(project)
    if messages:
        values["messages"] = [lc_message(m) for m in messages]
    return values


async def thread_messages(svc: Service, session_id: str) -> list[Message]:
    """The session's conversation with its runs' tool calls among it."""
    turns = await ToolTurns(svc, session_id).messages()
    return merged(await svc.conversation(session_id), turns)


async def current_values(svc: Service, session: Session) -> dict[str, Any]:
    return values_of(session.project, await thread_messages(svc, session.id))


async def unseen(
    svc: Service, session_id: str, messages: list[tuple[Role, str, dict[str, Any]]], field: str
) -> list[tuple[Role, str, dict[str, Any]]]:
    """The messages not yet in the conversation. A message whose id is already there with the
    same role and content is left out (sending the whole conversation again is harmless); one
    that would replace it is refused, since the conversation is append-only."""
    if not any(metadata[LG_KEY].get("id") for _, _, metadata in messages):
        return messages
    known: dict[str, Message] = {}
    for message in await thread_messages(svc, session_id):
        known[message.id] = message
        known[wire_id(message)] = message
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


#: LangGraph's name for each activity of a session's runs.
THREAD_STATUS = {
    Activity.IDLE: "idle",
    Activity.BUSY: "busy",
    Activity.WAITING: "interrupted",
    Activity.ERROR: "error",
}


def interrupts(act: RunActivity) -> dict[str, list[dict[str, Any]]]:
    """The interrupt of the run the thread waits on, by run id."""
    if act.waiting is None:
        return {}
    return {act.waiting.id: [interrupt_of(act.waiting)]}


def thread_dict(
    session: Session,
    act: RunActivity,
    values: dict[str, Any],
    *,
    include_ttl: bool = False,
) -> dict[str, Any]:
    """A session as LangGraph's Thread."""
    updated = max(session.updated_at, session.last_activity_at)
    status = THREAD_STATUS[act.activity]
    thread: dict[str, Any] = {
        "thread_id": session.id,
        "created_at": to_iso(session.created_at),
        "updated_at": to_iso(updated),
        "state_updated_at": to_iso(session.last_activity_at),
        "metadata": session.metadata,
        "status": status,
        "values": values or None,
        "interrupts": interrupts(act),
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
    project: dict[str, Any]
    run_id: str | None = None
    writes: dict[str, Any] | None = None
    waiting: Run | RunSummary | None = None
    #: The metadata of the run that made it (its own, its graph_id and assistant_id).
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


async def checkpoints(svc: Service, session_id: str) -> list[Checkpoint]:
    """Every checkpoint of the thread, oldest first (one pass over its event log; the inputs and
    metadata of its runs, which run events do not carry, from one read of its runs)."""
    found: list[Checkpoint] = []
    project: dict[str, Any] = {}
    pending: dict[str, list[Message]] = defaultdict(list)
    steps: dict[str, int] = {}
    after = 0
    while True:
        events = await svc.list_events(session_id=session_id, after_id=after, limit=_PAGE)
        for event in events:
            after = event.id
            made = _checkpoint(event, project, pending, steps, found)
            if made is not None:
                made.id = _checkpoint_id(session_id, event)
                found.append(made)
            if event.type in (EventType.SESSION_CREATED, EventType.SESSION_UPDATED):
                project = dict(event.session.project)
                # Events written before the rename name the project "context" only.
                changed = {"project", "context"} & set(event.changed)
                if event.type == EventType.SESSION_UPDATED and changed:
                    found.append(
                        Checkpoint(
                            id=_checkpoint_id(session_id, event),
                            moment=event.created_at,
                            source="update",
                            step=_next_step(found),
                            project=project,
                            writes={"__update__": {"project": project}},
                        )
                    )
        if len(events) < _PAGE:
            break
    if any(c.run_id for c in found):
        runs = await _runs_of(svc, session_id)
        for checkpoint in found:
            run = runs.get(checkpoint.run_id or "")
            if checkpoint.source == "input":
                checkpoint.writes = {"__start__": {} if run is None else run.input}
            if run is not None:
                checkpoint.extra = _run_metadata(run)
    return found


def _run_metadata(run: Run) -> dict[str, Any]:
    """What a run brings to its checkpoints' metadata: its own metadata (without the
    LangGraph options), its graph and the assistant it was started with."""
    metadata = {k: v for k, v in run.metadata.items() if k != LG_KEY}
    metadata["graph_id"] = run.agent
    assistant = (run.metadata.get(LG_KEY) or {}).get("assistant_id")
    if assistant is not None:
        metadata["assistant_id"] = assistant
    return metadata


async def _runs_of(svc: Service, session_id: str) -> dict[str, Run]:
    runs: dict[str, Run] = {}
    cursor = None
    while True:
        page = await svc.list_runs(session_id, limit=_PAGE, cursor=cursor, with_context=False)
        runs.update((run.id, run) for run in page.data)
        cursor = page.next_cursor
        if cursor is None:
            return runs


def _next_step(found: list[Checkpoint]) -> int:
    return found[-1].step + 1 if found else 0


def _checkpoint(
    event: Event,
    project: dict[str, Any],
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
                project=project,
                writes={node: {"messages": [lc_message(message)]}},
            )
        if is_run_output(message):
            pending[message.run_id].append(message)
        return None
    if kind == EventType.RUN_CREATED and event.run_id is not None:
        steps[event.run_id] = -1
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="input",
            step=-1,
            project=project,
            run_id=event.run_id,
        )
    if kind in STEP_END_EVENTS and event.run_id is not None:
        step = event.step
        steps[event.run_id] = steps.get(event.run_id, -1) + 1
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="loop",
            step=steps[event.run_id],
            project=project,
            run_id=event.run_id,
            writes={
                step.name: step_update(step, [*pending.pop(event.run_id, []), *step_messages(step)])
            },
        )
    if kind == EventType.RUN_WAITING and event.run_id is not None:
        return Checkpoint(
            id="",
            moment=event.created_at,
            source="loop",
            step=steps.get(event.run_id, -1) + 1,
            project=project,
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


def _checkpoint_ref(thread_id: str, checkpoint: Checkpoint | None) -> dict[str, Any]:
    return _ref(thread_id, checkpoint) or {
        "thread_id": thread_id,
        "checkpoint_ns": "",
        "checkpoint_id": None,
    }


def _metadata(thread_id: str, checkpoint: Checkpoint) -> dict[str, Any]:
    metadata = {
        **checkpoint.extra,
        "source": checkpoint.source,
        "step": checkpoint.step,
        "writes": checkpoint.writes,
        "parents": {},
        "thread_id": thread_id,
    }
    if checkpoint.run_id is not None:
        metadata["run_id"] = checkpoint.run_id
    return metadata


def state_dict(
    thread_id: str,
    checkpoint: Checkpoint | None,
    parent: Checkpoint | None,
    values: dict[str, Any],
    waiting: Run | RunSummary | None,
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
    metadata = {} if checkpoint is None else _metadata(thread_id, checkpoint)
    return {
        "values": values,
        "next": [name] if waiting else [],
        "checkpoint": _checkpoint_ref(thread_id, checkpoint),
        "metadata": metadata,
        "created_at": None if checkpoint is None else to_iso(checkpoint.moment),
        "parent_checkpoint": _ref(thread_id, parent),
        "tasks": tasks,
        "interrupts": interrupts,
    }


class States:
    """A thread's states, newest first; the newest is the current state (it carries the
    interrupt of the run waiting now, if any). Built one at a time: a caller that wants a page
    of them, or one, pays for those only."""

    def __init__(
        self, session: Session, found: list[Checkpoint], messages: list[Message], now: Run | None
    ) -> None:
        self._session = session
        self._found = found
        self._messages = messages
        self._now_waiting = now

    @classmethod
    async def of(cls, svc: Service, session: Session, now_waiting: Run | None) -> States:
        found = await checkpoints(svc, session.id)
        return cls(session, found, await thread_messages(svc, session.id), now_waiting)

    def __len__(self) -> int:
        return max(1, len(self._found))

    def checkpoint_id(self, index: int) -> str | None:
        """The checkpoint id of the index-th newest state (None: a thread with none yet)."""
        return self._found[-1 - index].id if self._found else None

    def checkpoint_ref(self, index: int) -> dict[str, Any]:
        """The ``checkpoint`` of the index-th newest state."""
        checkpoint = self._found[-1 - index] if self._found else None
        return _checkpoint_ref(self._session.id, checkpoint)

    def metadata_matches(self, index: int, wanted: dict[str, Any]) -> bool:
        """True when the index-th newest state's metadata has wanted's values."""
        if not wanted:
            return True
        if not self._found:
            return False
        checkpoint = self._found[-1 - index]
        metadata = _metadata(self._session.id, checkpoint)
        return all(metadata.get(k) == v for k, v in wanted.items())

    def state(self, index: int) -> dict[str, Any]:
        """The index-th newest state (0: the current one)."""
        session = self._session
        if not self._found:
            values = values_of(session.project, self._messages)
            return state_dict(session.id, None, None, values, self._now_waiting)
        position = len(self._found) - 1 - index
        checkpoint = self._found[position]
        parent = self._found[position - 1] if position > 0 else None
        messages = [m for m in self._messages if m.created_at <= checkpoint.moment]
        waiting = self._now_waiting if index == 0 else checkpoint.waiting
        values = values_of(checkpoint.project, messages)
        return state_dict(session.id, checkpoint, parent, values, waiting)


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
