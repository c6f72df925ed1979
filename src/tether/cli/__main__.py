"""``python -m tether.cli`` runs the ``tether`` command."""

from tether.cli.main import main

main()
