-- tether schema, version 2: API keys for the HTTP service. Only a SHA-256 hash of each key is kept.

CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    owner      text COLLATE "C" NOT NULL,
    key_hash   text COLLATE "C" NOT NULL UNIQUE,
    prefix     text NOT NULL,
    name       text,
    created_at bigint NOT NULL,
    revoked_at bigint
);
-- Listing an owner's keys.
CREATE INDEX api_keys_by_owner ON api_keys (owner, created_at);
