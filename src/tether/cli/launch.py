"""The ``tether`` command's entry point: loads the CLI, or says in one line which extra to
install when its packages (typer, rich: ``tether[cli]``) are missing."""

from __future__ import annotations

import sys

from tether.core.errors import MissingExtra


def main() -> None:
    """Run the ``tether`` command."""
    try:
        from tether.cli.main import main as run
    except ModuleNotFoundError as exc:
        print(f"error: {MissingExtra('the tether command', 'cli', exc.name)}", file=sys.stderr)
        sys.exit(1)
    run()
