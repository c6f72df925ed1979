-- tether schema, version 6: the shared conversation core.
-- * Sessions get an optional external key (the caller's own name for a session, unique among
--   one owner's sessions) and an app (whose memory their runs share).
-- * Messages may carry a structured item (any JSON object, kept as its exact text), and are
--   taken out of the conversation without being deleted: removed_at marks a popped or cleared
--   message; sessions.cleared_seq is the highest seq a clear removed, so that reads of the
--   conversation start above it whatever the length of what was cleared.
-- * Memory gains the app scope. SQLite cannot change a CHECK constraint in place: the memory
--   table is rebuilt with the same rows and indexes.

ALTER TABLE sessions ADD COLUMN external_key TEXT;
ALTER TABLE sessions ADD COLUMN app TEXT;
ALTER TABLE sessions ADD COLUMN cleared_seq INTEGER NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX sessions_by_external_key ON sessions (owner, external_key)
    WHERE external_key IS NOT NULL;

ALTER TABLE messages ADD COLUMN item TEXT;
ALTER TABLE messages ADD COLUMN removed_at INTEGER;

CREATE TABLE memory_rebuilt (
    scope         TEXT NOT NULL CHECK (scope IN ('run', 'session', 'user', 'app')),
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
INSERT INTO memory_rebuilt (scope, scope_id, namespace, key, value, session_id, source_run_id,
                       created_at, updated_at)
SELECT scope, scope_id, namespace, key, value, session_id, source_run_id, created_at, updated_at
FROM memory;
DROP TABLE memory;
ALTER TABLE memory_rebuilt RENAME TO memory;
CREATE INDEX memory_by_session ON memory (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX memory_by_update ON memory (scope, scope_id, updated_at DESC);
CREATE INDEX memory_by_source_run ON memory (source_run_id) WHERE source_run_id IS NOT NULL;
