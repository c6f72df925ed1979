"""The coder agent over HTTP, driven by key holders: a workspace is a folder under the roots
the operator configured, or nothing; session memory a caller writes never steers it."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.api.httpkit import Server, new_run, new_session, start_server, wait_run
from tests.runtime.test_coder import MISSING, REPORT, TEST_REPORT
from tests.serving import cli


@pytest.fixture(scope="module")
def rooted(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Server, Path]]:
    """A server whose workspaces must lie under one of two roots (TETHER_WORKSPACE_ROOTS)."""
    folder = tmp_path_factory.mktemp("rooted")
    root, other = folder / "workspaces", folder / "more"
    root.mkdir()
    other.mkdir()
    server = start_server(folder, env={"TETHER_WORKSPACE_ROOTS": f"{root}{os.pathsep}{other}"})
    yield server, root.resolve()
    server.stop()


def _project(folder: Path) -> Path:
    (folder / "calc").mkdir(parents=True)
    (folder / "tests").mkdir()
    (folder / "calc" / "__init__.py").write_text("")
    (folder / "calc" / "report.py").write_text(REPORT)
    (folder / "tests" / "__init__.py").write_text("")
    (folder / "tests" / "test_report.py").write_text(TEST_REPORT)
    return folder


def _coder(client: httpx.Client, goal: str, workspace: str, **memory: Any) -> dict[str, Any]:
    session = new_session(client, project={"workspace": workspace})
    for key, value in memory.items():
        put = client.put(f"/v1/sessions/{session['id']}/memory/{key}", json={"value": value})
        assert put.status_code == 200, put.text
    return wait_run(client, new_run(client, session["id"], goal=goal, agent="coder")["id"], 60)


def _refused(run: dict[str, Any]) -> str:
    assert run["status"] == "failed", run
    assert run["error"]["type"] == "WorkspaceNotAllowed", run["error"]
    message: str = run["error"]["message"]
    assert "--workspace-root" in message and "TETHER_WORKSPACE_ROOTS" in message
    return message


@pytest.mark.parametrize("workspace", ["/", "~", "~/", "/etc", "."])
def test_a_key_holder_gets_no_workspace_on_a_server_without_roots(
    alice: httpx.Client, workspace: str
) -> None:
    message = _refused(_coder(alice, "Find out why the tests fail.", workspace))
    assert "has API keys and no workspace roots" in message


@pytest.mark.slow
def test_a_key_holder_gets_no_workspace_outside_the_roots(
    rooted: tuple[Server, Path], tmp_path: Path
) -> None:
    server, root = rooted
    (root / "escape").symlink_to(tmp_path)
    with server.client("alice") as alice:
        for workspace in ("/", "~", str(tmp_path), str(root / ".."), str(root / "escape")):
            message = _refused(_coder(alice, "Find out why the tests fail.", workspace))
            assert "outside the workspace roots" in message
            assert "more" not in message  # the roots are not revealed
        # What a symlink leads to is not revealed either.
        assert str(tmp_path) not in message


@pytest.mark.slow
def test_a_workspace_inside_a_root_works_and_the_server_said_how_it_confines(
    rooted: tuple[Server, Path],
) -> None:
    server, root = rooted
    project = _project(root / "alice" / "project")
    with server.client("alice") as alice:
        run = _coder(alice, "Find out why the tests fail.", str(project))
    assert run["status"] == "completed", run
    assert MISSING in run["output"]["summary"]
    log = "".join(server.log)
    assert f"coder workspace roots: {root}, " in log
    assert "coder commands: " in log and "own process group; scrubbed environment" in log
    assert "coder command limits: CPU time" in log


@pytest.mark.slow
def test_session_memory_written_over_http_is_never_run(rooted: tuple[Server, Path]) -> None:
    server, root = rooted
    project = _project(root / "bob" / "project")
    code = "open('../PWNED','w')"
    finding = {
        "name": "tabulate",
        "file": "calc/report.py",
        "import_line": f"from {MISSING} import tabulate",
        "module": f"{MISSING}\n{code}\n#",
    }
    with server.client("bob") as bob:
        run = _coder(bob, "Fix it as proposed.", str(project), finding=finding)
    assert run["status"] == "completed", run
    fixed = (project / "calc" / "report.py").read_text()
    assert "PWNED" not in fixed and "except ModuleNotFoundError" in fixed
    assert not (root / "PWNED").exists() and not (root / "bob" / "PWNED").exists()


@pytest.mark.slow
def test_a_key_holder_gets_no_workspace_in_another_owners_folder(
    rooted: tuple[Server, Path],
) -> None:
    """Two owners under one root: bob names alice's project, her folder, the root holding both,
    or a way into hers through his own."""
    server, root = rooted
    project = _project(root / "alice" / "stolen")
    (root / "bob").mkdir(exist_ok=True)
    (root / "bob" / "door").symlink_to(root / "alice")
    with server.client("bob") as bob:
        for asked in (project, root / "alice", root, root / "bob" / "door" / "stolen"):
            run = _coder(bob, "Find out why the tests fail.", str(asked))
            assert run["status"] == "failed", run
            assert run["error"]["type"] == "WorkspaceNotAllowed", run["error"]
            assert "ROOT/OWNER" in run["error"]["message"]
    assert not list(project.rglob("__pycache__"))  # nothing of alice's ever ran


@pytest.mark.slow
def test_serve_refuses_a_workspace_root_that_is_no_folder(tmp_path: Path) -> None:
    done = cli(
        "serve", "--db", tmp_path / "t.db", "--workspace-root", tmp_path / "missing", timeout=60
    )
    assert done.returncode != 0
    assert f"--workspace-root {tmp_path / 'missing'}: no such folder" in done.stderr
