"""Session stores for agent frameworks, backed by tether (each needs its framework's extra)."""
