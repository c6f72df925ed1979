-- tether schema, version 1: sessions, runs, steps, messages, memory and the event log.
-- Times are BIGINT microseconds since the Unix epoch (UTC); JSON is jsonb. Keys and names use
-- the "C" collation so that ordering and range comparisons are bytewise, as on SQLite.

CREATE TABLE sessions (
    id               text COLLATE "C" PRIMARY KEY,
    owner            text COLLATE "C" NOT NULL,
    title            text,
    status           text NOT NULL CHECK (status IN ('active', 'closed', 'expired')),
    metadata         jsonb NOT NULL DEFAULT '{}',
    context          jsonb NOT NULL DEFAULT '{}',
    ttl_seconds      bigint,
    created_at       bigint NOT NULL,
    updated_at       bigint NOT NULL,
    last_activity_at bigint NOT NULL,
    closed_at        bigint,
    run_count        bigint NOT NULL DEFAULT 0,
    message_count    bigint NOT NULL DEFAULT 0,
    input_tokens     bigint NOT NULL DEFAULT 0,
    output_tokens    bigint NOT NULL DEFAULT 0,
    model_requests   bigint NOT NULL DEFAULT 0
);
-- Listing an owner's sessions, newest activity first.
CREATE INDEX sessions_by_activity ON sessions (owner, last_activity_at DESC, id DESC);
-- The sweeper: active sessions by the moment they expire.
CREATE INDEX sessions_by_expiry ON sessions ((last_activity_at + ttl_seconds * 1000000))
    WHERE status = 'active' AND ttl_seconds IS NOT NULL;

CREATE TABLE runs (
    id                   text COLLATE "C" PRIMARY KEY,
    session_id           text COLLATE "C" NOT NULL,
    owner                text COLLATE "C" NOT NULL,
    seq                  bigint NOT NULL,
    agent                text NOT NULL,
    goal                 text NOT NULL,
    input                jsonb NOT NULL DEFAULT '{}',
    status               text NOT NULL CHECK (status IN
                           ('ready', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled')),
    created_at           bigint NOT NULL,
    updated_at           bigint NOT NULL,
    started_at           bigint,
    ended_at             bigint,
    error                jsonb,
    output               jsonb,
    input_tokens         bigint NOT NULL DEFAULT 0,
    output_tokens        bigint NOT NULL DEFAULT 0,
    model_requests       bigint NOT NULL DEFAULT 0,
    attempt              bigint NOT NULL DEFAULT 1,
    max_attempts         bigint NOT NULL DEFAULT 1,
    metadata             jsonb NOT NULL DEFAULT '{}',
    timeout_seconds      double precision,
    wait_timeout_seconds double precision,
    idempotency_key      text COLLATE "C",
    waiting_for          jsonb,
    context              jsonb,
    worker_id            text COLLATE "C",
    lease_expires_at     bigint,
    deadline_at          bigint,
    not_before           bigint,
    step_count           bigint NOT NULL DEFAULT 0,
    UNIQUE (session_id, seq)
);
-- At most one active run per session, enforced by the database.
CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
    WHERE status IN ('running', 'waiting');
CREATE UNIQUE INDEX runs_by_idempotency_key ON runs (session_id, idempotency_key)
    WHERE idempotency_key IS NOT NULL;
-- Claiming: ready runs oldest first; resumed runs nobody holds.
CREATE INDEX runs_ready ON runs (created_at, id) WHERE status = 'ready';
CREATE INDEX runs_unheld ON runs (updated_at) WHERE status = 'running' AND worker_id IS NULL;
-- Reaping: expired leases and passed deadlines.
CREATE INDEX runs_by_lease ON runs (lease_expires_at) WHERE status = 'running';
CREATE INDEX runs_by_deadline ON runs (deadline_at) WHERE status IN ('running', 'waiting');
CREATE INDEX runs_unfinished ON runs (session_id, seq) WHERE status IN ('ready', 'running', 'waiting');

CREATE TABLE steps (
    id             text COLLATE "C" PRIMARY KEY,
    run_id         text COLLATE "C" NOT NULL,
    session_id     text COLLATE "C" NOT NULL,
    seq            bigint NOT NULL,
    position       bigint NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('model_call', 'tool_call', 'message', 'note')),
    name           text COLLATE "C" NOT NULL,
    status         text NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'in_doubt')),
    input          jsonb,
    output         jsonb,
    error          jsonb,
    started_at     bigint NOT NULL,
    ended_at       bigint,
    input_tokens   bigint NOT NULL DEFAULT 0,
    output_tokens  bigint NOT NULL DEFAULT 0,
    model_requests bigint NOT NULL DEFAULT 0,
    attempt        bigint NOT NULL DEFAULT 1,
    UNIQUE (run_id, seq)
);
CREATE INDEX steps_open ON steps (run_id) WHERE status = 'running';
-- The session's tool history, all tools or one.
CREATE INDEX steps_tool_calls ON steps (session_id, id) WHERE kind = 'tool_call';
CREATE INDEX steps_tool_calls_by_name ON steps (session_id, name, id) WHERE kind = 'tool_call';
CREATE INDEX steps_by_session ON steps (session_id);

CREATE TABLE messages (
    id         text COLLATE "C" PRIMARY KEY,
    session_id text COLLATE "C" NOT NULL,
    seq        bigint NOT NULL,
    role       text NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content    text NOT NULL,
    run_id     text COLLATE "C",
    metadata   jsonb NOT NULL DEFAULT '{}',
    created_at bigint NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX messages_by_run ON messages (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE memory (
    scope         text COLLATE "C" NOT NULL CHECK (scope IN ('run', 'session', 'user')),
    scope_id      text COLLATE "C" NOT NULL,
    namespace     text COLLATE "C" NOT NULL DEFAULT '',
    key           text COLLATE "C" NOT NULL,
    value         jsonb NOT NULL,
    session_id    text COLLATE "C",
    source_run_id text COLLATE "C",
    created_at    bigint NOT NULL,
    updated_at    bigint NOT NULL,
    PRIMARY KEY (scope, scope_id, namespace, key)
);
CREATE INDEX memory_by_session ON memory (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX memory_by_update ON memory (scope, scope_id, updated_at DESC);

-- Event ids increase in commit order within a session: every transaction appends its events
-- last, holding a transaction-level advisory lock on each session it writes to.
CREATE TABLE events (
    id         bigint GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY,
    type       text COLLATE "C" NOT NULL,
    owner      text COLLATE "C" NOT NULL,
    session_id text COLLATE "C",
    run_id     text COLLATE "C",
    data       jsonb NOT NULL,
    created_at bigint NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, id) WHERE session_id IS NOT NULL;
CREATE INDEX events_by_run ON events (run_id, id) WHERE run_id IS NOT NULL;
