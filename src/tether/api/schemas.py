"""Pydantic models at the HTTP edge: request bodies (validated) and response shapes (documented).

Responses are the records' ``to_data`` forms (plus a few extras such as ``expires_at``); their
models here describe them in the OpenAPI spec and are not used to build them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

from tether.core.memory import MemoryScope
from tether.core.message import Role
from tether.core.run import IfBusy, RunOptions
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import StepKind
from tether.runtime import limits

JsonObject = dict[str, Any]


def _whole(value: Any) -> Any:
    """A float with no fraction (``99.0``) as the integer it is: JSON has one kind of number,
    and JSON Schema's ``integer`` accepts it."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


#: An integer field of a request: ``99`` or ``99.0``, never ``99.5``, ``"99"`` or ``true``.
Whole = Annotated[int, BeforeValidator(_whole)]


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


# -- requests ---------------------------------------------------------------------------------

_PROJECT = 'What the session works on, which every run starts from (e.g. {"workspace": "./calc"}).'
_CONTEXT = "Deprecated: the former name of project (answered with a Deprecation header)."


class _WithProject(_Request):
    """A request body that sets a session's project, under its name or its former one."""

    project: JsonObject | None = Field(default=None, description=_PROJECT)
    context: JsonObject | None = Field(
        default=None, description=_CONTEXT, json_schema_extra={"deprecated": True}
    )

    @model_validator(mode="after")
    def _one_project(self) -> Self:
        if {"project", "context"} <= self.model_fields_set and self.project != self.context:
            raise PydanticCustomError(
                "project_conflict",
                "project and its deprecated name context disagree: give project only",
            )
        return self

    @property
    def uses_former_name(self) -> bool:
        """True when the body names the project by its deprecated name, context."""
        return "context" in self.model_fields_set

    def project_change(self) -> dict[str, Any]:
        """The project given, under project=, or nothing when the body gives none."""
        given = self.model_fields_set
        if "project" in given:
            return {"project": self.project}
        if "context" in given:
            return {"project": self.context}
        return {}


class SessionCreate(_WithProject):
    #: A UUID chosen by the client (default: the server makes one).
    id: str | None = Field(default=None, max_length=64)
    title: str | None = Field(default=None, max_length=limits.MAX_TITLE)
    metadata: JsonObject | None = None
    #: Seconds without activity before the session expires (default 30 days); null = never.
    ttl_seconds: Whole | None = Field(default=None, ge=1, le=limits.MAX_TTL)
    #: The caller's own name for the session, unique among the caller's sessions.
    external_key: str | None = Field(default=None, min_length=1, max_length=limits.MAX_EXTERNAL_KEY)
    #: The app the session belongs to: its runs share that app's memory.
    app: str | None = Field(default=None, min_length=1, max_length=limits.MAX_APP)
    #: When external_key already names a session: reject (409 already_exists) or return that
    #: session as it is (200; a new one is 201): a race-free get-or-create.
    if_exists: Literal["reject", "return"] = "reject"


class SessionUpdate(_WithProject):
    title: str | None = Field(default=None, max_length=limits.MAX_TITLE)
    metadata: JsonObject | None = None
    ttl_seconds: Whole | None = Field(default=None, ge=1, le=limits.MAX_TTL)
    #: null takes the key off the session.
    external_key: str | None = Field(default=None, min_length=1, max_length=limits.MAX_EXTERNAL_KEY)
    #: null takes the session out of its app.
    app: str | None = Field(default=None, min_length=1, max_length=limits.MAX_APP)


class MessageCreate(_Request):
    #: Default: from the item when one is given, else user.
    role: Literal["user", "assistant", "system", "tool"] | None = None
    #: Required without an item; with one, its text by default.
    content: str | None = Field(default=None, max_length=limits.MAX_CONTENT)
    metadata: JsonObject | None = None
    #: A structured conversation item (any JSON object), returned exactly as given.
    item: JsonObject | None = None


class MessageBatch(_Request):
    #: Appended in order, in one transaction, each with its message.added event.
    messages: list[MessageCreate] = Field(min_length=1, max_length=limits.MAX_BATCH)


