"""The embedded SQLite backend (stdlib sqlite3, WAL, one writer)."""
