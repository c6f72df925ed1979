-- tether schema, version 11: assistants with versions, and temporary sessions.
-- assistants: a named configuration of an agent (graph_id = the agent's name) with the fields of
-- the version runs use (the latest unless set_latest chose another); assistant_versions: every
-- version, each update adding one. sessions.temporary: made for one stateless run and deleted
-- once its runs have ended (the sweeper finds them by sessions_temporary).

CREATE TABLE assistants (
    id          TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    graph_id    TEXT NOT NULL,
    name        TEXT NOT NULL,
    description TEXT,
    config      TEXT NOT NULL DEFAULT '{}',
    context     TEXT NOT NULL DEFAULT '{}',
    metadata    TEXT NOT NULL DEFAULT '{}',
    version     INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
);
CREATE INDEX assistants_by_owner ON assistants (owner, created_at, id);

CREATE TABLE assistant_versions (
    assistant_id TEXT NOT NULL,
    version      INTEGER NOT NULL,
    graph_id     TEXT NOT NULL,
    name         TEXT NOT NULL,
    description  TEXT,
    config       TEXT NOT NULL DEFAULT '{}',
    context      TEXT NOT NULL DEFAULT '{}',
    metadata     TEXT NOT NULL DEFAULT '{}',
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (assistant_id, version)
) WITHOUT ROWID;

ALTER TABLE sessions ADD COLUMN temporary INTEGER NOT NULL DEFAULT 0;
CREATE INDEX sessions_temporary ON sessions (last_activity_at) WHERE temporary = 1;
