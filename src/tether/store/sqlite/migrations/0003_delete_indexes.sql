-- tether schema, version 3: deleting a session or a run finds its rows by index, whatever the
-- size of the database (steps by session, messages by run, memory promoted from a run).

CREATE INDEX steps_by_session ON steps (session_id);
CREATE INDEX messages_by_run ON messages (run_id) WHERE run_id IS NOT NULL;
CREATE INDEX memory_by_source_run ON memory (source_run_id) WHERE source_run_id IS NOT NULL;
