-- tether schema, version 7: sessions of the web UI. The browser's cookie holds a random token;
-- only its SHA-256 hash is kept. A session ends at logout, at expires_at, or when its key is
-- revoked.

CREATE TABLE ui_sessions (
    token_hash TEXT PRIMARY KEY,
    key_id     TEXT NOT NULL,
    owner      TEXT NOT NULL,
    created_at INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
);
-- Ending the sessions of a revoked key.
CREATE INDEX ui_sessions_by_key ON ui_sessions (key_id);
