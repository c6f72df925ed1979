"""The PostgreSQL store: many processes on many machines sharing one database."""
