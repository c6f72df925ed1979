"""``python -m tether`` is the ``tether`` command."""

from tether.cli.launch import main

main()
