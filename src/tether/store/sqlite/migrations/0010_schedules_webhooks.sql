-- tether schema, version 10: schedules and webhooks. A schedule creates a run at the times its
-- cron expression names (in its time zone), in one session or in a new session each time.
-- next_run_at is the next tick: a worker claims a tick by moving it forward from the value it
-- read, so each tick fires once whatever the number of workers.

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

-- Webhooks: a run may name a URL that is sent the run once it ends. Each such run has one
-- delivery row from its creation on; a worker delivers it once the run is terminal, taking it
-- by moving next_attempt_at (its lease, then its retry time) on from the value it read.
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    run_id           TEXT NOT NULL,
    owner            TEXT NOT NULL,
    url              TEXT NOT NULL,
    -- The run's shape in the body: native (/v1) or langgraph.
    shape            TEXT NOT NULL,
    -- pending, delivered or failed (gave up).
    state            TEXT NOT NULL DEFAULT 'pending',
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  INTEGER NOT NULL,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id);

-- The secret each owner's webhooks are signed with (HMAC-SHA256): kept as is, since signing
-- needs it.
CREATE TABLE webhook_secrets (
    owner      TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
