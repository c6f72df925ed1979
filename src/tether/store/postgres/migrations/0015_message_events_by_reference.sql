-- tether schema, version 15: SQLite may store a message.added event's message by reference
-- and reads events through a view, events_read, that gives the data it stood for. PostgreSQL
-- keeps a full copy in every event: its events_read is the table as it is.
CREATE VIEW events_read AS
SELECT id, type, owner, session_id, run_id, data, created_at FROM events;
