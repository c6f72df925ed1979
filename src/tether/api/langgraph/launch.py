"""Starting a run from a LangGraph run request: the options checked, the thread found (or
created), the input messages joined to the conversation, the busy thread handled by
multitask_strategy, or a waiting run resumed by ``command.resume``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from tether.api.langgraph import graphs
from tether.api.langgraph.assistants import resolve
from tether.api.langgraph.options import (
    STREAM_MODES,
    check_keys,
    obj,
    one_of,
    opt_bool,
    opt_dict,
    opt_str,
    refuse,
    stream_modes,
)
from tether.api.langgraph.shapes import LG_KEY, MULTITASK, input_messages, interrupt_of
from tether.api.langgraph.state import unseen
from tether.core.assistant import Assistant
from tether.core.errors import Conflict, NotFound, SessionBusy, UsageError
from tether.core.ids import made_at
from tether.core.run import Run, RunOptions
from tether.core.status import RUN_UNFINISHED, RunStatus
from tether.runtime import assistants, limits, stateless
from tether.runtime.graphs import GRAPH_STREAM_MODES, graph_agent
from tether.runtime.service import Service

#: Keys of a run request tether honours (or accepts as the client's defaults).
ACCEPTED = frozenset(
    {
        "assistant_id",
        "input",
        "command",
        "metadata",
        "config",
        "context",
        "stream_mode",
        "stream_subgraphs",
        "stream_resumable",
        "feedback_keys",
        "on_disconnect",
        "multitask_strategy",
        "if_not_exists",
        "after_seconds",
        "durability",
        "checkpoint_during",
        "strict_resume",
        "on_completion",
        "webhook",
    }
)
#: Keys for features tether does not provide, and why; refused whenever they ask for anything.
REFUSED = {
    "interrupt_before": "tether agents are not graphs of nodes to break before; an agent waits "
    "for a person itself (ctx.wait_for_input)",
    "interrupt_after": "tether agents are not graphs of nodes to break after; an agent waits "
    "for a person itself (ctx.wait_for_input)",
    "checkpoint": "a run cannot start from (fork) an earlier checkpoint",
    "checkpoint_id": "a run cannot start from (fork) an earlier checkpoint",
    "langsmith_tracer": "tether does not trace to LangSmith",
}
_NO_RESUME = object()
#: Refused options a served graph's run honours.
_BREAKPOINTS = ("interrupt_before", "interrupt_after")


@dataclass
class RunRequest:
    """A checked run request."""

    agent: str
    assistant_id: str
    input: dict[str, Any] | None
    resume: Any
    metadata: dict[str, Any]
    modes: tuple[str, ...]
    resumable: bool
    on_disconnect: str
    multitask: str
    create_thread: bool
    after_seconds: float | None
    webhook: str | None = None
    kwargs: dict[str, Any] = field(default_factory=dict)
    #: What becomes of a stateless run's thread once it ends (None: not asked).
    on_completion: str | None = None
    #: The stored assistant the run uses (None: a registered agent's default assistant).
    assistant: Assistant | None = None
    #: The agent is a served graph: its input is the graph's, its state its checkpoints.
    graph: bool = False

    @property
    def resuming(self) -> bool:
        return self.resume is not _NO_RESUME

    def options(self) -> RunOptions:
        """The options of the run this request starts."""
        options = RunOptions(
            agent=self.agent,
            input=self.input or {},
            if_busy=MULTITASK[self.multitask],
            metadata={
                **self.metadata,
                LG_KEY: {
                    "assistant_id": self.assistant_id,
                    "multitask_strategy": self.multitask,
                    "kwargs": self.kwargs,
                },
            },
            after_seconds=self.after_seconds,
            webhook=self.webhook,
        )
        if self.assistant is None:
            return options
        return assistants.run_options(self.assistant, options)


async def parse(body: Any, svc: Service) -> RunRequest:
    """Check a run request; 422 naming the first option that is wrong or not provided."""
    request = obj(body)
    assistant_id = opt_str(request, "assistant_id")
    if not assistant_id:
        raise UsageError("body.assistant_id is required: an agent name (or its assistant id)")
    agent, stored = await resolve(svc, assistant_id)
    graph = graph_agent(svc.agents, agent) is not None
    for key, why in REFUSED.items():
        if request.get(key) not in (None, [], "") and not (graph and key in _BREAKPOINTS):
            raise refuse(f"body.{key}", why)
    check_keys("body", request, ACCEPTED | set(REFUSED))
    subgraphs = bool(opt_bool(request, "stream_subgraphs"))
    if subgraphs and not graph:
        raise refuse("body.stream_subgraphs", "tether agents have no subgraphs")
    served = GRAPH_STREAM_MODES if graph else STREAM_MODES
    modes = tuple(stream_modes(request.get("stream_mode"), served=served)) or ("values",)
    config = opt_dict(request, "config")
    configurable = opt_dict(config or {}, "configurable", "body.config") or {}
    for key in ("checkpoint_id", "checkpoint_ns"):
        if configurable.get(key):
            raise refuse(f"body.config.configurable.{key}", REFUSED["checkpoint"])
    context = opt_dict(request, "context")
    metadata = opt_dict(request, "metadata") or {}
    if LG_KEY in metadata:
        raise UsageError(f"body.metadata.{LG_KEY} is reserved for the run's LangGraph options")
    input_ = request.get("input")
    if input_ is not None and not isinstance(input_, dict):
        raise UsageError("body.input must be a JSON object (the run's input state)")
    resume = _resume(request, input_)
    after = _after_seconds(request)
    feedback = _feedback_keys(request)
    kwargs: dict[str, Any] = {
        "config": config or {},
        "context": context or {},
        "stream_mode": list(modes),
        "stream_subgraphs": subgraphs,
        "stream_resumable": bool(opt_bool(request, "stream_resumable")),
        "durability": one_of(
            request.get("durability") or "async", ("sync", "async", "exit"), "body.durability"
        ),
    }
    if stored is not None:  # the run's own config and context over the assistant's
        kwargs["config"] = {**stored.config, **kwargs["config"]}
        kwargs["context"] = {**stored.context, **kwargs["context"]}
    for key in _BREAKPOINTS:
        if graph and request.get(key):
            kwargs[key] = _breakpoints(request[key], f"body.{key}")
    opt_bool(request, "checkpoint_during")
    opt_bool(request, "strict_resume")
    if feedback:
        kwargs["feedback_keys"] = feedback
    on_completion = request.get("on_completion")
    if on_completion is not None:
        kwargs["on_completion"] = one_of(on_completion, ("delete", "keep"), "body.on_completion")
    return RunRequest(
        agent=agent,
        assistant_id=assistant_id,
        input=input_,
        resume=resume,
        metadata=metadata,
        modes=modes,
        resumable=kwargs["stream_resumable"],
        on_disconnect=one_of(
            request.get("on_disconnect") or "continue", ("cancel", "continue"), "on_disconnect"
        ),
        multitask=one_of(
            request.get("multitask_strategy") or "reject", MULTITASK, "body.multitask_strategy"
        ),
        create_thread=one_of(
            request.get("if_not_exists") or "reject", ("reject", "create"), "body.if_not_exists"
        )
        == "create",
        after_seconds=float(after) if after else None,
        webhook=opt_str(request, "webhook") or None,
        kwargs=kwargs,
        on_completion=on_completion,
        assistant=stored,
        graph=graph,
    )


def _after_seconds(request: dict[str, Any]) -> Any:
    after = request.get("after_seconds")
    if after is not None and (
        isinstance(after, bool) or not isinstance(after, int | float) or after < 0
    ):
        raise UsageError("body.after_seconds must be a number of seconds, 0 or more")
    return after


def _feedback_keys(request: dict[str, Any]) -> Any:
    feedback = request.get("feedback_keys")
    if feedback is not None and (
        not isinstance(feedback, list) or not all(isinstance(k, str) for k in feedback)
    ):
        raise UsageError("body.feedback_keys must be a list of strings")
    return feedback


def _breakpoints(value: Any, field: str) -> str | list[str]:
    """A graph run's interrupt_before/after: "*" or node names."""
    if value == "*" or (isinstance(value, list) and all(isinstance(v, str) for v in value)):
        return value  # type: ignore[no-any-return]
    raise UsageError(f'{field} must be "*" or a list of node names')


