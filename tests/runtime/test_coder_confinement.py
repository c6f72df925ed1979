"""The coder agent's confinement, attacked: workspaces outside the operator's roots, session
memory written to steer the offline policy, tether's own database files, pseudo files, huge
files, commands that leave processes behind or look for the server's secrets."""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from tests.runtime.test_coder import MISSING, REPORT, TEST_REPORT
from tests.support import Backend
from tests.waiting import eventually
from tether.core.errors import WorkspaceNotAllowed
from tether.core.run import Run
from tether.core.status import RunStatus
from tether.core.step import StepKind
from tether.runtime.api_keys import ApiKeys
from tether.runtime.builtin.coder.sandbox import TMP_BYTES, bwrap_problem
from tether.runtime.builtin.coder.workspace import MAX_READ, Workspace
from tether.runtime.confinement import Confinement, owner_folders
from tether.runtime.service import Service
from tether.runtime.tools import ToolError
from tether.runtime.worker import Worker
from tether.store.base import Store


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """The one workspace root the operator allows."""
    folder = (tmp_path / "root").resolve()
    folder.mkdir()
    return folder


@pytest.fixture
def project(root: Path) -> Path:
    """The seed's failing project, inside the root."""
    ws = root / "calc-project"
    (ws / "calc").mkdir(parents=True)
    (ws / "tests").mkdir()
    (ws / "calc" / "__init__.py").write_text("")
    (ws / "calc" / "report.py").write_text(REPORT)
    (ws / "tests" / "__init__.py").write_text("")
    (ws / "tests" / "test_report.py").write_text(TEST_REPORT)
    return ws


@pytest.fixture
def confined(service: Service, root: Path, loop: asyncio.AbstractEventLoop) -> Iterator[Service]:
    """The service with a worker allowing workspaces under root only."""
    settings = replace(service.settings, workspace_roots=(str(root),))
    worker = Worker(service.store, service.agents, clock=service.clock, settings=settings)

    async def start() -> None:
        worker.start()

    loop.run_until_complete(start())
    yield service
    loop.run_until_complete(worker.stop(grace=2.0))


def need_bwrap() -> None:
    """Skip without a working bubblewrap; in CI (CI=true) its absence is an error."""
    problem = bwrap_problem()
    if problem is None:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"CI must run the sandbox tests: {problem}")
    pytest.skip(problem)


async def _coder(service: Service, goal: str, **project: object) -> Run:
    session = await service.create_session(project=dict(project))
    run = await service.create_run(session.id, goal, agent="coder")
    return await service.wait_run(run.id, timeout=60)


# -- workspaces ------------------------------------------------------------------------------


@pytest.mark.parametrize("asked", ["/", "~", "~/", "..", "/etc"])
async def test_a_workspace_outside_the_roots_fails_the_run_at_once(
    confined: Service, root: Path, asked: str
) -> None:
    done = await _coder(confined, "Find out why the tests fail.", workspace=asked)
    assert done.status is RunStatus.FAILED
    assert done.error is not None and done.error.type == "WorkspaceNotAllowed"
    assert "--workspace-root" in done.error.message
    assert "TETHER_WORKSPACE_ROOTS" in done.error.message
    assert not await confined.list_steps(done.id)  # not one model or tool call


