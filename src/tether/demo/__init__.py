"""The seed scenario, played by ``tether demo`` on a bundled project."""
