-- tether schema, version 4: a session counts the runs deleted from it, so that its run count
-- stays true while run_count keeps numbering runs (a deleted run's number is never reused).

ALTER TABLE sessions ADD COLUMN deleted_runs INTEGER NOT NULL DEFAULT 0;
