-- tether schema, version 6: the shared conversation core.
-- * Sessions get an optional external key (the caller's own name for a session, unique among
--   one owner's sessions) and an app (whose memory their runs share).
-- * Messages may carry a structured item, stored as json (not jsonb): json keeps the exact text
--   (key order, number spelling), so an item comes back exactly as it was added. removed_at
--   marks a popped or cleared message; sessions.cleared_seq is the highest seq a clear removed,
--   so that reads of the conversation start above it whatever the length of what was cleared.
-- * Memory gains the app scope.

ALTER TABLE sessions
    ADD COLUMN external_key text COLLATE "C",
    ADD COLUMN app text COLLATE "C",
    ADD COLUMN cleared_seq bigint NOT NULL DEFAULT 0;
CREATE UNIQUE INDEX sessions_by_external_key ON sessions (owner, external_key)
    WHERE external_key IS NOT NULL;

ALTER TABLE messages
    ADD COLUMN item json,
    ADD COLUMN removed_at bigint;

ALTER TABLE memory DROP CONSTRAINT memory_scope_check;
ALTER TABLE memory ADD CONSTRAINT memory_scope_check
    CHECK (scope IN ('run', 'session', 'user', 'app'));
