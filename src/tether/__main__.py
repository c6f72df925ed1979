"""``python -m tether`` is the ``tether`` command."""

from tether.cli.main import main

main()
