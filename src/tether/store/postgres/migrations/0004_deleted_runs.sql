-- tether schema, version 4: a session counts the runs deleted from it, so that its run count
-- stays true while run_count keeps numbering runs (a deleted run's number is never reused).
-- Runs deleted before this version were left in their session's count and usage: both are
-- recomputed from the runs that remain (a session's usage is the sum of its runs').

ALTER TABLE sessions ADD COLUMN deleted_runs bigint NOT NULL DEFAULT 0;

UPDATE sessions
SET deleted_runs = run_count - (SELECT count(*) FROM runs AS r WHERE r.session_id = sessions.id),
    input_tokens = (SELECT COALESCE(SUM(r.input_tokens), 0) FROM runs AS r
                    WHERE r.session_id = sessions.id),
    output_tokens = (SELECT COALESCE(SUM(r.output_tokens), 0) FROM runs AS r
                     WHERE r.session_id = sessions.id),
    model_requests = (SELECT COALESCE(SUM(r.model_requests), 0) FROM runs AS r
                      WHERE r.session_id = sessions.id)
WHERE run_count <> (SELECT count(*) FROM runs AS r WHERE r.session_id = sessions.id);
