"""The coder agent on a real (temporary) workspace: the seed's three runs in one session, with
real tool calls whose recorded results match what happened on disk."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.waiting import WAIT
from tether.core.run import Run
from tether.core.status import RunStatus, SessionStatus, StepStatus
from tether.core.step import Step, StepKind
from tether.runtime.builtin.coder.workspace import Workspace
from tether.runtime.run_context import RunContext
from tether.runtime.service import Service
from tether.runtime.tools import ToolRegistry

pytestmark = pytest.mark.usefixtures("worker")

#: A module no environment has, so the project's tests fail the same way everywhere.
MISSING = "tether_absent_tabulate"

REPORT = f"""\
from {MISSING} import tabulate


def render(rows):
    return tabulate(rows, headers=("name", "value"))
"""

TEST_REPORT = """\
import unittest

from calc.report import render


class RenderTest(unittest.TestCase):
    def test_render(self):
        out = render([("a", 1), ("bb", 22)])
        self.assertEqual(out.splitlines()[0].split(), ["name", "value"])
        self.assertIn("bb", out)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A tiny project whose unit tests fail because a module is missing."""
    root = (tmp_path / "calc-project").resolve()
    (root / "calc").mkdir(parents=True)
    (root / "tests").mkdir()
    (root / "calc" / "__init__.py").write_text("")
    (root / "calc" / "report.py").write_text(REPORT)
    (root / "tests" / "__init__.py").write_text("")
    (root / "tests" / "test_report.py").write_text(TEST_REPORT)
    return root


async def _do(service: Service, session_id: str, goal: str) -> tuple[Run, list[Step]]:
    run = await service.create_run(session_id, goal, agent="coder")
    done = await service.wait_run(run.id, timeout=30)
    assert done.status is RunStatus.COMPLETED, done.error
    return done, await service.list_steps(run.id)


def _tools(steps: list[Step]) -> list[Step]:
    return [s for s in steps if s.kind is StepKind.TOOL_CALL]


async def test_the_seed_scenario(service: Service, workspace: Path) -> None:
    session = await service.create_session(
        title="Keep helping me with this project", project={"workspace": str(workspace)}
    )

    # Run 1: analyse. The tool calls really ran, and their results are recorded.
    analyse, steps = await _do(service, session.id, "First find out why the tests fail.")
    tools = _tools(steps)
    assert [t.name for t in tools] == ["run_command", "read_file", "remember", "promote"]
    assert all(t.status is StepStatus.COMPLETED for t in tools)
    ran = tools[0]
    assert ran.input["arguments"]["command"] == "python -m unittest -v"
    assert ran.output["exit_code"] != 0
    assert f"No module named '{MISSING}'" in ran.output["output"]
    assert str(workspace) in ran.output["output"]  # a real traceback from the workspace
    read = tools[1]
    assert read.input["arguments"] == {"path": "calc/report.py"}
    assert read.output == REPORT
    assert (workspace / "calc" / "report.py").read_text() == REPORT  # nothing changed yet
    model_calls = [s for s in steps if s.kind is StepKind.MODEL_CALL]
    assert len(model_calls) == len(tools) + 1
    assert analyse.usage.requests == len(model_calls)
    assert analyse.usage.input_tokens > 0
    assert MISSING in analyse.output["summary"]
    # Each tool call and its result are one step, in order, between model calls.
    kinds = [s.kind for s in steps]
    assert kinds[0] is StepKind.MODEL_CALL and kinds[-1] is StepKind.MESSAGE
    # The finding went to working memory, then was promoted with its source.
    run_memory = {i.key: i for i in await service.list_run_memory(analyse.id)}
    assert run_memory["finding"].value["module"] == MISSING
    promoted = await service.get_session_memory(session.id, "finding")
    assert promoted.value == run_memory["finding"].value
    assert promoted.source_run_id == analyse.id
    events = await service.list_events(run_id=analyse.id)
    assert "memory.promoted" in [e.type for e in events]

    # Run 2: fix it as proposed; the file really changes and the tests pass.
    fix, steps = await _do(service, session.id, "OK, fix it the way you proposed.")
    tools = _tools(steps)
    # The tests run first: the change comes from how they fail, not from the memory on record.
    assert [t.name for t in tools] == [
        "run_command",
        "read_file",
        "write_file",
        "run_command",
        "remember",
    ]
    assert tools[0].output["exit_code"] != 0
    changed = (workspace / "calc" / "report.py").read_text()
    assert changed != REPORT
    assert "except ModuleNotFoundError" in changed
    assert tools[2].input["arguments"]["content"] == changed
    assert tools[2].output == {
        "path": "calc/report.py",
        "bytes": len(changed.encode()),
        "created": False,
    }
    assert tools[3].output["exit_code"] == 0
    assert "OK" in tools[3].output["output"]

    # Run 3: verify.
    verify, steps = await _do(service, session.id, "Now run the full test suite again.")
    (ran,) = _tools(steps)
    assert ran.name == "run_command" and ran.output["exit_code"] == 0
    assert "all passed" in verify.output["summary"]

    # One session, three runs; the session never changed because of them.
    runs = (await service.list_runs(session.id)).data
    assert [(r.seq, r.status) for r in runs] == [
        (1, RunStatus.COMPLETED),
        (2, RunStatus.COMPLETED),
        (3, RunStatus.COMPLETED),
    ]
    assert (await service.get_session(session.id)).status is SessionStatus.ACTIVE
    # The session's tool history is the union of its runs'.
    history = (await service.list_tool_calls(session_id=session.id, limit=1000)).data
    per_run = [
        s.id for r in runs for s in (await service.list_tool_calls(run_id=r.id, limit=1000)).data
    ]
    assert [s.id for s in history] == per_run
    assert len(history) == 10
    commands = await service.list_tool_calls(session_id=session.id, tool="run_command")
    assert [s.run_id for s in commands.data] == [analyse.id, fix.id, fix.id, verify.id]
    # Each later run started from a context that knew the earlier ones.
    assert verify.context is not None
    assert [r["seq"] for r in verify.context["earlier_runs"]] == [1, 2]
    assert any(m["key"] == "finding" for m in verify.context["session_memory"])


async def test_the_coder_summarises_the_session_from_its_tool_history(
    service: Service, workspace: Path
) -> None:
    session = await service.create_session(project={"workspace": str(workspace)})
    await _do(service, session.id, "Find out why the tests fail.")
    summary, steps = await _do(service, session.id, "Summarise this session.")
    (history,) = _tools(steps)
    assert history.name == "session_tool_history"
    # The earlier run's calls, then this call itself (still running when it read the history).
    assert [(c["tool"], c["status"]) for c in history.output] == [
        ("run_command", "completed"),
        ("read_file", "completed"),
        ("remember", "completed"),
        ("promote", "completed"),
        ("session_tool_history", "running"),
    ]
    text = summary.output["summary"]
    assert "Run 1" in text and "4 tool calls" in text


async def test_the_coder_without_a_workspace_fails_clearly(service: Service) -> None:
    session = await service.create_session()
    run = await service.create_run(session.id, "Find out why the tests fail.", agent="coder")
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.FAILED
    assert done.error is not None and "workspace" in done.error.message


async def test_workspace_tools_stay_inside_the_workspace(service: Service, workspace: Path) -> None:
    """The tools refuse paths outside the workspace, and the refusal is a failed tool call."""

    async def escape(ctx: RunContext) -> dict[str, object]:
        ctx.tools = ToolRegistry(Workspace(str(workspace)).tools())
        outcome = await ctx.call_tool("read_file", {"path": "../../etc/passwd"})
        listing = await ctx.tool("list_files")
        return {"ok": outcome.ok, "error": outcome.error, "files": listing}

    service.agents.register("escape", escape)
    session = await service.create_session()
    run = await service.create_run(session.id, "escape", agent="escape")
    done = await service.wait_run(run.id, timeout=WAIT)
    assert done.status is RunStatus.COMPLETED, done.error
    assert done.output["ok"] is False
    assert "outside the workspace" in done.output["error"]
    assert sorted(done.output["files"]) == [
        "calc/__init__.py",
        "calc/report.py",
        "tests/__init__.py",
        "tests/test_report.py",
    ]
    failed = await service.list_tool_calls(run_id=run.id, status=StepStatus.FAILED)
    assert [s.name for s in failed.data] == ["read_file"]
