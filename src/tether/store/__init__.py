"""Persistence behind one Store protocol: SQLite (embedded, default) and PostgreSQL."""
