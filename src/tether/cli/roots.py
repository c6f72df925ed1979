"""``--workspace-root``: the folders the coder agent's workspaces must lie in, for ``tether
serve`` and ``tether worker`` (or ``TETHER_WORKSPACE_ROOTS``, os.pathsep-separated)."""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Annotated

import typer

from tether.cli.app import fail
from tether.runtime.confinement import ROOTS_ENV, roots_from_env

WorkspaceRootOption = Annotated[
    list[str] | None,
    typer.Option(
        "--workspace-root",
        help=f"A folder the coder agent's workspaces must lie in; repeatable (or {ROOTS_ENV}, "
        f"separated by {os.pathsep!r}). Without one, a database with API keys allows no "
        "workspace.",
    ),
]


def workspace_roots(given: list[str] | None) -> tuple[str, ...] | None:
    """The roots given (else those of TETHER_WORKSPACE_ROOTS), resolved; each must be an
    existing folder. None when none is configured."""
    values = list(given or ()) or list(roots_from_env(os.environ.get(ROOTS_ENV)))
    if not values:
        return None
    roots = []
    for value in values:
        path = Path(value).expanduser()
        if not path.is_dir():
            fail(f"--workspace-root {value}: no such folder")
        roots.append(os.path.realpath(path))
    return tuple(roots)


def announce(log: logging.Logger, roots: tuple[str, ...] | None) -> None:
    """Log which confinement the coder agent runs under in this process."""
    from tether.runtime.builtin.coder.sandbox import describe

    for line in describe(roots):
        log.info("%s", line)