async def test_a_symlink_inside_a_root_to_a_folder_outside_is_refused(
    confined: Service, root: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    done = await _coder(confined, "Find out why the tests fail.", workspace=str(root / "link"))
    assert done.status is RunStatus.FAILED
    assert done.error is not None and "outside the workspace roots" in done.error.message


async def test_the_input_workspace_is_checked_like_the_context_one(
    confined: Service, project: Path
) -> None:
    session = await confined.create_session(project={"workspace": str(project)})
    run = await confined.create_run(
        session.id, "Find out why the tests fail.", agent="coder", input={"workspace": "/"}
    )
    done = await confined.wait_run(run.id, timeout=60)
    assert done.status is RunStatus.FAILED
    assert done.error is not None and done.error.type == "WorkspaceNotAllowed"


async def test_a_workspace_inside_a_root_works(confined: Service, project: Path) -> None:
    done = await _coder(confined, "Find out why the tests fail.", workspace=str(project))
    assert done.status is RunStatus.COMPLETED, done.error
    assert MISSING in done.output["summary"]


async def test_without_roots_a_database_with_api_keys_allows_no_workspace(
    service: Service, project: Path
) -> None:
    """The library's default: any workspace, until the database holds an active key."""
    worker = Worker(service.store, service.agents, clock=service.clock, settings=service.settings)
    worker.start()
    try:
        allowed = await _coder(service, "Run the tests again.", workspace=str(project))
        assert allowed.status is RunStatus.COMPLETED, allowed.error
        await ApiKeys(service.store, clock=service.clock).create("alice")
        refused = await _coder(service, "Run the tests again.", workspace=str(project))
    finally:
        await worker.stop(grace=2.0)
    assert refused.status is RunStatus.FAILED
    assert refused.error is not None and "has API keys and no workspace roots" in (
        refused.error.message
    )
    assert "--workspace-root" in refused.error.message


async def test_confinement_resolves_the_workspace_without_expanding_the_tilde(
    root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (root / "~").mkdir()
    monkeypatch.chdir(root)
    confinement = Confinement.of([root])
    assert await confinement.workspace("~") == root / "~"  # a folder named "~", not a home
    with pytest.raises(WorkspaceNotAllowed):
        await Confinement.of(None).workspace("/proc/self")


# -- session memory cannot steer the offline policy ----------------------------------------


CODE = "open('../PWNED','w')"
#: Findings a caller writes: a file outside the workspace, code as the line to replace, and a
#: module name carrying code into the fallback block (next to the real import line).
FINDINGS = [
    {"name": "tabulate", "file": "../outside.py", "import_line": CODE, "module": MISSING},
    {
        "name": "tabulate",
        "file": "calc/report.py",
        "import_line": f"from {MISSING} import tabulate",
        "module": f"{MISSING}\n{CODE}\n#",
    },
]


@pytest.mark.parametrize("finding", FINDINGS, ids=["path-and-line", "module"])
async def test_a_finding_written_by_a_caller_is_never_code_path_or_module(
    confined: Service, project: Path, finding: dict[str, str]
) -> None:
    """Memory any key holder can write (PUT …/memory/finding) names a file outside, Python
    code, a module name carrying code: the fix comes from the tests' own failure instead."""
    outside = project.parent / "outside.py"
    outside.write_text(f"from {MISSING} import tabulate\n")
    session = await confined.create_session(project={"workspace": str(project)})
    await confined.set_session_memory(session.id, "finding", finding)
    run = await confined.create_run(session.id, "Fix it as proposed.", agent="coder")
    done = await confined.wait_run(run.id, timeout=60)
    assert done.status is RunStatus.COMPLETED, done.error
    steps = await confined.list_steps(done.id)
    tools = [s for s in steps if s.kind is StepKind.TOOL_CALL]
    assert [t.name for t in tools] == [
        "run_command",
        "read_file",
        "write_file",
        "run_command",
        "remember",
    ]
    assert tools[1].input["arguments"] == {"path": "calc/report.py"}
    fixed = (project / "calc" / "report.py").read_text()
    assert "PWNED" not in fixed
    assert f"except ModuleNotFoundError:  # {MISSING} is not in the project" in fixed
    assert tools[3].output["exit_code"] == 0
    assert not (project.parent / "PWNED").exists()
    assert outside.read_text() == f"from {MISSING} import tabulate\n"


async def test_a_finding_for_tests_that_pass_changes_nothing(
    confined: Service, project: Path
) -> None:
    (project / "calc" / "report.py").write_text("def render(rows):\n    return 'name value\\nbb'\n")
    session = await confined.create_session(project={"workspace": str(project)})
    await confined.set_session_memory(
        session.id,
        "finding",
        {"name": "tabulate", "file": "tests/test_report.py", "import_line": "import unittest"},
    )
    run = await confined.create_run(session.id, "Fix it as proposed.", agent="coder")
    done = await confined.wait_run(run.id, timeout=60)
    assert done.status is RunStatus.COMPLETED, done.error
    assert "nothing to fix" in done.output["summary"]
    tools = [s.name for s in await confined.list_steps(done.id) if s.kind is StepKind.TOOL_CALL]
    assert tools == ["run_command"]
    assert (project / "tests" / "test_report.py").read_text() == TEST_REPORT


# -- files no tool opens -----------------------------------------------------------------------


def test_pseudo_files_are_refused_even_with_root_as_workspace(tmp_path: Path) -> None:
    ws = Workspace("/")
    for path in ("proc/self/environ", "/proc/self/environ", "/proc/1/environ", "sys/kernel"):
        with pytest.raises(ToolError, match="pseudo file"):
            ws.read(path)
    inside = Workspace(tmp_path)
    with pytest.raises(ToolError, match="outside the workspace"):
        inside.read("/proc/self/environ")
    (tmp_path / "env").symlink_to("/proc/self/environ")
    with pytest.raises(ToolError, match="outside the workspace"):
        inside.read("env")


async def test_no_tool_opens_the_database_files_even_inside_the_workspace(
    tmp_path: Path,
) -> None:
    from tether.store.factory import open_store

    db = tmp_path / "tether.db"
    store: Store = open_store(str(db))
    try:
        await store.schema_version()
        assert f"{db.name}-wal" in os.listdir(tmp_path)
        os.link(db, tmp_path / "copy.db")  # another name of the same file
        ws = Workspace(tmp_path, Confinement.of(None, database=store.location))
        for name in ("tether.db", "tether.db-wal", "tether.db-shm", "copy.db", "./tether.db"):
            with pytest.raises(ToolError, match="tether's own database files"):
                ws.read(name)
        for name in ("tether.db", "tether.db-journal", "tether.db-wal"):
            with pytest.raises(ToolError, match="tether's own database files"):
                ws.write(name, "x")
        assert f"{db.name}-journal" not in os.listdir(tmp_path)
        (tmp_path / "notes.txt").write_text("fine")
        assert ws.read("notes.txt") == "fine"
        assert await store.schema_version() > 0  # the store is untouched
    finally:
        await store.close()


@pytest.fixture
def sqlite_only(backend: Backend) -> None:
    if backend.name != "sqlite":
        pytest.skip("only SQLite keeps its database in files")


async def test_the_agent_is_given_its_database_files_to_protect(
    sqlite_only: None, service: Service, store: Store, worker: Worker
) -> None:
    """Through the executor: a run whose workspace holds the database cannot read it."""
    folder = str(Path(store.location).parent.absolute())

    async def peek(ctx: object) -> dict[str, object]:
        from tether.runtime.run_context import RunContext

        assert isinstance(ctx, RunContext)
        ws = Workspace(await ctx.confinement.workspace(folder), ctx.confinement)
        outcomes: dict[str, object] = {}
        for name in (Path(store.location).name, Path(store.location).name + "-wal"):
            try:
                ws.read(name)
                outcomes[name] = "read"
            except ToolError as exc:
                outcomes[name] = str(exc)
        return outcomes

    service.agents.register("peek", peek)
    session = await service.create_session()
    run = await service.create_run(session.id, "peek", agent="peek")
    done = await service.wait_run(run.id, timeout=30)
    assert done.status is RunStatus.COMPLETED, done.error
    assert all("tether's own database files" in v for v in done.output.values()), done.output


def _bytes_read() -> int:
    """Bytes this process has read with read() and the like, all threads (Linux)."""
    for line in Path("/proc/self/io").read_text().splitlines():
        if line.startswith("rchar:"):
            return int(line.split()[1])
    raise AssertionError("no rchar in /proc/self/io")


def test_read_file_reads_no_more_than_it_keeps(tmp_path: Path) -> None:
    size = 64 * 1024 * 1024
    big = tmp_path / "big.log"
    with big.open("wb") as f:
        f.write(b"x" * size)
    ws = Workspace(tmp_path)
    before = _bytes_read()
    text = ws.read("big.log")
    read = _bytes_read() - before
    assert text.startswith("x" * MAX_READ)
    assert text.endswith(f"[{size - MAX_READ} more bytes not read]")
    assert len(text) < MAX_READ + 100
    assert read < size // 8  # not the 64 MiB file (a few other reads may happen meanwhile)


def test_read_file_refuses_fifos_and_folders(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe")
    ws = Workspace(tmp_path)
    with pytest.raises(ToolError, match="not a regular file"):
        ws.read("pipe")  # would block forever if opened for reading
    (tmp_path / "sub").mkdir()
    with pytest.raises(ToolError, match="not a regular file"):
        ws.read("sub")


# -- commands ------------------------------------------------------------------------------

LOCKER = """
import fcntl, os, subprocess, sys
child = '''
import fcntl, sys, time
f = open("held.lock", "w")
fcntl.flock(f, fcntl.LOCK_EX)
open("locked", "w").close()
time.sleep(600)
'''
subprocess.Popen([sys.executable, "-c", child], stdout=subprocess.DEVNULL,
                 stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
while not os.path.exists("locked"):
    pass
print("parent leaves its child behind")
"""


def _unlocked(path: Path) -> bool:
    with path.open("w") as f:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        fcntl.flock(f, fcntl.LOCK_UN)
        return True


PYTHON_FLAGS = ("PYTHONDONTWRITEBYTECODE", "PYTHONUNBUFFERED")


def _sandbox(flag: bool) -> bool:
    if flag:
        need_bwrap()
    return flag


@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "bwrap"])
async def test_a_command_leaves_no_process_behind(tmp_path: Path, sandbox: bool) -> None:
    ws = Workspace(tmp_path, sandbox=_sandbox(sandbox))
    (tmp_path / "locker.py").write_text(LOCKER)
    result = await ws.run("python locker.py", 30)
    assert result["exit_code"] == 0, result
    assert "leaves its child behind" in result["output"]
    # The child held a lock until it died: it is gone once the lock is free.
    await eventually(lambda: _unlocked(tmp_path / "held.lock"), what="the child to be killed")


@pytest.mark.slow
@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "bwrap"])
async def test_a_command_timing_out_is_killed_with_its_group(tmp_path: Path, sandbox: bool) -> None:
    ws = Workspace(tmp_path, sandbox=_sandbox(sandbox))
    stays = LOCKER.replace(
        'print("parent leaves its child behind")', "import time; time.sleep(600)"
    )
    (tmp_path / "locker.py").write_text(stays)
    result = await ws.run("python locker.py", 3)
    assert result["timed_out"] is True and result["exit_code"] is None
    await eventually(lambda: _unlocked(tmp_path / "held.lock"), what="the group to be killed")


