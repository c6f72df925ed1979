"""tether: durable Sessions and Runs for AI agents.

import tether

tt = tether.open("tether.db")   # or tether.connect("http://host:8080", api_key="tk_…")
s = tt.sessions.create(title="Keep helping me with this project")
run = s.runs.create(goal="Analyse the failing tests", agent="echo").wait()
print(run.status, run.started_at, run.ended_at, run.error)
"""

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
from tether.runtime.async_facade import AsyncRunHandle, AsyncSessionHandle, AsyncTether, open_async
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
from tether.version import __version__

if TYPE_CHECKING:
    from tether.client import AsyncClient, Client, connect, connect_async

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


def __getattr__(name: str) -> Any:
    # The HTTP client (and httpx, the [client] extra) load on first use: local programs never
    # pay for them, nor need them installed.
    if name in ("AsyncClient", "Client", "connect", "connect_async"):
        try:
            from tether import client
        except ModuleNotFoundError as exc:
            raise MissingExtra(f"tether.{name}", "client", exc.name) from exc

        return getattr(client, name)
    raise AttributeError(f"module 'tether' has no attribute {name!r}")
