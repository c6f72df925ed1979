"""A workspace folder and the tools that act on it, never outside it, never on tether's own
database files."""

from __future__ import annotations

import asyncio
import codecs
import contextlib
import os
import shlex
import signal
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

from tether.runtime.builtin.coder.sandbox import bwrap_problem, preexec, rlimits, sandboxed
from tether.runtime.confinement import Confinement, inside
from tether.runtime.tools import Tool, ToolError, tool

_SKIP = {".git", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}
MAX_LIST = 500
MAX_READ = 100_000
MAX_WRITE = 1_000_000
MAX_COMMAND_OUTPUT = 16_000
#: How a folder on a path is opened: never through a symlink (O_PATH where there is one).
_FOLDER = getattr(os, "O_PATH", os.O_RDONLY) | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class Workspace:
    """A folder the coder may read, write and run commands in.

    root must be the resolved workspace a Confinement allowed; sandbox None = bubblewrap
    where it works here, True = bubblewrap or fail, False = never."""

    def __init__(
        self,
        root: str | Path,
        confinement: Confinement | None = None,
        *,
        sandbox: bool | None = None,
    ) -> None:
        path = Path(os.path.realpath(root))
        if not path.is_dir():
            raise ToolError(f"the workspace {root} is not a folder")
        self.root = path
        self.confinement = confinement or Confinement()
        self.sandbox = sandbox

    def resolve(self, relative: str) -> Path:
        """The absolute path of relative inside the workspace; ToolError if it leads outside
        or to a file no tool may open."""
        if "\x00" in relative:
            raise ToolError("a path cannot contain NUL characters")
        candidate = Path(os.path.realpath(self.root / relative))
        if not inside(candidate, self.root):
            raise ToolError(f"{relative!r} is outside the workspace")
        refused = self.confinement.refuses(candidate)
        if refused is not None:
            raise ToolError(f"{relative!r} is {refused}: no tool may open it")
        return candidate

    def tools(self) -> list[Tool]:
        """list_files, read_file, write_file and run_command, bound to this workspace."""
        ws = self

        @tool
        def list_files(path: str = ".") -> list[str]:
            """List the files under a folder of the workspace (relative paths)."""
            base = ws.resolve(path)
            if not base.is_dir():
                raise ToolError(f"{path!r} is not a folder")
            found: list[str] = []
            # fwalk opens each folder by descriptor and never through a symlink: a folder
            # swapped for a link after the check above lists nothing outside.
            for current, dirs, files, _ in os.fwalk(base):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP)
                for name in sorted(files):
                    found.append(str((Path(current) / name).relative_to(ws.root)))
                    if len(found) >= MAX_LIST:
                        return [*found, f"… (more than {MAX_LIST} files)"]
            return found

        @tool
        def read_file(path: str) -> str:
            """Read a text file of the workspace."""
            return ws.read(path)

        @tool
        def write_file(path: str, content: str) -> dict[str, Any]:
            """Write (create or replace) a text file of the workspace."""
            return ws.write(path, content)

        @tool
        async def run_command(command: str, timeout_seconds: float = 60.0) -> dict[str, Any]:
            """Run a command (no shell) in the workspace folder; returns exit code and output."""
            return await ws.run(command, timeout_seconds)

        return [list_files, read_file, write_file, run_command]

    def _argv(self, command: str) -> list[str]:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ToolError(f"cannot parse the command: {exc}") from exc
        if not argv:
            raise ToolError("the command is empty")
        for arg in argv[1:]:
            if arg.startswith("/") or ".." in Path(arg).parts:
                self.resolve(arg)  # absolute or climbing paths must stay inside
        if argv[0] in ("python", "python3"):
            argv[0] = sys.executable  # the interpreter running tether
        return argv

    def read(self, relative: str) -> str:
        """The text of a regular file of the workspace; at most MAX_READ bytes are ever read."""
        fd = self._open(relative, os.O_RDONLY)
        with os.fdopen(fd, "rb") as file:
            size = os.fstat(fd).st_size
            data = file.read(MAX_READ)
            rest = max(size - len(data), 0) if len(data) == MAX_READ else 0
        decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        text = decoder.decode(data, final=not rest)
        return f"{text}\n… [{rest} more bytes not read]" if rest else text

    def write(self, relative: str, content: str) -> dict[str, Any]:
        """Create or replace a regular file of the workspace with content."""
        if len(content) > MAX_WRITE:
            raise ToolError(f"content is larger than {MAX_WRITE} characters")
        target = self.resolve(relative)
        if target.is_dir():
            raise ToolError(f"{relative!r} is a folder")
        existed = target.exists()
        data = content.encode()
        with os.fdopen(self._open(relative, os.O_WRONLY | os.O_CREAT | os.O_TRUNC), "wb") as f:
            f.write(data)
        return {"path": relative, "bytes": len(data), "created": not existed}

    def _open(self, relative: str, flags: int) -> int:
        """A descriptor of the regular file relative names (never a FIFO or a device), opened
        one folder at a time from the workspace's own descriptor without following a symlink:
        a folder of the path swapped for a symlink after the path was resolved is not
        followed. With O_CREAT, missing folders are created the same way."""
        target = self.resolve(relative)
        if target.exists() and not stat.S_ISREG(os.stat(target).st_mode):
            raise ToolError(f"{relative!r} is not a regular file")
        *folders, name = target.relative_to(self.root).parts or (".",)
        try:
            dir_fd = self._open_root()
            try:
                for folder in folders:
                    if flags & os.O_CREAT:
                        with contextlib.suppress(FileExistsError):
                            os.mkdir(folder, dir_fd=dir_fd)
                    parent, dir_fd = dir_fd, os.open(folder, _FOLDER, dir_fd=dir_fd)
                    os.close(parent)
                fd = os.open(
                    name,
                    flags | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                    0o644,
                    dir_fd=dir_fd,
                )
            finally:
                os.close(dir_fd)
        except OSError as exc:
            raise ToolError(f"cannot open {relative!r}: {exc.strerror or exc}") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise ToolError(f"{relative!r} is not a regular file")
        return fd

    async def run(self, command: str, timeout_seconds: float) -> dict[str, Any]:
        """Run command in the workspace: its own process group, killed whole when it ends,
        times out or is cancelled; resource limits; a scrubbed environment; bubblewrap where
        it works (see sandbox.py)."""
        if not 0 < timeout_seconds <= 3600:
            raise ToolError("timeout_seconds must be between 0 and 3600")
        argv = self._argv(command)
        root_fd = -1
        if await self._sandboxed():
            root_fd = self._open_root()
            argv = sandboxed(argv, self.root, self.confinement, root_fd)
        try:
            return await self._run(command, argv, timeout_seconds, root_fd)
        finally:
            if root_fd >= 0:
                os.close(root_fd)

    def _open_root(self) -> int:
        """A descriptor of the workspace folder, opened one folder at a time from ``/``
        without following a symlink; ToolError if its path no longer leads to it (a folder on
        the way replaced by a symlink since the workspace was allowed)."""
        fd = os.open("/", _FOLDER)
        try:
            for part in self.root.parts[1:]:
                parent, fd = fd, os.open(part, _FOLDER, dir_fd=fd)
                os.close(parent)
        except OSError as exc:
            os.close(fd)
            raise ToolError(
                f"the workspace {self.root} is no longer the folder that was allowed "
                f"(a symlink replaced it or a folder above it): {exc.strerror or exc}"
            ) from exc
        return fd

    async def _run(
        self, command: str, argv: list[str], timeout_seconds: float, root_fd: int
    ) -> dict[str, Any]:
        limits = await asyncio.to_thread(rlimits, timeout_seconds)
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "HOME": str(self.root),
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            "PYTHONUNBUFFERED": "1",
        }
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv,
                cwd=self.root,
                env=env,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
                preexec_fn=preexec(limits),
                pass_fds=(root_fd,) if root_fd >= 0 else (),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise ToolError(f"cannot run {argv[0]!r}: {exc}") from exc
        output = _Tail(MAX_COMMAND_OUTPUT * 4)
        reader = asyncio.create_task(output.collect(proc.stdout))
        timed_out = False
        try:
            await asyncio.wait_for(proc.wait(), timeout_seconds)
        except TimeoutError:
            timed_out = True
        finally:
            _kill(proc)  # the whole group: what the command left running goes too
            with contextlib.suppress(ProcessLookupError):
                await proc.wait()
            # The pipe closes once the group is gone; a process that left the group keeps
            # it open, so the output is what arrived within a moment.
            await asyncio.wait({reader}, timeout=2)
            reader.cancel()
        text = output.text()
        if len(text) > MAX_COMMAND_OUTPUT:
            text = f"[… earlier output cut]\n{text[-MAX_COMMAND_OUTPUT:]}"
        return {
            "command": command,
            "exit_code": None if timed_out else proc.returncode,
            "timed_out": timed_out,
            "output": text,
        }

    async def _sandboxed(self) -> bool:
        if self.sandbox is False:
            return False
        problem = await asyncio.to_thread(bwrap_problem)
        if problem is not None and self.sandbox:
            raise ToolError(f"commands must run in a sandbox, but {problem}")
        return problem is None


class _Tail:
    """The last bytes of a stream (a command's output is never kept whole)."""

    def __init__(self, keep: int) -> None:
        self._keep = keep
        self._data = bytearray()

    async def collect(self, stream: asyncio.StreamReader | None) -> None:
        while stream is not None and (chunk := await stream.read(65536)):
            self._data += chunk
            if len(self._data) > self._keep:
                del self._data[: -self._keep]

    def text(self) -> str:
        return self._data.decode("utf-8", errors="replace")


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
