"""The store logic shared by the SQL backends; each backend brings its own SQL and driver."""
