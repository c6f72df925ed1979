"""What the CLI shows about a session or a run, gathered once and printed as text or JSON."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tether.core.serde import to_data

if TYPE_CHECKING:
    from tether.core.memory import MemoryItem
    from tether.core.run import Run
    from tether.core.session import Session
    from tether.core.step import Step
    from tether.runtime.facade import Tether


@dataclass
class RunReport:
    run: Run
    steps: list[Step]
    memory: list[MemoryItem]

    @property
    def tool_calls(self) -> list[Step]:
        return [s for s in self.steps if s.kind.value == "tool_call"]

    def to_data(self, *, context: bool = True) -> dict[str, Any]:
        """The run as --json shows it; context = with the assembled context it started from."""
        data: dict[str, Any] = to_data(self.run)
        if not context:
            data.pop("context", None)
        data["duration_seconds"] = self.run.duration_seconds
        data["steps"] = to_data(self.steps)
        data["tool_calls"] = to_data(self.tool_calls)
        data["memory"] = to_data(self.memory)
        return data


@dataclass
class SessionReport:
    session: Session
    runs: list[RunReport] = field(default_factory=list)
    memory: list[MemoryItem] = field(default_factory=list)
    user_memory: list[MemoryItem] = field(default_factory=list)
    #: The memory of the session's app (empty when it belongs to none).
    app_memory: list[MemoryItem] = field(default_factory=list)
    tool_calls: list[Step] = field(default_factory=list)

    def to_data(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "session": {**to_data(self.session), "expires_at": to_data(self.session.expires_at)},
            "expires_at": to_data(self.session.expires_at),
            "runs": [r.to_data(context=False) for r in self.runs],
            "memory": {
                "session": to_data(self.memory),
                "user": to_data(self.user_memory),
                "app": to_data(self.app_memory),
                "runs": {r.run.id: to_data(r.memory) for r in self.runs},
            },
            "tool_calls": to_data(self.tool_calls),
        }
        return data


def run_report(tt: Tether, run: Run) -> RunReport:
    return RunReport(
        run=run,
        steps=tt.backend.list_steps(run.id),
        memory=tt.backend.list_run_memory(run.id),
    )


def session_report(tt: Tether, session_id: str) -> SessionReport:
    handle = tt.sessions.get(session_id)
    return SessionReport(
        session=handle,
        runs=[run_report(tt, run) for run in handle.runs.list()],
        memory=tt.backend.list_session_memory(session_id),
        user_memory=tt.backend.list_user_memory(),
        app_memory=[] if handle.app is None else tt.backend.list_app_memory(handle.app),
        tool_calls=handle.tool_calls(),
    )
