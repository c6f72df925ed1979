-- tether schema, version 11: assistants with versions, and temporary sessions.
-- assistants: a named configuration of an agent (graph_id = the agent's name) with the fields of
-- the version runs use (the latest unless set_latest chose another); assistant_versions: every
-- version, each update adding one. sessions.temporary: made for one stateless run and deleted
-- once its runs have ended (the sweeper finds them by sessions_temporary).

CREATE TABLE assistants (
    id          text COLLATE "C" PRIMARY KEY,
    owner       text COLLATE "C" NOT NULL,
    graph_id    text NOT NULL,
    name        text NOT NULL,
    description text,
    config      jsonb NOT NULL DEFAULT '{}',
    context     jsonb NOT NULL DEFAULT '{}',
    metadata    jsonb NOT NULL DEFAULT '{}',
    version     bigint NOT NULL,
    created_at  bigint NOT NULL,
    updated_at  bigint NOT NULL
);
CREATE INDEX assistants_by_owner ON assistants (owner, created_at, id);

CREATE TABLE assistant_versions (
    assistant_id text COLLATE "C" NOT NULL,
    version      bigint NOT NULL,
    graph_id     text NOT NULL,
    name         text NOT NULL,
    description  text,
    config       jsonb NOT NULL DEFAULT '{}',
    context      jsonb NOT NULL DEFAULT '{}',
    metadata     jsonb NOT NULL DEFAULT '{}',
    created_at   bigint NOT NULL,
    PRIMARY KEY (assistant_id, version)
);

-- (0 or 1, as on SQLite, so that a copy between backends compares equal)
ALTER TABLE sessions ADD COLUMN temporary smallint NOT NULL DEFAULT 0;
CREATE INDEX sessions_temporary ON sessions (last_activity_at) WHERE temporary = 1;