# The goal and the fields of tether.core.run.RunOptions (tests/unit/test_run_options.py).
class RunCreate(_Request):
    goal: str = Field(min_length=1, max_length=limits.MAX_GOAL)
    #: The agent that executes the run (default: echo).
    agent: str | None = Field(default=None, min_length=1, max_length=limits.MAX_KEY)
    input: JsonObject | None = None
    #: What to do when the session already has an unfinished run.
    if_busy: Literal["reject", "enqueue", "interrupt"] = IfBusy.REJECT.value
    timeout_seconds: float | None = Field(default=None, gt=0, le=limits.MAX_SECONDS)
    #: How long the run may wait for a person before it ends timed_out.
    wait_timeout_seconds: float | None = Field(default=None, gt=0, le=limits.MAX_SECONDS)
    #: A retried create with the same key returns the run created the first time.
    idempotency_key: str | None = Field(default=None, min_length=1, max_length=limits.MAX_KEY)
    max_attempts: Whole = Field(default=1, ge=1, le=100)
    metadata: JsonObject | None = None
    #: Start no earlier than this many seconds from now.
    after_seconds: float | None = Field(default=None, gt=0, le=limits.MAX_SECONDS)
    #: An http(s) URL the run is sent to (signed with X-Tether-Signature) once it ends.
    webhook: str | None = Field(default=None, min_length=1, max_length=2048)
    #: Run as this assistant: its agent, with the config and context of the version it uses
    #: (recorded in the run's metadata under "assistant").
    assistant_id: str | None = Field(default=None, max_length=64)

    def options(self) -> RunOptions:
        return RunOptions(**self.model_dump(exclude={"goal", "assistant_id"}))


class StatelessRunCreate(RunCreate):
    """A run without a session: in one made for it alone."""

    #: delete: its session is deleted once the run has ended; keep: it stays.
    on_completion: Literal["delete", "keep"] = "delete"

    def options(self) -> RunOptions:
        return RunOptions(**self.model_dump(exclude={"goal", "assistant_id", "on_completion"}))


class AssistantCreate(_Request):
    #: The agent it configures.
    graph_id: str = Field(min_length=1, max_length=limits.MAX_KEY)
    #: Its id (a UUID); default: a new one.
    assistant_id: str | None = Field(default=None, max_length=64)
    #: Default: the agent's name.
    name: str | None = Field(default=None, min_length=1, max_length=limits.MAX_TITLE)
    description: str | None = Field(default=None, max_length=4000)
    config: JsonObject | None = None
    context: JsonObject | None = None
    metadata: JsonObject | None = None
    #: What an assistant_id already taken does: reject (409) or return that assistant.
    if_exists: Literal["raise", "do_nothing"] = "raise"


class AssistantUpdate(_Request):
    """What changes; every update is a new version, which runs use from then on."""

    graph_id: str | None = Field(default=None, min_length=1, max_length=limits.MAX_KEY)
    name: str | None = Field(default=None, min_length=1, max_length=limits.MAX_TITLE)
    description: str | None = Field(default=None, max_length=4000)
    config: JsonObject | None = None
    context: JsonObject | None = None
    #: Merged into the metadata (a key given replaces that key).
    metadata: JsonObject | None = None


class AssistantLatest(_Request):
    #: The version runs use from now on.
    version: Whole = Field(ge=1)


class RunResume(_Request):
    #: What the waiting run asked for (an answer, an approval); required, null included.
    input: Any = Field(...)


class RunCancel(_Request):
    reason: str = Field(default="cancelled by request", max_length=limits.MAX_TITLE)


class ErrorInfoIn(_Request):
    type: str = Field(min_length=1, max_length=limits.MAX_KEY)
    message: str = Field(max_length=limits.MAX_CONTENT)


class UsageIn(_Request):
    input_tokens: Whole = Field(default=0, ge=0, le=limits.MAX_STEP_USAGE)
    output_tokens: Whole = Field(default=0, ge=0, le=limits.MAX_STEP_USAGE)
    requests: Whole = Field(default=0, ge=0, le=limits.MAX_STEP_USAGE)


class _HeldLease(_Request):
    #: How long the run stays held without a heartbeat, renewed by each one (default: the
    #: server's lease); a holder that goes quiet longer leaves it to fail as worker_lost.
    lease_seconds: float | None = Field(default=None, ge=1, le=limits.MAX_HELD_LEASE)


