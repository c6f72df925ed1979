-- tether schema, version 2: API keys for the HTTP service. Only a SHA-256 hash of each key is kept.

CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY,
    owner      TEXT NOT NULL,
    key_hash   TEXT NOT NULL UNIQUE,
    prefix     TEXT NOT NULL,
    name       TEXT,
    created_at INTEGER NOT NULL,
    revoked_at INTEGER
);
-- Listing an owner's keys.
CREATE INDEX api_keys_by_owner ON api_keys (owner, created_at);