@pytest.mark.parametrize("sandbox", [False, True], ids=["plain", "bwrap"])
async def test_a_command_runs_with_resource_limits_and_a_scrubbed_environment(
    tmp_path: Path, sandbox: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TETHER_TEST_SERVER_SECRET", "s3cr3t-value")
    ws = Workspace(tmp_path, sandbox=_sandbox(sandbox))
    (tmp_path / "probe.py").write_text(
        "import json, os, resource\n"
        "names = ['RLIMIT_CPU', 'RLIMIT_AS', 'RLIMIT_FSIZE', 'RLIMIT_NPROC', 'RLIMIT_CORE']\n"
        "print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd(), 'limits': "
        "{n: resource.getrlimit(getattr(resource, n)) for n in names}}))\n"
    )
    result = await ws.run("python probe.py", 20)
    assert result["exit_code"] == 0, result
    seen = json.loads(result["output"])
    assert "s3cr3t-value" not in result["output"]
    # bubblewrap adds PWD, the folder the command starts in
    assert set(seen["env"]) <= {"PATH", "HOME", "LANG", "PWD", *PYTHON_FLAGS}
    assert seen["env"]["HOME"] == seen["cwd"] == str(ws.root)
    infinity = -1
    for name, (soft, hard) in seen["limits"].items():
        assert soft != infinity and soft == hard, name
    assert seen["limits"]["RLIMIT_CPU"][0] == 21
    assert seen["limits"]["RLIMIT_CORE"][0] == 0


async def test_bwrap_hides_the_servers_secrets_and_keeps_writes_in_the_workspace(
    tmp_path: Path,
) -> None:
    need_bwrap()
    ws_root = tmp_path / "ws"
    ws_root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    ws = Workspace(ws_root, sandbox=True)
    home_file = Path.home() / f".tether-test-{os.getpid()}"
    targets = [str(outside / "x.txt"), "inside.txt", str(home_file)]
    (ws_root / "escape.py").write_text(
        "import os\n"
        f"for target in {targets!r}:\n"
        "    try:\n"
        "        open(target, 'w').write('x')\n"
        "        print('WROTE', target)\n"
        "    except OSError as exc:\n"
        "        print('REFUSED', target, exc.errno)\n"
        "try:\n"
        f"    print('ENVIRON', open('/proc/{os.getpid()}/environ').read())\n"
        "except OSError:\n"
        "    print('NO ENVIRON')\n"
    )
    result = await ws.run("python escape.py", 20)
    assert result["exit_code"] == 0, result
    assert not (outside / "x.txt").exists()
    assert not home_file.exists()
    assert (ws_root / "inside.txt").read_text() == "x"
    assert f"REFUSED {outside / 'x.txt'}" in result["output"]
    assert "NO ENVIRON" in result["output"]


async def test_a_command_in_bwrap_has_no_capabilities_even_when_tether_is_root(
    tmp_path: Path,
) -> None:
    """As root, bubblewrap keeps every capability unless told otherwise: the command could
    remount / read-write or unmount the folders hidden from it."""
    need_bwrap()
    (tmp_path / "caps.py").write_text(
        "for line in open('/proc/self/status'):\n"
        "    if line.startswith('CapEff'):\n"
        "        print(line.strip())\n"
    )
    result = await Workspace(tmp_path, sandbox=True).run("python caps.py", 20)
    assert result["exit_code"] == 0, result
    assert "CapEff:\t0000000000000000" in result["output"], result["output"]


async def test_a_workspace_swapped_for_a_symlink_after_it_was_allowed_is_refused(
    tmp_path: Path,
) -> None:
    """Another run (whose workspace holds this one) replaces the folder with a symlink to a
    folder outside: the sandbox must not bind that folder writable as the workspace."""
    need_bwrap()
    root = tmp_path / "root"
    (root / "x").mkdir(parents=True)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "marker.txt").write_text("OUTSIDE")
    confinement = Confinement.of([root])
    ws = Workspace(await confinement.workspace(str(root / "x")), confinement, sandbox=True)
    (root / "x").rename(root / "x.old")
    (root / "x").symlink_to(outside)
    with pytest.raises(ToolError, match="workspace"):
        result = await ws.run("cat marker.txt", 20)
        pytest.fail(f"the command ran in the folder outside: {result}")
    assert (outside / "marker.txt").read_text() == "OUTSIDE"


