-- tether schema, version 3: deleting a run finds the memory it promoted by index (steps by
-- session and messages by run are indexed since version 1 here).

CREATE INDEX memory_by_source_run ON memory (source_run_id) WHERE source_run_id IS NOT NULL;