def _resume(request: dict[str, Any], input_: Any) -> Any:
    command = opt_dict(request, "command")
    if command is None:
        return _NO_RESUME
    check_keys("body.command", command, ("resume", "update", "goto"))
    for key in ("update", "goto"):
        if command.get(key) not in (None, [], {}):
            raise refuse(
                f"body.command.{key}",
                "a command can only resume a run waiting for a person (command.resume)",
            )
    if "resume" not in command:
        raise UsageError("body.command needs resume: what to answer the waiting run with")
    if input_ is not None:
        raise UsageError("give body.input (a new run) or body.command.resume (answer), not both")
    return command["resume"]


def goal_of(input_: dict[str, Any] | None, agent: str) -> str:
    """A run's goal: input.goal, input.text, else the last user message, else a default."""
    data = input_ or {}
    text = data.get("goal") if isinstance(data.get("goal"), str) else data.get("text")
    if not isinstance(text, str) or not text.strip():
        text = ""
        try:
            given = input_messages(data.get("messages"), "", "input")
        except UsageError:  # (a graph's input is the graph's to check)
            given = []
        for role, content, _ in reversed(given):
            if role.value == "user" and content.strip():
                text = content
                break
    if not text.strip():
        text = f"run of {agent}, started through the LangGraph API"
    return text[: limits.MAX_GOAL]


async def ensure_thread(svc: Service, thread_id: str, create: bool) -> None:
    try:
        await svc.get_session(thread_id)
    except NotFound:
        if not create:
            raise
        await svc.create_session(session_id=thread_id)


