-- tether schema, version 12: an append rewrites fewer pages.
-- * A session's activity and expiry indexes are keyed by the second of its last activity
--   (activity_second = last_activity_at / 1000000), so the index entries move at most once a
--   second, not on every message, run or event. Triggers keep the column equal to that second
--   on every insert and every change of last_activity_at, whoever writes it; the row keeps the
--   exact time, and reads order by the second, then by the exact time (the same order as
--   before: the second grows with the time).

ALTER TABLE sessions ADD COLUMN activity_second INTEGER NOT NULL DEFAULT 0;
UPDATE sessions SET activity_second = last_activity_at / 1000000;

CREATE TRIGGER sessions_activity_second_on_insert AFTER INSERT ON sessions
WHEN new.activity_second <> new.last_activity_at / 1000000
BEGIN
    UPDATE sessions SET activity_second = new.last_activity_at / 1000000 WHERE id = new.id;
END;

CREATE TRIGGER sessions_activity_second_on_update AFTER UPDATE OF last_activity_at ON sessions
WHEN new.activity_second <> new.last_activity_at / 1000000
BEGIN
    UPDATE sessions SET activity_second = new.last_activity_at / 1000000 WHERE id = new.id;
END;

-- Listing an owner's sessions, newest activity first.
DROP INDEX sessions_by_activity;
CREATE INDEX sessions_by_activity ON sessions (owner, activity_second DESC, id DESC);
-- The sweeper: active sessions by the second they expire in.
DROP INDEX sessions_by_expiry;
CREATE INDEX sessions_by_expiry ON sessions ((activity_second + ttl_seconds))
    WHERE status = 'active' AND ttl_seconds IS NOT NULL;

-- * Events lose AUTOINCREMENT, whose counter row in sqlite_sequence every append rewrote. Event
--   ids are stream cursors and are still never reused: that row now holds the highest id ever
--   deleted (a trigger raises it, deletes being rare), and a new event takes the id after both
--   it and the highest id present (insert_event). The table is rebuilt with its rows and ids.
ALTER TABLE events RENAME TO events_autoincrement;
CREATE TABLE events (
    id         INTEGER PRIMARY KEY,
    type       TEXT NOT NULL,
    owner      TEXT NOT NULL,
    session_id TEXT,
    run_id     TEXT,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)
SELECT id, type, owner, session_id, run_id, data, created_at FROM events_autoincrement;
INSERT INTO sqlite_sequence (name, seq)
VALUES ('events', COALESCE((SELECT seq FROM sqlite_sequence
                            WHERE name = 'events_autoincrement'), 0));
DROP TABLE events_autoincrement;
CREATE INDEX events_by_session ON events (session_id, id) WHERE session_id IS NOT NULL;
CREATE INDEX events_by_run ON events (run_id, id) WHERE run_id IS NOT NULL;

CREATE TRIGGER events_ids_are_never_reused AFTER DELETE ON events
WHEN old.id > (SELECT seq FROM sqlite_sequence WHERE name = 'events')
BEGIN
    UPDATE sqlite_sequence SET seq = old.id WHERE name = 'events';
END;
