-- tether schema, version 8: checkpoints of graphs run in a session (the LangGraph checkpointer).
-- A checkpoint names, per channel, the version of the channel's value it holds; each value is
-- stored once per version in checkpoint_blobs, as the serializer's bytes (or, for a graph's
-- message list, as ranges of the session's conversation). Writes are the pending writes of the
-- tasks of a checkpoint.

CREATE TABLE checkpoints (
    session_id    text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    checkpoint_id text COLLATE "C" NOT NULL,
    parent_id     text COLLATE "C",
    run_id        text COLLATE "C",
    type          text COLLATE "C" NOT NULL,
    checkpoint    bytea NOT NULL,
    metadata_type text COLLATE "C" NOT NULL,
    metadata      bytea NOT NULL,
    -- JSON {channel: version}: the values the checkpoint holds.
    channels      jsonb NOT NULL,
    created_at    bigint NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id)
);
-- Deleting the checkpoints of runs.
CREATE INDEX checkpoints_by_run ON checkpoints (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE checkpoint_blobs (
    session_id    text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    channel       text COLLATE "C" NOT NULL,
    version       text COLLATE "C" NOT NULL,
    type          text COLLATE "C" NOT NULL,
    value         bytea,
    PRIMARY KEY (session_id, checkpoint_ns, channel, version)
);

CREATE TABLE checkpoint_writes (
    session_id    text COLLATE "C" NOT NULL,
    checkpoint_ns text COLLATE "C" NOT NULL,
    checkpoint_id text COLLATE "C" NOT NULL,
    task_id       text COLLATE "C" NOT NULL,
    idx           integer NOT NULL,
    channel       text COLLATE "C" NOT NULL,
    type          text COLLATE "C" NOT NULL,
    value         bytea,
    task_path     text COLLATE "C" NOT NULL,
    PRIMARY KEY (session_id, checkpoint_ns, checkpoint_id, task_id, idx)
);