async def test_with_api_keys_an_owner_works_only_in_its_own_folder_of_a_root(
    confined: Service, root: Path
) -> None:
    """Two owners under one root: neither may name the other's folder, nor the root itself
    (which holds every owner's folder)."""
    keys = ApiKeys(confined.store, clock=confined.clock)
    await keys.create("alice")
    await keys.create("bob")
    alice, bob = confined.for_owner("alice"), confined.for_owner("bob")
    for name in ("alice", "bob"):
        (root / name / "proj").mkdir(parents=True)
        (root / name / "proj" / "secret.txt").write_text(f"{name}'s")
    goal = "Run the tests again."
    for asked in (root / "alice" / "proj", root / "alice", root, root / "bob" / ".." / "alice"):
        stolen = await _coder(bob, goal, workspace=str(asked))
        assert stolen.status is RunStatus.FAILED, asked
        assert stolen.error is not None and stolen.error.type == "WorkspaceNotAllowed"
        assert "ROOT/OWNER" in stolen.error.message
    own = await _coder(bob, goal, workspace=str(root / "bob" / "proj"))
    assert own.status is RunStatus.COMPLETED, own.error
    assert (await _coder(alice, goal, workspace=str(root / "alice"))).status is (
        RunStatus.COMPLETED
    )


def test_an_owner_that_is_no_plain_folder_name_has_no_folder(root: Path) -> None:
    assert owner_folders([root], "alice") == (root / "alice",)
    for owner in ("..", ".", "a/b", "../alice", "", None):
        assert owner_folders([root], owner) == ()


