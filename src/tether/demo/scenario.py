"""The seed, end to end: one session, three runs that analyse, fix and verify a real project,
then a summary run built from the session's tool history. The session stays active."""

from __future__ import annotations

import shutil
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from tether.runtime.facade import Tether
from tether.runtime.handles import RunHandle, SessionHandle

SESSION_TITLE = "Keep helping me with this project"

#: (what the user says, the run's goal) — the seed's three turns, then a summary.
TURNS = (
    ("First find out why the tests fail.", "Analyse the failing tests"),
    ("OK, fix it the way you proposed.", "Fix it as proposed"),
    ("Now run the full test suite again.", "Run the full test suite again"),
    ("Summarise what we did.", "Summarise the session from its tool history"),
)


@dataclass
class DemoResult:
    """What the demo produced."""

    workspace: Path
    session: SessionHandle
    runs: list[RunHandle] = field(default_factory=list)


def copy_project(target: Path | None = None) -> Path:
    """A fresh copy of the bundled project (its tests fail: a module it imports is missing)."""
    if target is None:
        target = Path(tempfile.mkdtemp(prefix="tether-demo-")) / "calc"
    source = resources.files("tether.demo").joinpath("project")
    with resources.as_file(source) as path:
        shutil.copytree(path, target, ignore=shutil.ignore_patterns("__pycache__"))
    return target.resolve()


def play(
    tt: Tether,
    workspace: Path,
    *,
    on_run: Callable[[int, RunHandle], None] | None = None,
    timeout: float = 120.0,
) -> DemoResult:
    """Play the seed on workspace; on_run is told about each run as it finishes."""
    version = f"{sys.version_info.major}.{sys.version_info.minor}"
    session = tt.sessions.create(
        title=SESSION_TITLE,
        project={
            "workspace": str(workspace),
            "name": "calc",
            "test_command": "python -m unittest -v",
        },
        metadata={"source": "tether demo"},
    )
    session.memory["python_version"] = version
    session.memory["preferences"] = "the user wants minimal changes"
    tt.user_memory["report_style"] = "short plain-text reports"
    result = DemoResult(workspace=workspace, session=session)
    for number, (said, goal) in enumerate(TURNS, start=1):
        session.messages.add("user", said)
        run = session.runs.create(goal, agent="coder", timeout_seconds=timeout).wait(timeout)
        result.runs.append(run)
        if on_run is not None:
            on_run(number, run)
    result.session = session.refresh()
    return result
