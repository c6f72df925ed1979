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
