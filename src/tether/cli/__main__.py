"""``python -m tether.cli`` runs the ``tether`` command."""

from tether.cli.launch import main

main()
