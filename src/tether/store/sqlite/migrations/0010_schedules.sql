-- tether schema, version 10: schedules. Each creates a run at the times its cron expression
-- names (in its time zone), in one session or in a new session each time. next_run_at is the
-- next tick: a worker claims a tick by moving it forward from the value it read, so each tick
-- fires once whatever the number of workers.

CREATE TABLE schedules (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    cron        TEXT NOT NULL,
    timezone    TEXT NOT NULL,
    agent       TEXT NOT NULL,
    goal        TEXT,
    input       TEXT NOT NULL DEFAULT '{}',
    session_id  TEXT,
    metadata    TEXT NOT NULL DEFAULT '{}',
    end_at      INTEGER,
    enabled     INTEGER NOT NULL DEFAULT 1,
    next_run_at INTEGER,
    last_run_id TEXT,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
-- Listing an owner's schedules.
CREATE INDEX schedules_by_owner ON schedules (owner, id);
-- Finding the due ticks.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1;
