"""tether: durable Sessions and Runs for AI agents.

import tether

tt = tether.open("tether.db")   # or tether.connect("http://host:8080", api_key="tk_…")
s = tt.sessions.create(title="Keep helping me with this project")
run = s.runs.create(goal="Analyse the failing tests", agent="echo").wait()
print(run.status, run.started_at, run.ended_at, run.error)
"""

import importlib as _importlib
from typing import TYPE_CHECKING, Any

from tether.core.errors import (
    AgentNotFound,
    AlreadyExists,
    Conflict,
    HostNotAllowed,
    IdempotencyConflict,
    InvalidTransition,
    LeaseLost,
    MissingExtra,
    ModelError,
    NotFound,
    PayloadTooLarge,
    ReplayMismatch,
    SchemaTooNew,
    ServerUnreachable,
    SessionBusy,
    SessionClosed,
    SessionExpired,
    StepLimitExceeded,
    StoreError,
    StoreUnavailable,
    TetherError,
    TooManySteps,
    Unauthorized,
    UsageError,
    WorkspaceNotAllowed,
)
from tether.version import __version__

if TYPE_CHECKING:
    from tether.client import AsyncClient, Client, connect, connect_async
    from tether.core.event import Event, EventType
    from tether.core.memory import MemoryItem, MemoryScope
    from tether.core.message import Message, Role
    from tether.core.run import ErrorInfo, HeldLease, IfBusy, Run, RunOptions, RunSummary
    from tether.core.schedule import Schedule
    from tether.core.session import Session
    from tether.core.status import RunStatus, SessionStatus, StepStatus
    from tether.core.step import Step, StepKind
    from tether.core.usage import Usage
    from tether.runtime.agent import AgentRegistry, agent
    from tether.runtime.async_facade import (
        AsyncRunHandle,
        AsyncSessionHandle,
        AsyncTether,
        open_async,
    )
    from tether.runtime.facade import Tether, open
    from tether.runtime.handles import RunHandle, SessionHandle
    from tether.runtime.held_run import HeldRun
    from tether.runtime.model_agent import ModelAgent
    from tether.runtime.models import Model, ModelResponse, ScriptedModel, StreamingModel, ToolCall
    from tether.runtime.run_context import RunContext, StepFailed, ToolInDoubt, ToolOutcome
    from tether.runtime.service import Service
    from tether.runtime.settings import RuntimeSettings
    from tether.runtime.tools import Tool, ToolError, tool
    from tether.runtime.worker import Worker

__all__ = [
    "AgentNotFound",
    "AgentRegistry",
    "AlreadyExists",
    "AsyncClient",
    "AsyncRunHandle",
    "AsyncSessionHandle",
    "AsyncTether",
    "Client",
    "Conflict",
    "ErrorInfo",
    "Event",
    "EventType",
    "HeldLease",
    "HeldRun",
    "HostNotAllowed",
    "IdempotencyConflict",
    "IfBusy",
    "InvalidTransition",
    "LeaseLost",
    "MemoryItem",
    "MemoryScope",
    "Message",
    "MissingExtra",
    "Model",
    "ModelAgent",
    "ModelError",
    "ModelResponse",
    "NotFound",
    "PayloadTooLarge",
    "ReplayMismatch",
    "Role",
    "Run",
    "RunContext",
    "RunHandle",
    "RunOptions",
    "RunStatus",
    "RunSummary",
    "RuntimeSettings",
    "Schedule",
    "SchemaTooNew",
    "ScriptedModel",
    "ServerUnreachable",
    "Service",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "SessionExpired",
    "SessionHandle",
    "SessionStatus",
    "Step",
    "StepFailed",
    "StepKind",
    "StepLimitExceeded",
    "StepStatus",
    "StoreError",
    "StoreUnavailable",
    "StreamingModel",
    "Tether",
    "TetherError",
    "TooManySteps",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolInDoubt",
    "ToolOutcome",
    "Unauthorized",
    "Usage",
    "UsageError",
    "Worker",
    "WorkspaceNotAllowed",
    "__version__",
    "agent",
    "connect",
    "connect_async",
    "open",
    "open_async",
    "tool",
]


#: Where each public name lives, loaded on first use: ``import tether`` costs its errors and
#: version only, and a program (or the CLI) pays for the parts it touches. The HTTP client
#: (httpx, the [client] extra) is among them: local programs never need it installed.
_HOMES = {
    "tether.core.event": ("Event", "EventType"),
    "tether.core.memory": ("MemoryItem", "MemoryScope"),
    "tether.core.message": ("Message", "Role"),
    "tether.core.run": ("ErrorInfo", "HeldLease", "IfBusy", "Run", "RunOptions", "RunSummary"),
    "tether.core.schedule": ("Schedule",),
    "tether.core.session": ("Session",),
    "tether.core.status": ("RunStatus", "SessionStatus", "StepStatus"),
    "tether.core.step": ("Step", "StepKind"),
    "tether.core.usage": ("Usage",),
    "tether.runtime.agent": ("AgentRegistry", "agent"),
    "tether.runtime.async_facade": (
        "AsyncRunHandle",
        "AsyncSessionHandle",
        "AsyncTether",
        "open_async",
    ),
    "tether.runtime.facade": ("Tether", "open"),
    "tether.runtime.handles": ("RunHandle", "SessionHandle"),
    "tether.runtime.held_run": ("HeldRun",),
    "tether.runtime.model_agent": ("ModelAgent",),
    "tether.runtime.models": (
        "Model",
        "ModelResponse",
        "ScriptedModel",
        "StreamingModel",
        "ToolCall",
    ),
    "tether.runtime.run_context": ("RunContext", "StepFailed", "ToolInDoubt", "ToolOutcome"),
    "tether.runtime.service": ("Service",),
    "tether.runtime.settings": ("RuntimeSettings",),
    "tether.runtime.tools": ("Tool", "ToolError", "tool"),
    "tether.runtime.worker": ("Worker",),
    "tether.client": ("AsyncClient", "Client", "connect", "connect_async"),
}
_HOME_OF = {name: module for module, names in _HOMES.items() for name in names}
#: The subpackages an eager ``import tether`` used to bind (``core`` and ``version`` still are).
_SUBPACKAGES = ("runtime", "store")


def __getattr__(name: str) -> Any:
    if name in _SUBPACKAGES:
        return _importlib.import_module(f"tether.{name}")  # binds tether.<name> too
    home = _HOME_OF.get(name)
    if home is None:
        raise AttributeError(f"module 'tether' has no attribute {name!r}")
    try:
        module = _importlib.import_module(home)
    except ModuleNotFoundError as exc:
        if home != "tether.client" or not exc.name or exc.name.startswith("tether"):
            raise
        raise MissingExtra(f"tether.{name}", "client", exc.name) from exc
    value = getattr(module, name)
    globals()[name] = value  # the next lookup is an ordinary one
    return value


def __dir__() -> list[str]:
    # Without httpx the client's names are left out, as the eager module never bound them:
    # dir() lists only what getattr returns (inspect.getmembers, pydoc and help rely on it).
    names = {*globals(), *__all__, *_SUBPACKAGES}
    if not _client_installed():
        names -= set(_HOMES["tether.client"])
    return sorted(names)


def _client_installed() -> bool:
    import importlib.util  # here: only dir() needs it

    try:
        return importlib.util.find_spec("httpx") is not None
    except (ImportError, ValueError):
        return False