@pytest.mark.parametrize("tool", ["read", "write"])
def test_a_folder_swapped_for_a_symlink_after_the_check_is_not_followed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tool: str
) -> None:
    """A command of another run swaps a folder of the path for a symlink to a folder outside
    between the path's check and its opening (played here right after the check)."""
    root, outside = tmp_path / "ws", tmp_path / "outside"
    (root / "d").mkdir(parents=True)
    (root / "d" / "f.txt").write_text("inside")
    outside.mkdir()
    (outside / "f.txt").write_text("OUTSIDE")
    ws = Workspace(root, sandbox=False)
    checked, checks = Workspace.resolve, []
    last_check = 1 if tool == "read" else 2  # write checks the path, then opens it

    def swap_after_check(self: Workspace, relative: str) -> Path:
        path = checked(self, relative)
        checks.append(relative)
        if len(checks) == last_check:
            (root / "d").rename(root / "d.old")
            (root / "d").symlink_to(outside)
        return path

    monkeypatch.setattr(Workspace, "resolve", swap_after_check)
    with pytest.raises(ToolError):
        if tool == "read":
            pytest.fail(f"read through the symlink: {ws.read('d/f.txt')!r}")
        ws.write("d/f.txt", "written")
    assert (outside / "f.txt").read_text() == "OUTSIDE"


