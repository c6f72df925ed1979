-- tether schema, version 1: sessions, runs, steps, messages, memory and the event log.
-- Times are integer microseconds since the Unix epoch (UTC); JSON is stored as text.

CREATE TABLE sessions (
    id               TEXT PRIMARY KEY,
    owner            TEXT NOT NULL,
    title            TEXT,
    status           TEXT NOT NULL CHECK (status IN ('active', 'closed', 'expired')),
    metadata         TEXT NOT NULL DEFAULT '{}',
    context          TEXT NOT NULL DEFAULT '{}',
    ttl_seconds      INTEGER,
    created_at       INTEGER NOT NULL,
    updated_at       INTEGER NOT NULL,
    last_activity_at INTEGER NOT NULL,
    closed_at        INTEGER,
    run_count        INTEGER NOT NULL DEFAULT 0,
    message_count    INTEGER NOT NULL DEFAULT 0,
    input_tokens     INTEGER NOT NULL DEFAULT 0,
    output_tokens    INTEGER NOT NULL DEFAULT 0,
    model_requests   INTEGER NOT NULL DEFAULT 0
);
-- Listing an owner's sessions, newest activity first.
CREATE INDEX sessions_by_activity ON sessions (owner, last_activity_at DESC, id DESC);
-- The sweeper: active sessions by the moment they expire.
CREATE INDEX sessions_by_expiry ON sessions ((last_activity_at + ttl_seconds * 1000000))
    WHERE status = 'active' AND ttl_seconds IS NOT NULL;

CREATE TABLE runs (
    id                   TEXT PRIMARY KEY,
    session_id           TEXT NOT NULL,
    owner                TEXT NOT NULL,
    seq                  INTEGER NOT NULL,
    agent                TEXT NOT NULL,
    goal                 TEXT NOT NULL,
    input                TEXT NOT NULL DEFAULT '{}',
    status               TEXT NOT NULL CHECK (status IN
                           ('ready', 'running', 'waiting', 'completed', 'failed', 'timed_out', 'cancelled')),
    created_at           INTEGER NOT NULL,
    updated_at           INTEGER NOT NULL,
    started_at           INTEGER,
    ended_at             INTEGER,
    error                TEXT,
    output               TEXT,
    input_tokens         INTEGER NOT NULL DEFAULT 0,
    output_tokens        INTEGER NOT NULL DEFAULT 0,
    model_requests       INTEGER NOT NULL DEFAULT 0,
    attempt              INTEGER NOT NULL DEFAULT 1,
    max_attempts         INTEGER NOT NULL DEFAULT 1,
    metadata             TEXT NOT NULL DEFAULT '{}',
    timeout_seconds      REAL,
    wait_timeout_seconds REAL,
    idempotency_key      TEXT,
    waiting_for          TEXT,
    context              TEXT,
    worker_id            TEXT,
    lease_expires_at     INTEGER,
    deadline_at          INTEGER,
    not_before           INTEGER,
    step_count           INTEGER NOT NULL DEFAULT 0,
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
    id             TEXT PRIMARY KEY,
    run_id         TEXT NOT NULL,
    session_id     TEXT NOT NULL,
    seq            INTEGER NOT NULL,
    position       INTEGER NOT NULL,
    kind           TEXT NOT NULL CHECK (kind IN ('model_call', 'tool_call', 'message', 'note')),
    name           TEXT NOT NULL,
    status         TEXT NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'in_doubt')),
    input          TEXT,
    output         TEXT,
    error          TEXT,
    started_at     INTEGER NOT NULL,
    ended_at       INTEGER,
    input_tokens   INTEGER NOT NULL DEFAULT 0,
    output_tokens  INTEGER NOT NULL DEFAULT 0,
    model_requests INTEGER NOT NULL DEFAULT 0,
    attempt        INTEGER NOT NULL DEFAULT 1,
    UNIQUE (run_id, seq)
);
CREATE INDEX steps_open ON steps (run_id) WHERE status = 'running';
-- The session's tool history, all tools or one.
CREATE INDEX steps_tool_calls ON steps (session_id, id) WHERE kind = 'tool_call';
CREATE INDEX steps_tool_calls_by_name ON steps (session_id, name, id) WHERE kind = 'tool_call';

CREATE TABLE messages (
    id         TEXT PRIMARY KEY,
    session_id TEXT NOT NULL,
    seq        INTEGER NOT NULL,
    role       TEXT NOT NULL CHECK (role IN ('user', 'assistant', 'system', 'tool')),
    content    TEXT NOT NULL,
    run_id     TEXT,
    metadata   TEXT NOT NULL DEFAULT '{}',
    created_at INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);

CREATE TABLE memory (
    scope         TEXT NOT NULL CHECK (scope IN ('run', 'session', 'user')),
    scope_id      TEXT NOT NULL,
    namespace     TEXT NOT NULL DEFAULT '',
    key           TEXT NOT NULL,
    value         TEXT NOT NULL,
    session_id    TEXT,
    source_run_id TEXT,
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL,
    PRIMARY KEY (scope, scope_id, namespace, key)
);
CREATE INDEX memory_by_session ON memory (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX memory_by_update ON memory (scope, scope_id, updated_at DESC);

CREATE TABLE events (
    id         INTEGER PRIMARY KEY AUTOINCREMENT,
    type       TEXT NOT NULL,
    owner      TEXT NOT NULL,
    session_id TEXT,
    run_id     TEXT,
    data       TEXT NOT NULL,
    created_at INTEGER NOT NULL
);
CREATE INDEX events_by_session ON events (session_id, id) WHERE session_id IS NOT NULL;
CREATE INDEX events_by_run ON events (run_id, id) WHERE run_id IS NOT NULL;
