"""Confinement: where an agent's workspace tools may act.

A run names its workspace (session project or run input): caller text. It is resolved (symlinks
too, no ``~``) and must lie inside a root the operator allows. With no roots configured, any
workspace is allowed only while the database holds no active API key: the library, ``tether
demo`` and ``tether serve --no-auth`` serve one local user, a server with keys serves others.
Once it holds keys, each owner's workspaces lie in its own folder of a root (``ROOT/OWNER``):
no key holder works in another owner's folder, nor in a root itself.
Whatever the workspace, no tool opens tether's own database files nor the kernel's pseudo
files (``/proc``, ``/sys``, ``/dev``).
"""

from __future__ import annotations

import os
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from tether.core.errors import WorkspaceNotAllowed

#: The environment variable listing workspace roots (os.pathsep-separated).
ROOTS_ENV = "TETHER_WORKSPACE_ROOTS"
#: What an operator does to allow workspaces, for error messages.
HOW_TO_ALLOW = (
    f"start the server with `tether serve --workspace-root DIR` (repeatable; `tether worker` "
    f"takes it too) or set {ROOTS_ENV} (folders separated by {os.pathsep!r}); in a program, "
    "RuntimeSettings(workspace_roots=(DIR,))"
)
#: The files next to a SQLite database that are part of it.
SQLITE_SUFFIXES = ("", "-wal", "-shm", "-journal")
#: Kernel pseudo file systems: never a workspace, never a file a tool opens.
PSEUDO = (Path("/proc"), Path("/sys"), Path("/dev"))


def roots_from_env(value: str | None) -> tuple[str, ...]:
    """The roots TETHER_WORKSPACE_ROOTS lists (empty entries ignored)."""
    return tuple(part for part in (value or "").split(os.pathsep) if part.strip())


def database_files(location: str) -> tuple[Path, ...]:
    """The files of a SQLite database at location (none for memory or a server URL)."""
    if location == ":memory:" or "://" in location or not location:
        return ()
    main = Path(os.path.realpath(location))
    return tuple(Path(f"{main}{suffix}") for suffix in SQLITE_SUFFIXES)


def inside(path: Path, folder: Path) -> bool:
    """Whether the resolved path is folder or lies under it."""
    return path == folder or folder in path.parents


def owner_folders(roots: Iterable[Path], owner: str | None) -> tuple[Path, ...]:
    """The folder of owner in each root (none for an owner that is no plain folder name)."""
    if not owner or owner in (".", "..") or "/" in owner or "\x00" in owner:
        return ()
    return tuple(root / owner for root in roots)


async def _no_keys() -> bool:
    return False


@dataclass(frozen=True)
class Confinement:
    """The workspaces a run may use and the files no tool may open."""

    #: Resolved folders a workspace must lie in; None = no roots configured.
    roots: tuple[Path, ...] | None = None
    #: Resolved paths of tether's own database files.
    protected: tuple[Path, ...] = ()
    #: Whether the database holds an active API key (then a workspace needs a root).
    keyed: Callable[[], Awaitable[bool]] = field(default=_no_keys, compare=False)

    @classmethod
    def of(
        cls,
        roots: Iterable[str | Path] | None,
        *,
        database: str = "",
        keyed: Callable[[], Awaitable[bool]] = _no_keys,
    ) -> Confinement:
        """Confinement for the given roots (resolved now), protecting the database's files."""
        resolved = None if roots is None else tuple(Path(os.path.realpath(r)) for r in roots)
        return cls(roots=resolved, protected=database_files(database), keyed=keyed)

    async def workspace(self, requested: object, owner: str | None = None) -> Path:
        """The resolved workspace a run of owner asked for; WorkspaceNotAllowed unless it is
        allowed."""
        if not isinstance(requested, str) or not requested.strip() or "\x00" in requested:
            raise WorkspaceNotAllowed(
                "coder needs a workspace: set the session's project {'workspace': '/path'} "
                "or the run input {'workspace': '/path'}"
            )
        import asyncio  # here: the CLI reads ROOTS_ENV from this module at start-up

        keyed = await self.keyed()
        return await asyncio.to_thread(self._allowed, requested, keyed, owner)

    def _allowed(self, requested: str, keyed: bool, owner: str | None) -> Path:
        path = Path(os.path.realpath(requested))  # no ~ expansion: "~" is a folder name
        if any(inside(path, p) for p in PSEUDO):
            raise WorkspaceNotAllowed(f"the workspace {requested!r} is a kernel pseudo folder")
        if self.roots is None and keyed:
            raise WorkspaceNotAllowed(
                f"the workspace {requested!r} is not allowed: this server has API keys and "
                f"no workspace roots, so the coder agent may use no folder; {HOW_TO_ALLOW}"
            )
        if self.roots is not None and not any(inside(path, root) for root in self.roots):
            raise WorkspaceNotAllowed(
                f"the workspace {requested!r} is outside the workspace roots this server "
                f"allows; to allow it, {HOW_TO_ALLOW}"
            )
        if (
            self.roots is not None
            and keyed
            and not any(inside(path, folder) for folder in owner_folders(self.roots, owner))
        ):
            raise WorkspaceNotAllowed(
                f"the workspace {requested!r} is not in its owner's folder: on a server with "
                "API keys, an owner's workspaces lie in the folder named after the owner "
                "inside a workspace root (ROOT/OWNER/…)"
            )
        if not path.is_dir():
            raise WorkspaceNotAllowed(f"the workspace {requested!r} is not a folder")
        return path

    def refuses(self, path: Path) -> str | None:
        """Why no tool may open the resolved path (None if it may): one of tether's database
        files (by path, or by device and inode for another name of the same file) or a kernel
        pseudo file. Never opens the path: closing any descriptor of the database file would
        drop the SQLite locks this process holds on it."""
        if any(inside(path, p) for p in PSEUDO):
            return "a kernel pseudo file"
        if not self.protected:
            return None
        if path in self.protected:
            return "one of tether's own database files"
        try:
            seen = os.stat(path)
        except OSError:
            return None
        for file in self.protected:
            try:
                known = os.stat(file)
            except OSError:
                continue
            if (known.st_dev, known.st_ino) == (seen.st_dev, seen.st_ino):
                return "one of tether's own database files"
        return None
