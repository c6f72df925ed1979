"""Every error tether raises, in three families: usage, conflicts/not-found, and store failures.

Each class has a stable ``code`` (used on the wire) and a docstring that is its default message.
"""

from __future__ import annotations

from typing import Any, ClassVar


class TetherError(Exception):
    """Something went wrong in tether."""

    code: ClassVar[str] = "tether_error"
    #: HTTP status the edges answer with.
    http_status: ClassVar[int] = 500
    #: True when retrying the same call later may succeed.
    retryable: ClassVar[bool] = False

    def __init__(self, message: str | None = None, **details: Any) -> None:
        self.message = message or (type(self).__doc__ or type(self).__name__).strip()
        self.details = details
        super().__init__(self.message)

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r})"


# -- you used the API wrong -------------------------------------------------------------------


class UsageError(TetherError):
    """The request is not valid."""

    code = "validation_error"
    http_status = 422


class PayloadTooLarge(UsageError):
    """The request body is larger than the limit."""

    code = "payload_too_large"
    http_status = 413


class WorkspaceNotAllowed(UsageError):
    """A run asked for a workspace outside the roots the operator allows."""

    code = "workspace_not_allowed"


class MissingExtra(TetherError):
    """This part of tether needs optional packages that are not installed."""

    code = "missing_extra"
    http_status = 501

    def __init__(self, feature: str, extra: str, missing: str | None = None) -> None:
        found = f" (no module named {missing!r})" if missing else ""
        super().__init__(
            f"{feature} needs tether[{extra}]: pip install 'tether[{extra}]'{found}",
            extra=extra,
        )
        self.extra = extra


class Unauthorized(TetherError):
    """A valid API key is required."""

    code = "unauthorized"
    http_status = 401


class HostNotAllowed(TetherError):
    """This server does not answer for this host name."""

    code = "host_not_allowed"
    http_status = 421


class NotFound(TetherError):
    """No such object."""

    code = "not_found"
    http_status = 404

    def __init__(self, kind: str, ident: str, *, hint: str | None = None) -> None:
        found = f"{kind} {ident} not found"
        super().__init__(f"{found}: {hint}" if hint else found, kind=kind, id=ident)
        self.kind = kind
        self.ident = ident


# -- the state does not allow it --------------------------------------------------------------


class Conflict(TetherError):
    """The current state does not allow this."""

    code = "conflict"
    http_status = 409


class SessionClosed(Conflict):
    """The session is closed: it is read-only."""

    code = "session_closed"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} is closed: it is read-only (start a new session)",
            session_id=session_id,
        )


class SessionExpired(Conflict):
    """The session expired: it is read-only."""

    code = "session_expired"

    def __init__(self, session_id: str) -> None:
        super().__init__(
            f"session {session_id} expired after its TTL without activity: it is read-only",
            session_id=session_id,
        )


class SessionBusy(Conflict):
    """The session already has an active run."""

    code = "session_busy"

    def __init__(self, session_id: str, active_run_id: str, active_status: str) -> None:
        super().__init__(
            f"session {session_id} is busy: run {active_run_id} is {active_status} "
            "(use if_busy=enqueue to queue, or if_busy=interrupt to cancel it)",
            session_id=session_id,
            active_run_id=active_run_id,
        )
        self.active_run_id = active_run_id


class InvalidTransition(Conflict):
    """This status change is not allowed."""

    code = "invalid_transition"

    def __init__(
        self,
        what: str,
        current: str,
        target: str,
        ident: str | None = None,
        *,
        message: str | None = None,
    ) -> None:
        subject = f"{what} {ident}" if ident else what
        super().__init__(
            message or f"{subject} cannot go from {current} to {target}",
            current=current,
            target=target,
        )
        self.current = current
        self.target = target


class IdempotencyConflict(Conflict):
    """This idempotency key was already used for a different request."""

    code = "idempotency_conflict"


class AlreadyExists(Conflict):
    """An object with this id already exists."""

    code = "already_exists"


class LeaseLost(Conflict):
    """This worker no longer holds the run (it was cancelled, reaped or finished elsewhere)."""

    code = "lease_lost"


class TooManySteps(Conflict):
    """This held run holds as many steps as a run its caller executes may hold."""

    code = "too_many_steps"


# -- the run or the store failed --------------------------------------------------------------


class StoreError(TetherError):
    """The store failed."""

    code = "store_error"


class StoreUnavailable(StoreError):
    """The database cannot be reached right now; retry shortly."""

    code = "store_unavailable"
    http_status = 503
    retryable = True


class SchemaTooNew(StoreError):
    """The database was written by a newer tether."""

    code = "schema_too_new"


class ReplayMismatch(TetherError):
    """On replay, the agent asked for another step than the one recorded at that position."""

    code = "replay_mismatch"


class AgentNotFound(UsageError):
    """No agent is registered under this name."""

    code = "agent_not_found"
    http_status = 404


class ModelError(TetherError):
    """The model provider refused or failed the request."""

    code = "model_error"
    http_status = 502


class StepLimitExceeded(TetherError):
    """The agent used every step it may take (model and tool calls) without a final answer."""

    code = "step_limit_exceeded"
    http_status = 422


class ServerUnreachable(TetherError):
    """The tether server cannot be reached right now; retry shortly."""

    code = "server_unreachable"
    http_status = 503
    retryable = True


# -- errors that crossed the wire -------------------------------------------------------------


def _by_code(root: type[TetherError]) -> dict[str, type[TetherError]]:
    found = {root.code: root}
    for sub in root.__subclasses__():
        found.update(_by_code(sub))
    return found


#: Attributes some errors carry, rebuilt from the details sent with them.
_ATTRIBUTES = {
    NotFound: {"kind": "kind", "ident": "id"},
    SessionBusy: {"active_run_id": "active_run_id"},
    InvalidTransition: {"current": "current", "target": "target"},
    MissingExtra: {"extra": "extra"},
}


def error_from_code(code: str, message: str, details: dict[str, Any] | None = None) -> TetherError:
    """The error whose stable code is code (TetherError for an unknown one), as a remote tether
    raised it: same class, message and details."""
    cls = _by_code(TetherError).get(code, TetherError)
    error = cls.__new__(cls)
    TetherError.__init__(error, message, **(details or {}))
    for base, attributes in _ATTRIBUTES.items():
        if isinstance(error, base):
            for attribute, key in attributes.items():
                setattr(error, attribute, error.details.get(key))
    return error