class HeldRunCreate(_HeldLease):
    """A run the caller executes itself (a framework's runner), recorded as it goes."""

    goal: str = Field(min_length=1, max_length=limits.MAX_GOAL)
    #: What executes it, as the run list shows it (e.g. openai-agents); no worker runs it.
    agent: str = Field(min_length=1, max_length=limits.MAX_KEY)
    input: JsonObject | None = None
    metadata: JsonObject | None = None
    #: A busy session: reject (409 session_busy) or interrupt its runs (it starts at once, so
    #: it is never enqueued).
    if_busy: Literal["reject", "interrupt"] = IfBusy.REJECT.value
    timeout_seconds: float | None = Field(default=None, gt=0, le=limits.MAX_SECONDS)


class HeldRunResume(_HeldLease):
    #: What the person gave (an answer, an approval); required, null included.
    input: Any = Field(...)


class HeldHeartbeat(_HeldLease):
    pass


class HeldStepCreate(_Request):
    """A step that ended: failed when error is given, else completed."""

    kind: Literal["model_call", "tool_call", "message", "note"]
    name: str = Field(min_length=1, max_length=limits.MAX_KEY)
    input: Any = None
    output: Any = None
    error: ErrorInfoIn | None = None
    usage: UsageIn | None = None


class HeldSuspend(_Request):
    """The run waits for a person: input (an answer) or approval."""

    kind: Literal["input", "approval"]
    prompt: str = Field(max_length=limits.MAX_CONTENT)
    #: More of what the person is asked (shown with the prompt, kept in waiting_for).
    details: JsonObject | None = None


class HeldFinish(_Request):
    status: Literal["completed", "failed", "cancelled", "timed_out"]
    #: The run's output (left as it is when absent).
    output: Any = None
    error: ErrorInfoIn | None = None


class MemoryPut(_Request):
    value: Any

    @model_validator(mode="before")
    @classmethod
    def _wrapped(cls, body: Any) -> Any:
        """A bare value (``"3.9"``, ``{"python": "3.9"}``) is refused in words that show the
        body expected, not in a schema's."""
        if isinstance(body, dict) and set(body) == {"value"}:
            return body
        got = "an object without value" if isinstance(body, dict) else "a bare value"
        why = f'a memory write is sent as {{"value": …}} (the value inside it), not {got}'
        raise PydanticCustomError("memory_body", "{why}", {"why": why})


class MemoryPromote(_Request):
    #: Store under another key in the session's memory.
    as_key: str | None = Field(default=None, min_length=1, max_length=limits.MAX_KEY)


class ScheduleCreate(_Request):
    #: Five fields: minute hour day-of-month month day-of-week.
    cron: str = Field(max_length=200)
    #: IANA time zone the expression is read in (default UTC).
    timezone: str | None = Field(default=None, max_length=64)
    #: Default: the server's default agent.
    agent: str | None = Field(default=None, max_length=limits.MAX_KEY)
    #: Default: the input's text or last user message.
    goal: str | None = Field(default=None, max_length=limits.MAX_GOAL)
    input: JsonObject | None = None
    #: The session each run is created in; null: a new session for each run.
    session_id: str | None = Field(default=None, max_length=64)
    #: Given to each run as its metadata.
    metadata: JsonObject | None = None
    #: No run is created at or after this time (ISO 8601 with an offset).
    end_at: Annotated[datetime | None, Field(strict=False)] = None
    #: false: created paused.
    enabled: bool = True


class ScheduleUpdate(_Request):
    cron: str | None = Field(default=None, max_length=200)
    timezone: str | None = Field(default=None, max_length=64)
    agent: str | None = Field(default=None, max_length=limits.MAX_KEY)
    goal: str | None = Field(default=None, max_length=limits.MAX_GOAL)
    input: JsonObject | None = None
    metadata: JsonObject | None = None
    #: null: no end.
    end_at: Annotated[datetime | None, Field(strict=False)] = None
    #: false pauses the schedule, true resumes it (from its next tick).
    enabled: bool | None = None


# -- responses --------------------------------------------------------------------------------


class Schedule(BaseModel):
    id: str
    owner: str
    cron: str
    timezone: str
    agent: str
    goal: str | None
    input: JsonObject
    #: null: a new session for each run.
    session_id: str | None
    metadata: JsonObject
    created_at: datetime
    updated_at: datetime
    end_at: datetime | None
    enabled: bool
    #: The next tick (null: none, past end_at).
    next_run_at: datetime | None
    last_run_id: str | None


class WebhookSecret(BaseModel):
    #: The HMAC-SHA256 key of X-Tether-Signature.
    secret: str


