-- tether schema, version 10: schedules. Each creates a run at the times its cron expression
-- names (in its time zone), in one session or in a new session each time. next_run_at is the
-- next tick: a worker claims a tick by moving it forward from the value it read, so each tick
-- fires once whatever the number of workers.

CREATE TABLE schedules (
    id          text COLLATE "C" PRIMARY KEY,
    owner       text COLLATE "C" NOT NULL,
    cron        text NOT NULL,
    timezone    text NOT NULL,
    agent       text COLLATE "C" NOT NULL,
    goal        text,
    input       jsonb NOT NULL DEFAULT '{}',
    session_id  text COLLATE "C",
    metadata    jsonb NOT NULL DEFAULT '{}',
    end_at      bigint,
    enabled     integer NOT NULL DEFAULT 1,
    next_run_at bigint,
    last_run_id text COLLATE "C",
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);
-- Listing an owner's schedules.
CREATE INDEX schedules_by_owner ON schedules (owner, id);
-- Finding the due ticks.
CREATE INDEX schedules_due ON schedules (next_run_at) WHERE enabled = 1;
