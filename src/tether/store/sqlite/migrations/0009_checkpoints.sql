-- tether schema, version 9: checkpoints of graphs run in a session (the LangGraph checkpointer).
-- A checkpoint names, per channel, the version of the channel's value it holds; each value is
-- stored once per version in checkpoint_blobs, as the serializer's bytes (or, for a graph's
-- message list, as ranges of the session's conversation). Writes are the pending writes of the
-- tasks of a checkpoint. The rows of a session's checkpoints carry a small integer for it (the
-- thread), not its 36-character id: a graph writes several of them per step. (WITHOUT ROWID:
-- each row lives in its key's index, stored once.)

CREATE TABLE checkpoint_threads (
    id         INTEGER PRIMARY KEY,
    session_id TEXT NOT NULL UNIQUE
);

CREATE TABLE checkpoints (
    thread        INTEGER NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    parent_id     TEXT,
    run_id        TEXT,
    type          TEXT NOT NULL,
    checkpoint    BLOB NOT NULL,
    metadata_type TEXT NOT NULL,
    metadata      BLOB NOT NULL,
    -- JSON {channel: version}: the values the checkpoint holds.
    channels      TEXT NOT NULL,
    created_at    INTEGER NOT NULL,
    PRIMARY KEY (thread, checkpoint_ns, checkpoint_id)
) WITHOUT ROWID;
-- Deleting the checkpoints of runs.
CREATE INDEX checkpoints_by_run ON checkpoints (run_id) WHERE run_id IS NOT NULL;

CREATE TABLE checkpoint_blobs (
    thread        INTEGER NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    channel       TEXT NOT NULL,
    version       TEXT NOT NULL,
    type          TEXT NOT NULL,
    value         BLOB,
    PRIMARY KEY (thread, checkpoint_ns, channel, version)
) WITHOUT ROWID;

CREATE TABLE checkpoint_writes (
    thread        INTEGER NOT NULL,
    checkpoint_ns TEXT NOT NULL,
    checkpoint_id TEXT NOT NULL,
    task_id       TEXT NOT NULL,
    idx           INTEGER NOT NULL,
    channel       TEXT NOT NULL,
    type          TEXT NOT NULL,
    value         BLOB,
    task_path     TEXT NOT NULL,
    PRIMARY KEY (thread, checkpoint_ns, checkpoint_id, task_id, idx)
) WITHOUT ROWID;