class SchedulePage(BaseModel):
    data: list[Schedule]
    next_cursor: str | None


class Usage(BaseModel):
    input_tokens: int
    output_tokens: int
    requests: int
    total_tokens: int


class ErrorInfo(BaseModel):
    type: str
    message: str
    step_id: str | None


class Session(BaseModel):
    id: str
    owner: str
    title: str | None
    status: SessionStatus
    created_at: datetime
    updated_at: datetime
    last_activity_at: datetime
    ttl_seconds: int | None
    metadata: JsonObject
    project: Annotated[JsonObject, Field(description=_PROJECT)]
    #: The same object as project, under its former name.
    context: Annotated[
        JsonObject,
        Field(
            description="Deprecated: the same as project.", json_schema_extra={"deprecated": True}
        ),
    ]
    closed_at: datetime | None
    run_count: int
    usage: Usage
    external_key: str | None
    app: str | None
    #: When the session expires if nothing happens, or expired (null: no TTL, or closed).
    expires_at: datetime | None


class Run(BaseModel):
    id: str
    session_id: str
    owner: str
    seq: int
    agent: str
    goal: str
    status: RunStatus
    created_at: datetime
    updated_at: datetime
    input: JsonObject
    started_at: datetime | None
    ended_at: datetime | None
    error: ErrorInfo | None
    output: Any
    usage: Usage
    attempt: int
    max_attempts: int
    metadata: JsonObject
    timeout_seconds: float | None
    wait_timeout_seconds: float | None
    idempotency_key: str | None
    waiting_for: JsonObject | None
    context: JsonObject | None
    worker_id: str | None
    lease_expires_at: datetime | None
    not_before: datetime | None
    traceparent: str | None


class HeldRun(BaseModel):
    run: Run
    #: The secret every write of the run gives (header Tether-Holder) while it is held.
    holder: str
    #: How long the run stays held without a heartbeat.
    lease_seconds: float


class Message(BaseModel):
    id: str
    session_id: str
    seq: int
    role: Role
    content: str
    created_at: datetime
    run_id: str | None
    metadata: JsonObject
    #: The structured item the message carries, exactly as it was added.
    item: JsonObject | None
    #: When the message was popped or cleared (only listed with include_removed=true).
    removed_at: datetime | None


class MessagesCleared(BaseModel):
    #: How many messages the clear took out of the conversation.
    removed: int


class Step(BaseModel):
    id: str
    run_id: str
    session_id: str
    seq: int
    position: int
    kind: StepKind
    name: str
    status: StepStatus
    started_at: datetime
    input: Any
    output: Any
    error: ErrorInfo | None
    ended_at: datetime | None
    usage: Usage
    attempt: int


class MemoryItem(BaseModel):
    scope: MemoryScope
    scope_id: str
    key: str
    value: Any
    created_at: datetime
    updated_at: datetime
    source_run_id: str | None
    namespace: list[str]


class Event(BaseModel):
    id: int
    type: str
    owner: str
    created_at: datetime
    session_id: str | None
    run_id: str | None
    data: JsonObject


class SessionPage(BaseModel):
    data: list[Session]
    next_cursor: str | None


class RunPage(BaseModel):
    data: list[Run]
    next_cursor: str | None


class MessagePage(BaseModel):
    data: list[Message]
    next_cursor: str | None


class MessageList(BaseModel):
    data: list[Message]


class StepPage(BaseModel):
    data: list[Step]
    next_cursor: str | None


class MemoryPage(BaseModel):
    data: list[MemoryItem]
    next_cursor: str | None


class EventPage(BaseModel):
    data: list[Event]
    next_cursor: str | None


class Assistant(BaseModel):
    id: str
    owner: str
    graph_id: str
    name: str
    version: int
    created_at: datetime
    updated_at: datetime
    description: str | None
    config: dict[str, Any]
    context: dict[str, Any]
    metadata: dict[str, Any]


class AssistantPage(BaseModel):
    data: list[Assistant]
    next_cursor: str | None


class Health(BaseModel):
    status: Literal["ok"]
    version: str
    schema_version: int


class Problem(BaseModel):
    """An error, as application/problem+json (RFC 9457) with a stable code."""

    type: str
    title: str
    status: int
    detail: str
    code: str
    #: For validation_error: each wrong field and what is wrong with it.
    errors: list[dict[str, Any]] | None = None
