-- tether schema, version 10: schedules and webhooks. A schedule creates a run at the times its
-- cron expression names (in its time zone), in one session or in a new session each time.
-- next_run_at is the next tick: a worker claims a tick by moving it forward from the value it
-- read, so each tick fires once whatever the number of workers.

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

-- Webhooks: a run may name a URL that is sent the run once it ends. Each such run has one
-- delivery row from its creation on; a worker delivers it once the run is terminal, taking it
-- by moving next_attempt_at (its lease, then its retry time) on from the value it read.
CREATE TABLE webhook_deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    run_id           text COLLATE "C" NOT NULL,
    owner            text COLLATE "C" NOT NULL,
    url              text NOT NULL,
    -- The run's shape in the body: native (/v1) or langgraph.
    shape            text NOT NULL,
    -- pending, delivered or failed (gave up).
    state            text NOT NULL DEFAULT 'pending',
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  bigint NOT NULL,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL
);
CREATE INDEX webhook_deliveries_pending ON webhook_deliveries (next_attempt_at)
    WHERE state = 'pending';
CREATE INDEX webhook_deliveries_by_run ON webhook_deliveries (run_id);

-- The secret each owner's webhooks are signed with (HMAC-SHA256): kept as is, since signing
-- needs it.
CREATE TABLE webhook_secrets (
    owner      text COLLATE "C" PRIMARY KEY,
    secret     text NOT NULL,
    created_at bigint NOT NULL
);
