"""Runs in the shapes a webhook sends them in: tether's own (``/v1``), or LangGraph's Run for
runs started through the LangGraph-compatible API (which serves them in the same shape).

Status mapping (LangGraph): ready → pending, running → running, waiting → interrupted (it waits
for a person), completed → success, failed → error, timed_out → timeout, cancelled → interrupted.
"""

from __future__ import annotations

from typing import Any

from tether.core.clock import to_iso
from tether.core.run import Run, RunSummary
from tether.core.serde import to_data
from tether.core.status import RunStatus

RUN_STATUS: dict[RunStatus, str] = {
    RunStatus.READY: "pending",
    RunStatus.RUNNING: "running",
    RunStatus.WAITING: "interrupted",
    RunStatus.COMPLETED: "success",
    RunStatus.FAILED: "error",
    RunStatus.TIMED_OUT: "timeout",
    RunStatus.CANCELLED: "interrupted",
}

#: Where a run started through this API keeps what LangGraph clients sent with it.
LG_KEY = "langgraph"


def lg_info(run: Run) -> dict[str, Any]:
    info = run.metadata.get(LG_KEY)
    return info if isinstance(info, dict) else {}


def run_error(run: Run | RunSummary) -> dict[str, str] | None:
    if run.error is None:
        if run.status is RunStatus.TIMED_OUT:
            return {"error": "TimeoutError", "message": "the run timed out"}
        if run.status is RunStatus.FAILED:
            return {"error": "Error", "message": "the run failed"}
        return None
    return {"error": run.error.type, "message": run.error.message}


#: The fields of run_dict, in its order (what a caller's select may name).
RUN_FIELDS = (
    "run_id",
    "thread_id",
    "assistant_id",
    "created_at",
    "updated_at",
    "status",
    "metadata",
    "multitask_strategy",
    "kwargs",
    "started_at",
    "ended_at",
    "error",
)


def run_dict(run: Run) -> dict[str, Any]:
    """A run as LangGraph's Run, with tether's started_at, ended_at and error alongside."""
    info = lg_info(run)
    kwargs: dict[str, Any] = {"input": run.input}
    kwargs.update(info.get("kwargs") or {})
    return {
        "run_id": run.id,
        "thread_id": run.session_id,
        "assistant_id": info.get("assistant_id", run.agent),
        "created_at": to_iso(run.created_at),
        "updated_at": to_iso(run.updated_at),
        "status": RUN_STATUS[run.status],
        "metadata": {k: v for k, v in run.metadata.items() if k != LG_KEY},
        "multitask_strategy": info.get("multitask_strategy", "reject"),
        "kwargs": kwargs,
        "started_at": to_iso(run.started_at),
        "ended_at": to_iso(run.ended_at),
        "error": run_error(run) if run.status in (RunStatus.FAILED, RunStatus.TIMED_OUT) else None,
    }


def native_dict(run: Run) -> dict[str, Any]:
    """A run as ``GET /v1/runs/{id}`` answers it."""
    out: dict[str, Any] = to_data(run)
    return out


def webhook_shape(run: Run) -> str:
    """The shape a webhook of this run sends it in: langgraph for a run started through that
    API, else native."""
    return "langgraph" if LG_KEY in run.metadata else "native"


def shaped(run: Run, shape: str) -> dict[str, Any]:
    """The run in that shape."""
    return run_dict(run) if shape == "langgraph" else native_dict(run)
