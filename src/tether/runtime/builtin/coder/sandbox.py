"""How ``run_command`` confines a command: resource limits set before it starts, a scrubbed
environment, and bubblewrap (``bwrap``) where it is installed and can create namespaces.

Inside bubblewrap the file system is read-only outside the workspace (``/dev`` too); ``/tmp``
and ``/dev/shm`` hold 64 MiB each (memory); the home folder, ``/run``, every workspace root
(other runs' workspaces) and the database's folder are empty (small tmpfs); the database files
are hidden even inside the workspace; the command has no capabilities (even for root), its own
process, network (none), IPC and host-name namespaces, and dies with tether.
"""

from __future__ import annotations

import functools
import math
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tether.runtime.confinement import Confinement, inside

#: Size of the sandbox's /tmp and /dev/shm (memory; /dev is read-only); each folder hidden
#: from it is a 1 MiB tmpfs.
TMP_BYTES = 64 * 1024**2
_HIDDEN_BYTES = 1024**2
#: bwrap options every sandbox starts with (before the folder mounts).
_BASE = (
    "--cap-drop",  # bwrap run by root keeps every capability otherwise (remount / read-write…)
    "ALL",
    "--die-with-parent",
    "--unshare-all",
    "--new-session",
    "--ro-bind",
    "/",
    "/",
    "--dev",
    "/dev",
    "--size",
    str(TMP_BYTES),
    "--tmpfs",
    "/dev/shm",
    "--remount-ro",  # the /dev tmpfs would hold half the machine's memory
    "/dev",
    "--proc",
    "/proc",
    "--size",  # a tmpfs is memory: bounded, or a command fills half the machine's RAM
    str(TMP_BYTES),
    "--tmpfs",
    "/tmp",
)
_GIB = 1024**3


@dataclass(frozen=True, slots=True)
class Limits:
    """Resource limits of each command (besides its timeout)."""

    #: Address space of each process.
    memory_bytes: int = 4 * _GIB
    #: Largest file a process may write.
    file_bytes: int = 1 * _GIB
    #: Processes (and threads) the command may add to those its user already runs.
    processes: int = 256
    #: Open files per process.
    open_files: int = 1024

    def describe(self) -> str:
        processes = f"{self.processes} more processes"
        if os.getuid() == 0:
            processes += " (not enforced: tether runs as root)"
        return (
            f"CPU time = the command's timeout, memory {self.memory_bytes // _GIB} GiB, "
            f"file size {self.file_bytes // _GIB} GiB, {processes}, no core files"
        )


LIMITS = Limits()


def rlimits(timeout_seconds: float, limits: Limits = LIMITS) -> list[tuple[int, int]]:
    """The (resource, value) pairs for one command, never above the current hard limits."""
    wanted = [
        (resource.RLIMIT_CPU, math.ceil(timeout_seconds) + 1),
        (resource.RLIMIT_AS, limits.memory_bytes),
        (resource.RLIMIT_FSIZE, limits.file_bytes),
        (resource.RLIMIT_NPROC, _user_tasks() + limits.processes),
        (resource.RLIMIT_NOFILE, limits.open_files),
        (resource.RLIMIT_CORE, 0),
    ]
    pairs = []
    for which, value in wanted:
        hard = resource.getrlimit(which)[1]
        pairs.append((which, value if hard == resource.RLIM_INFINITY else min(value, hard)))
    return pairs


def preexec(pairs: list[tuple[int, int]]) -> Callable[[], None]:
    """A function for the child, between fork and exec: sets each limit (soft = hard)."""

    def apply() -> None:
        for which, value in pairs:
            resource.setrlimit(which, (value, value))

    return apply


def _user_tasks() -> int:
    """Processes and threads this user runs now (0 where /proc is missing)."""
    uid, count = os.getuid(), 0
    try:
        entries = list(os.scandir("/proc"))
    except OSError:
        return 0
    for entry in entries:
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += len(os.listdir(f"/proc/{entry.name}/task"))
            except OSError:
                continue
    return count


@functools.cache
def bwrap_problem() -> str | None:
    """Why commands cannot run inside bubblewrap here (None: they can). Tried once."""
    bwrap = shutil.which("bwrap")
    if bwrap is None:
        return "bwrap is not installed (Debian/Ubuntu: apt-get install bubblewrap)"
    try:
        done = subprocess.run(
            [bwrap, *_BASE, *_interpreter(), "--", sys.executable, "-c", ""],
            capture_output=True,
            timeout=30,
            check=False,
        )
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bwrap cannot start: {exc}"
    if done.returncode != 0:
        reason = done.stderr.decode(errors="replace").strip().splitlines()
        return f"bwrap cannot create its namespaces here: {reason[-1] if reason else done}"
    return None


def _interpreter() -> list[str]:
    """bwrap options that show the running interpreter's folders (read-only), also where they
    lie in a folder the sandbox hides (a virtual environment under /tmp or the home folder)."""
    args = []
    for prefix in sorted({sys.prefix, sys.base_prefix, sys.exec_prefix}):
        args += ["--ro-bind", prefix, prefix]
    return args


def sandboxed(
    argv: list[str], workspace: Path, confinement: Confinement, workspace_fd: int
) -> list[str]:
    """argv run by bubblewrap, seeing only workspace writable (see the module's docstring).
    workspace_fd is an open descriptor of it (passed to bwrap): the folder bound is the one
    checked, not whatever its path leads to when bwrap starts."""
    bwrap = shutil.which("bwrap") or "bwrap"
    hidden = {Path("/run"), Path.home()}
    hidden.update(confinement.roots or ())
    hidden.update(f.parent for f in confinement.protected)
    args = [bwrap, *_BASE]
    for folder in sorted(hidden, key=lambda p: len(p.parts)):
        if folder != Path("/") and folder.is_dir() and not inside(folder, workspace):
            args += ["--size", str(_HIDDEN_BYTES), "--tmpfs", str(folder)]
    args += _interpreter()
    args += ["--bind-fd", str(workspace_fd), str(workspace)]
    for file in confinement.protected:
        if file.exists():
            args += ["--ro-bind", "/dev/null", str(file)]
    return [*args, "--chdir", str(workspace), "--", *argv]


def describe(roots: tuple[str, ...] | None) -> list[str]:
    """What confines the coder agent in this process, one line per aspect (for `tether serve`)."""
    if roots is None:
        where = "any folder while the database holds no API key, none once it does"
    elif roots:
        where = ", ".join(str(Path(os.path.realpath(r))) for r in roots)
    else:
        where = "none"
    problem = bwrap_problem()
    sandbox = (
        "bubblewrap (read-only file system outside the workspace, no network)"
        if problem is None
        else f"no sandbox ({problem})"
    )
    return [
        f"coder workspace roots: {where}",
        f"coder commands: {sandbox}; own process group; scrubbed environment",
        f"coder command limits: {LIMITS.describe()}",
    ]