async def last_event_id(svc: Service, run_id: str) -> int:
    last = 0
    while True:
        events = await svc.list_events(run_id=run_id, after_id=last, limit=1000)
        if events:
            last = events[-1].id
        if len(events) < 1000:
            return last


async def start_stateless(svc: Service, req: RunRequest) -> Run:
    """Start a run without a thread: in a thread of its own, deleted once the run has ended
    unless on_completion is keep."""
    if req.resuming:
        raise UsageError(
            "a run without a thread (stateless) has nothing waiting to resume: body.command."
            "resume answers a waiting run of a thread, so give the thread's id"
        )
    messages = []
    if not req.graph:  # (a graph's messages join the conversation through its checkpoints)
        messages = input_messages((req.input or {}).get("messages"), "body.input.messages", "input")
    req.kwargs.setdefault("on_completion", "delete")
    return await stateless.start(
        svc,
        goal_of(req.input, req.agent),
        options=req.options(),
        messages=messages,
        keep=req.kwargs["on_completion"] == "keep",
    )


async def start(svc: Service, thread_id: str, req: RunRequest) -> tuple[Run, int]:
    """Start (or resume) the run; the run and the event after which its stream begins."""
    if req.on_completion is not None:
        raise UsageError(
            "body.on_completion is for runs without a thread (stateless runs): this run's "
            f"thread {thread_id} stays"
        )
    await ensure_thread(svc, thread_id, req.create_thread)
    if req.resuming:
        return await _resume_waiting(svc, thread_id, req.resume)
    if req.graph and req.input is None and await _at_breakpoint(svc, thread_id):
        return await _resume_waiting(svc, thread_id, None)  # LangGraph: no input goes on
    field = "body.input.messages"
    messages = []
    if not req.graph:  # (a graph's messages join the conversation through its checkpoints)
        messages = input_messages((req.input or {}).get("messages"), field, "input")
        messages = await unseen(svc, thread_id, messages, field)
    cut_off: list[str] = []
    if req.multitask == "rollback":
        for status in RUN_UNFINISHED:
            page = await svc.list_runs(thread_id, status=status, limit=1000)
            cut_off += [r.id for r in page.data]
    try:
        run = await svc.create_run(
            thread_id, goal_of(req.input, req.agent), options=req.options(), messages=messages
        )
    except SessionBusy as busy:
        busy.message = (
            f"Thread {thread_id} is already running a task (run {busy.active_run_id}). Wait "
            "for it to finish or choose a different multitask_strategy (enqueue, interrupt, "
            "rollback)."
        )
        raise
    for run_id in cut_off:
        await roll_back(svc, run_id)
    return run, 0


async def _at_breakpoint(svc: Service, thread_id: str) -> bool:
    """Whether a graph's run of the thread waits at a breakpoint (interrupt_before/after)."""
    page = await svc.list_runs(thread_id, status=RunStatus.WAITING, limit=1)
    return bool(page.data) and "breakpoint" in (page.data[0].waiting_for or {})


async def roll_back(svc: Service, run_id: str) -> None:
    """Remove a run interrupted by a rollback, with everything it wrote."""
    try:
        if (await svc.get_run(run_id)).status is RunStatus.CANCELLED:
            await graphs.delete_run(svc, run_id)
    except (NotFound, Conflict):
        pass


async def _resume_waiting(svc: Service, thread_id: str, answer: Any) -> tuple[Run, int]:
    page = await svc.list_runs(thread_id, status=RunStatus.WAITING, limit=1)
    if not page.data:
        raise Conflict(
            f"no run of thread {thread_id} waits for a person: command.resume has nothing to "
            "answer",
            thread_id=thread_id,
        )
    waiting = page.data[0]
    interrupt_id = interrupt_of(waiting)["id"]
    if isinstance(answer, dict) and answer and set(answer) != {interrupt_id}:
        thread = await svc.get_session(thread_id)
        if all(_issued_since(key, thread.created_at) for key in answer):
            # LangGraph's {interrupt id: answer} form naming an interrupt that no longer waits
            stale = ", ".join(sorted(k for k in answer if k != interrupt_id))
            raise Conflict(
                f"command.resume answers interrupt {stale}, which is not waiting in thread "
                f"{thread_id}: the waiting interrupt is {interrupt_id}",
                thread_id=thread_id,
                interrupt_id=interrupt_id,
            )
    if isinstance(answer, dict) and set(answer) == {interrupt_id}:
        answer = answer[interrupt_id]
    after = await last_event_id(svc, waiting.id)
    return await svc.resume_run(waiting.id, answer), after


def _issued_since(key: str, moment: datetime) -> bool:
    """Whether key could be an interrupt id of a thread begun at moment: a tether id made since
    (an answer keyed by other ids, such as items of the caller's, is just an answer)."""
    made = made_at(key)
    return made is not None and made >= moment - timedelta(milliseconds=1)
