"""A workspace directory and the tools that act on it, never outside it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from tether.runtime.tools import Tool, ToolError, tool

_SKIP = {".git", "__pycache__", ".venv", "node_modules", ".mypy_cache", ".pytest_cache"}
MAX_LIST = 500
MAX_READ = 100_000
MAX_WRITE = 1_000_000
MAX_COMMAND_OUTPUT = 16_000


class Workspace:
    """A folder the coder may read, write and run commands in."""

    def __init__(self, root: str | Path) -> None:
        path = Path(root).expanduser()
        if not path.is_dir():
            raise ToolError(f"the workspace {root} is not a folder")
        self.root = path.resolve()

    def resolve(self, relative: str) -> Path:
        """The absolute path of relative inside the workspace; ToolError if it leads outside."""
        candidate = (self.root / relative).resolve()
        if candidate != self.root and self.root not in candidate.parents:
            raise ToolError(f"{relative!r} is outside the workspace")
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
            for current, dirs, files in os.walk(base):
                dirs[:] = sorted(d for d in dirs if d not in _SKIP)
                for name in sorted(files):
                    found.append(str((Path(current) / name).relative_to(ws.root)))
                    if len(found) >= MAX_LIST:
                        return [*found, f"… (more than {MAX_LIST} files)"]
            return found

        @tool
        def read_file(path: str) -> str:
            """Read a text file of the workspace."""
            target = ws.resolve(path)
            if not target.is_file():
                raise ToolError(f"{path!r} is not a file")
            text = target.read_text(encoding="utf-8", errors="replace")
            if len(text) > MAX_READ:
                return text[:MAX_READ] + f"\n… [{len(text) - MAX_READ} more characters]"
            return text

        @tool
        def write_file(path: str, content: str) -> dict[str, Any]:
            """Write (create or replace) a text file of the workspace."""
            target = ws.resolve(path)
            if len(content) > MAX_WRITE:
                raise ToolError(f"content is larger than {MAX_WRITE} characters")
            if target.is_dir():
                raise ToolError(f"{path!r} is a folder")
            target.parent.mkdir(parents=True, exist_ok=True)
            existed = target.exists()
            target.write_text(content, encoding="utf-8")
            return {"path": path, "bytes": len(content.encode()), "created": not existed}

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

    async def run(self, command: str, timeout_seconds: float) -> dict[str, Any]:
        """Run command in the workspace with a timeout; the process group is killed on
        timeout or cancellation."""
        if not 0 < timeout_seconds <= 3600:
            raise ToolError("timeout_seconds must be between 0 and 3600")
        argv = self._argv(command)
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
            )
        except OSError as exc:
            raise ToolError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from exc
        timed_out = False
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout_seconds)
        except TimeoutError:
            timed_out = True
            _kill(proc)
            out, _ = await proc.communicate()
        finally:
            if proc.returncode is None:
                _kill(proc)
                with contextlib.suppress(ProcessLookupError):
                    await proc.wait()
        text = out.decode("utf-8", errors="replace")
        if len(text) > MAX_COMMAND_OUTPUT:
            text = text[-MAX_COMMAND_OUTPUT:]
            text = f"[… earlier output cut]\n{text}"
        return {
            "command": command,
            "exit_code": None if timed_out else proc.returncode,
            "timed_out": timed_out,
            "output": text,
        }


def _kill(proc: asyncio.subprocess.Process) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
