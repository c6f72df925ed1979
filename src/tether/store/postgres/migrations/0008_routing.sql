-- tether schema, version 8: agent routing and runs across sessions.
-- workers: each running worker announces the agents it has and renews the announcement; a run
-- whose agent no live worker has is "unroutable" (kept ready, failed agent_not_found after a
-- grace period). runs_by_owner(_status): an owner's runs across sessions, newest first.

CREATE TABLE workers (
    id         text COLLATE "C" PRIMARY KEY,
    agents     jsonb NOT NULL,     -- array of agent names
    started_at bigint NOT NULL,
    seen_at    bigint NOT NULL,
    expires_at bigint NOT NULL     -- the worker counts as running until then
);
CREATE INDEX workers_by_expiry ON workers (expires_at);
CREATE INDEX runs_by_owner ON runs (owner, created_at, id);
CREATE INDEX runs_by_owner_status ON runs (owner, status, created_at, id);