async def test_a_command_cannot_fill_memory_through_the_sandboxs_tmpfs(tmp_path: Path) -> None:
    """/tmp, /dev and /dev/shm inside the sandbox are tmpfs (memory): writing many files, each
    under the file size limit, must stop at a small size, not at half the machine's memory."""
    need_bwrap()
    (tmp_path / "fill.py").write_text(
        "import errno, sys\n"
        "folder = ['/tmp', '/dev/shm', '/dev'][int(sys.argv[1])]\n"
        "chunk = b'x' * (1 << 20)\n"
        "written = 0\n"
        "try:\n"
        "    for n in range(512):\n"
        "        with open(f'{folder}/f{n}', 'wb') as f:\n"
        "            f.write(chunk)\n"
        "        written += 1\n"
        "except OSError as exc:\n"
        "    print('FULL', errno.errorcode[exc.errno])\n"
        "print('MIB', written)\n"
    )
    ws = Workspace(tmp_path, sandbox=True)
    for n, refusal in enumerate(("ENOSPC", "ENOSPC", "EROFS")):
        result = await ws.run(f"python fill.py {n}", 60)
        assert f"FULL {refusal}" in result["output"], (n, result["output"])
        assert int(result["output"].split("MIB ")[1]) <= TMP_BYTES // (1 << 20)
