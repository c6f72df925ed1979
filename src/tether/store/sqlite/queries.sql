-- The SQLite store's own statements, by name: those it cannot share with PostgreSQL (the shared
-- ones are in tether/store/sql/queries.sql, under names not repeated here). Parameters are :named.
-- Times are integer microseconds since the epoch; the active-session test (status plus TTL)
-- is written out wherever a write needs it, so expiry is exact inside the transaction.

-- name: insert_event
-- The id after the highest present and the highest ever deleted (kept in sqlite_sequence by the
-- events_ids_are_never_reused trigger): an event id is never reused.
INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)
VALUES (max(COALESCE((SELECT max(id) FROM events), 0),
            COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)) + 1,
        :type, :owner, :session_id, :run_id, :data, :created_at);

-- name: events_of_session
-- An event with the columns of the message it names when it stores one by reference (schema 15;
-- event_from_row makes its data of them, as the events_read view does in SQL).
SELECT e.*, m.id AS message_id, m.seq AS message_seq, m.role AS message_role,
       m.content AS message_content, m.created_at AS message_created_at,
       m.run_id AS message_run_id, m.metadata AS message_metadata, m.item AS message_item
FROM events AS e LEFT JOIN messages AS m
  ON e.type = 'message.added' AND substr(e.data, 1, 15) = '{"message_seq":'
 AND m.session_id = e.session_id AND m.seq = CAST(substr(e.data, 16) AS INTEGER)
 AND e.data = '{"message_seq":' || m.seq || '}'
WHERE e.session_id = :session_id AND e.id > :after_id ORDER BY e.id LIMIT :limit;

-- name: events_of_run
SELECT e.*, m.id AS message_id, m.seq AS message_seq, m.role AS message_role,
       m.content AS message_content, m.created_at AS message_created_at,
       m.run_id AS message_run_id, m.metadata AS message_metadata, m.item AS message_item
FROM events AS e LEFT JOIN messages AS m
  ON e.type = 'message.added' AND substr(e.data, 1, 15) = '{"message_seq":'
 AND m.session_id = e.session_id AND m.seq = CAST(substr(e.data, 16) AS INTEGER)
 AND e.data = '{"message_seq":' || m.seq || '}'
WHERE e.run_id = :run_id AND e.id > :after_id ORDER BY e.id LIMIT :limit;

-- sessions -------------------------------------------------------------------------------------

-- name: touch_session_softly
UPDATE sessions SET last_activity_at = :now
WHERE id = :id AND status = 'active' AND last_activity_at < :now - 1000000
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now);

-- name: list_sessions_first
-- Newest activity first: the sessions_by_activity index gives the second, a sort within each
-- second the exact time (the order of last_activity_at DESC, id DESC).
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions
WHERE owner = :owner
  AND (:status IS NULL
       OR (:status = 'closed' AND status = 'closed')
       OR (:status = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now))
       OR (:status = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= :now))))
  AND (:needle IS NULL OR instr(lower(title), lower(:needle)) > 0
       OR instr(lower(metadata), lower(:needle)) > 0
       OR instr(lower(external_key), lower(:needle)) > 0)
  AND (:app IS NULL OR app = :app)
  AND (:key_prefix IS NULL
       OR substr(external_key, 1, length(:key_prefix)) = :key_prefix)
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE (SELECT v.value FROM json_each(sessions.metadata) AS v WHERE v.key = m.key)
              IS NOT m.value))
ORDER BY activity_second DESC, last_activity_at DESC, id DESC
LIMIT :limit;

-- name: list_sessions_after
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions
WHERE owner = :owner
  AND activity_second <= :cursor_at / 1000000
  AND (last_activity_at < :cursor_at OR (last_activity_at = :cursor_at AND id < :cursor_id))
  AND (:status IS NULL
       OR (:status = 'closed' AND status = 'closed')
       OR (:status = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now))
       OR (:status = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= :now))))
  AND (:needle IS NULL OR instr(lower(title), lower(:needle)) > 0
       OR instr(lower(metadata), lower(:needle)) > 0
       OR instr(lower(external_key), lower(:needle)) > 0)
  AND (:app IS NULL OR app = :app)
  AND (:key_prefix IS NULL
       OR substr(external_key, 1, length(:key_prefix)) = :key_prefix)
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE (SELECT v.value FROM json_each(sessions.metadata) AS v WHERE v.key = m.key)
              IS NOT m.value))
ORDER BY activity_second DESC, last_activity_at DESC, id DESC
LIMIT :limit;

-- name: close_session
-- Never before the session's last activity or change: a write that committed first may have
-- read the clock later (the times then still follow the commit order). The same holds for the
-- end of a run (cancel_run, end_run) and of a step (close_open_steps).
UPDATE sessions
SET status = 'closed', closed_at = max(:now, last_activity_at, updated_at),
    updated_at = max(:now, last_activity_at, updated_at)
WHERE id = :id AND status = 'active'
RETURNING *;

-- name: expirable_sessions
-- The sessions_by_expiry index finds those whose expiry second has begun; the exact test follows.
SELECT * FROM sessions
WHERE status = 'active' AND ttl_seconds IS NOT NULL
  AND activity_second + ttl_seconds < :now / 1000000 + 1
  AND last_activity_at + ttl_seconds * 1000000 <= :now
ORDER BY activity_second + ttl_seconds, last_activity_at + ttl_seconds * 1000000
LIMIT :limit;

-- messages -------------------------------------------------------------------------------------

-- name: messages_forward
SELECT id, seq, role, content, created_at, run_id,
       CASE WHEN item IS NULL AND removed_at IS NULL AND substr(metadata, 1, 1) = '{'
            THEN NULLIF(metadata, '{}')
            ELSE json_array(metadata, item, removed_at) END AS extras
FROM messages
WHERE session_id = :session_id AND seq < :before_seq
  AND seq > max(:after_seq, COALESCE((SELECT CASE WHEN :removed THEN 0 ELSE cleared_seq END
                                      FROM sessions
                                      WHERE id = :session_id
                                        AND (:owner IS NULL OR owner = :owner)),
                                     :before_seq))
  AND (:removed OR removed_at IS NULL)
ORDER BY seq LIMIT :limit;

-- name: messages_backward
SELECT id, seq, role, content, created_at, run_id,
       CASE WHEN item IS NULL AND removed_at IS NULL AND substr(metadata, 1, 1) = '{'
            THEN NULLIF(metadata, '{}')
            ELSE json_array(metadata, item, removed_at) END AS extras
FROM messages
WHERE session_id = :session_id AND seq < :before_seq
  AND seq > max(:after_seq, COALESCE((SELECT CASE WHEN :removed THEN 0 ELSE cleared_seq END
                                      FROM sessions
                                      WHERE id = :session_id
                                        AND (:owner IS NULL OR owner = :owner)),
                                     :before_seq))
  AND (:removed OR removed_at IS NULL)
ORDER BY seq DESC LIMIT :limit;

-- name: remove_message
UPDATE messages SET removed_at = max(:now, created_at)
WHERE id = :id AND removed_at IS NULL
RETURNING id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at;

-- name: remove_messages
UPDATE messages SET removed_at = max(:now, created_at)
WHERE session_id = :session_id AND seq > :after_seq AND removed_at IS NULL;

-- runs -----------------------------------------------------------------------------------------

-- name: claim_resumed_run
UPDATE runs
SET worker_id = :worker_id, lease_expires_at = :lease_expires_at, updated_at = :now,
    deadline_at = CASE WHEN timeout_seconds IS NULL THEN NULL
                       ELSE :now + CAST(timeout_seconds * 1000000 AS INTEGER) END
WHERE id = (SELECT id FROM runs WHERE status = 'running' AND worker_id IS NULL
              AND (:agents IS NULL OR agent IN (SELECT value FROM json_each(:agents)))
            ORDER BY updated_at LIMIT 1)
RETURNING *;

-- name: claim_ready_run
-- :agents (a JSON array, or NULL for any) keeps the runs of agents the worker lacks for others.
-- A run never starts before the run before it in its session ended: a claim that read the clock
-- before that end committed (it waited for the lock meanwhile) starts at that end.
UPDATE runs
SET status = 'running', worker_id = :worker_id, lease_expires_at = :lease_expires_at,
    started_at = COALESCE(started_at, MAX(:now, COALESCE(
        (SELECT p.ended_at FROM runs AS p
         WHERE p.session_id = runs.session_id AND p.seq = runs.seq - 1), :now))),
    updated_at = MAX(:now, COALESCE(
        (SELECT p.ended_at FROM runs AS p
         WHERE p.session_id = runs.session_id AND p.seq = runs.seq - 1), :now)),
    deadline_at = CASE WHEN timeout_seconds IS NULL THEN NULL
                       ELSE :now + CAST(timeout_seconds * 1000000 AS INTEGER) END
WHERE id = (
    SELECT r.id FROM runs AS r
    WHERE r.status = 'ready' AND (r.not_before IS NULL OR r.not_before <= :now)
      AND (:agents IS NULL OR r.agent IN (SELECT value FROM json_each(:agents)))
      AND NOT EXISTS (SELECT 1 FROM runs AS o
                      WHERE o.session_id = r.session_id AND o.status IN ('ready', 'running', 'waiting')
                        AND o.seq < r.seq)
      AND NOT EXISTS (SELECT 1 FROM runs AS a
                      WHERE a.session_id = r.session_id AND a.status IN ('running', 'waiting'))
      AND EXISTS (SELECT 1 FROM sessions AS s
                  WHERE s.id = r.session_id AND s.status = 'active'
                    AND (s.ttl_seconds IS NULL
                         OR s.last_activity_at + s.ttl_seconds * 1000000 > :now))
    ORDER BY r.created_at, r.id
    LIMIT 1)
  AND status = 'ready'
RETURNING *;

-- name: suspend_run
UPDATE runs
SET status = 'waiting', waiting_for = :waiting_for, updated_at = :now,
    worker_id = NULL, lease_expires_at = NULL,
    deadline_at = CASE WHEN wait_timeout_seconds IS NULL THEN NULL
                       ELSE :now + CAST(wait_timeout_seconds * 1000000 AS INTEGER) END
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: cancel_run
UPDATE runs
SET status = 'cancelled', ended_at = max(:now, updated_at),
    updated_at = max(:now, updated_at), error = :error,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = :id AND status IN ('ready', 'running', 'waiting')
RETURNING *;

-- name: end_run
UPDATE runs
SET status = :status, ended_at = max(:now, updated_at),
    updated_at = max(:now, updated_at), error = :error,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = :id AND status = :from_status
RETURNING *;

-- name: expired_leases
SELECT * FROM runs
WHERE status = 'running' AND worker_id IS NOT NULL AND lease_expires_at <= :now
ORDER BY lease_expires_at LIMIT :limit;

-- name: passed_deadlines
SELECT * FROM runs
WHERE status IN ('running', 'waiting') AND deadline_at <= :now
ORDER BY deadline_at LIMIT :limit;

-- steps ----------------------------------------------------------------------------------------

-- name: hold_run_for_step
-- The guard (the run is running and held by this worker); a read, so that appending a step does
-- not also rewrite the run's row. The writer lock (BEGIN IMMEDIATE) makes it race-free.
SELECT session_id, owner, attempt
FROM runs
WHERE id = :run_id AND status = 'running' AND worker_id = :worker_id;

-- name: hold_run_touching_session
-- hold_run_for_step, then the activity of the run's session for one message more (a step with
-- a message), in one statement. No row: the run is not held by this worker, or its session
-- takes no writes (the caller tells which).
UPDATE sessions
SET last_activity_at = :now, message_count = message_count + 1
WHERE id = (SELECT r.session_id FROM runs AS r
            WHERE r.id = :run_id AND r.status = 'running' AND r.worker_id = :worker_id)
  AND status = 'active' AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)
RETURNING id AS session_id, owner, (SELECT attempt FROM runs WHERE id = :run_id) AS attempt,
          message_count;

-- name: close_open_steps
-- Tool calls end in_doubt (their effect may have happened), the other steps failed.
UPDATE steps
SET status = CASE WHEN kind = 'tool_call' THEN 'in_doubt' ELSE 'failed' END, error = :error,
    ended_at = max(:now, started_at)
WHERE run_id = :run_id AND status = 'running'
RETURNING *;

-- LangGraph-style session search --------------------------------------------------------------

-- name: search_sessions
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions AS s
WHERE s.owner = :owner
  AND (:ids IS NULL OR s.id IN (SELECT value FROM json_each(:ids)))
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE (SELECT v.value FROM json_each(s.metadata) AS v WHERE v.key = m.key)
              IS NOT m.value))
  AND (:context IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:context) AS m
        WHERE (SELECT v.value FROM json_each(s.context) AS v WHERE v.key = m.key)
              IS NOT m.value))
  AND (:activity IS NULL OR CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END = :activity)
ORDER BY
  CASE WHEN :descending THEN CASE :sort WHEN 'created_at' THEN s.created_at
                   WHEN 'updated_at' THEN max(s.updated_at, s.last_activity_at)
                   WHEN 'activity_at' THEN s.last_activity_at END END DESC,
  CASE WHEN NOT :descending THEN CASE :sort WHEN 'created_at' THEN s.created_at
                   WHEN 'updated_at' THEN max(s.updated_at, s.last_activity_at)
                   WHEN 'activity_at' THEN s.last_activity_at END END ASC,
  CASE WHEN :descending AND :sort = 'activity' THEN CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END END DESC,
  CASE WHEN NOT :descending AND :sort = 'activity' THEN CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END END ASC,
  CASE WHEN :descending THEN s.id END DESC,
  CASE WHEN NOT :descending THEN s.id END ASC
LIMIT :limit OFFSET :offset;

-- name: count_sessions
SELECT count(*) AS n FROM sessions AS s
WHERE s.owner = :owner
  AND (:ids IS NULL OR s.id IN (SELECT value FROM json_each(:ids)))
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE (SELECT v.value FROM json_each(s.metadata) AS v WHERE v.key = m.key)
              IS NOT m.value))
  AND (:context IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:context) AS m
        WHERE (SELECT v.value FROM json_each(s.context) AS v WHERE v.key = m.key)
              IS NOT m.value))
  AND (:activity IS NULL OR CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END = :activity);

-- name: run_activity
-- For each listed session of the owner: its unfinished runs and its newest run (which may be
-- one of them), without their contexts.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id IN (SELECT value FROM json_each(:ids))
  AND status IN ('ready', 'running', 'waiting') AND owner = :owner
UNION ALL
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE (session_id, seq) IN (
        SELECT value, (SELECT MAX(o.seq) FROM runs AS o WHERE o.session_id = value)
        FROM json_each(:ids))
  AND owner = :owner;

-- memory ---------------------------------------------------------------------------------------

-- name: memory_of_sessions
-- The session memory (every namespace) of the owner's sessions among :ids (a JSON array).
SELECT m.* FROM memory AS m
JOIN sessions AS s ON s.id = m.scope_id AND s.owner = :owner
WHERE m.scope = 'session' AND m.scope_id IN (SELECT value FROM json_each(:ids))
ORDER BY m.scope_id, m.updated_at DESC, m.namespace, m.key;

-- name: list_memory_in_namespace
SELECT * FROM memory
WHERE scope = :scope AND scope_id = :scope_id
  AND (namespace = :namespace
       OR (:recursive AND (:namespace = ''
           OR substr(namespace, 1, length(:namespace) + 1) = :namespace || char(31))))
ORDER BY updated_at DESC, namespace, key
LIMIT :limit OFFSET :offset;

-- name: list_namespaces
SELECT DISTINCT namespace FROM memory
WHERE scope = 'user' AND scope_id = :owner AND namespace <> ''
  AND (:prefix = '' OR namespace = :prefix
       OR substr(namespace, 1, length(:prefix) + 1) = :prefix || char(31))
ORDER BY namespace
LIMIT :limit OFFSET :offset;

-- db copy: every table whole, by key, in the same order on both backends ---------------------

-- name: copy_columns
-- The columns a table has in this database, in order: the copy refuses a column it would drop.
SELECT name FROM pragma_table_info(:table) ORDER BY cid;

-- name: copy_event_floor
-- The highest event id this database ever handed out: present, or deleted since.
SELECT max(COALESCE((SELECT MAX(id) FROM events), 0),
           COALESCE((SELECT seq FROM sqlite_sequence WHERE name = 'events'), 0)) AS floor;

-- name: copy_bump_sequences
-- New events get ids after every id either database handed out (the copied ones, the source's
-- deleted ones: floor, the target's own), so no stream cursor ever sees an id twice.
UPDATE sqlite_sequence SET seq = max(seq, :floor, COALESCE((SELECT MAX(id) FROM events), 0))
WHERE name = 'events';

-- routing --------------------------------------------------------------------------------------

-- name: live_agents
SELECT DISTINCT a.value AS agent FROM workers AS w, json_each(w.agents) AS a
WHERE w.expires_at > :now;

-- name: count_unroutable_runs
SELECT agent, count(*) AS n FROM runs
WHERE status = 'ready'
  AND agent NOT IN (SELECT a.value FROM workers AS w, json_each(w.agents) AS a
                    WHERE w.expires_at > :now)
GROUP BY agent;

-- name: unroutable_runs
-- Ready since ready_since at least (not_before counts as the moment it became startable).
SELECT * FROM runs
WHERE status = 'ready' AND updated_at <= :ready_since
  AND (not_before IS NULL OR not_before <= :ready_since)
  AND agent NOT IN (SELECT a.value FROM workers AS w, json_each(w.agents) AS a
                    WHERE w.expires_at > :now)
ORDER BY updated_at LIMIT :limit;

-- runs across sessions ---------------------------------------------------------------------------

-- name: owner_runs
-- An owner's runs, newest first (the runs_by_owner index), without their contexts; :stuck keeps
-- the ready runs whose agent no live worker has.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE owner = :owner
  AND (:cursor_at IS NULL OR created_at < :cursor_at
       OR (created_at = :cursor_at AND id < :cursor_id))
  AND (:status IS NULL OR status = :status)
  AND (:agent IS NULL OR agent = :agent)
  AND (:since IS NULL OR created_at >= :since)
  AND (:until IS NULL OR created_at < :until)
  AND (:needle IS NULL OR instr(lower(goal), lower(:needle)) > 0
       OR instr(lower(input), lower(:needle)) > 0 OR instr(lower(output), lower(:needle)) > 0
       OR instr(lower(error), lower(:needle)) > 0 OR instr(lower(agent), lower(:needle)) > 0)
  AND (NOT :stuck OR (status = 'ready'
       AND agent NOT IN (SELECT a.value FROM workers AS w, json_each(w.agents) AS a
                         WHERE w.expires_at > :now)))
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- name: owner_runs_with_status
-- The same for one status (the runs_by_owner_status index).
-- An owner's runs, newest first (the runs_by_owner index), without their contexts; :stuck keeps
-- the ready runs whose agent no live worker has.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE owner = :owner
  AND (:cursor_at IS NULL OR created_at < :cursor_at
       OR (created_at = :cursor_at AND id < :cursor_id))
  AND status = :status
  AND (:agent IS NULL OR agent = :agent)
  AND (:since IS NULL OR created_at >= :since)
  AND (:until IS NULL OR created_at < :until)
  AND (:needle IS NULL OR instr(lower(goal), lower(:needle)) > 0
       OR instr(lower(input), lower(:needle)) > 0 OR instr(lower(output), lower(:needle)) > 0
       OR instr(lower(error), lower(:needle)) > 0 OR instr(lower(agent), lower(:needle)) > 0)
  AND (NOT :stuck OR (status = 'ready'
       AND agent NOT IN (SELECT a.value FROM workers AS w, json_each(w.agents) AS a
                         WHERE w.expires_at > :now)))
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- retention ------------------------------------------------------------------------------------

-- name: erase_owner_memory
-- User memory (scope_id = the owner) and app memory (scope_id = owner + separator + app).
DELETE FROM memory
WHERE (scope = 'user' AND scope_id = :owner)
   OR (scope = 'app' AND substr(scope_id, 1, length(:app_prefix)) = :app_prefix);

-- checkpoints of graphs (tether.integrations.langgraph) ----------------------------------------

-- name: delete_unused_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id) AND NOT EXISTS (
    SELECT 1 FROM checkpoints c, json_each(c.channels) AS v
    WHERE c.thread = checkpoint_blobs.thread
      AND c.checkpoint_ns = checkpoint_blobs.checkpoint_ns
      AND v.key = checkpoint_blobs.channel AND CAST(v.value AS TEXT) = checkpoint_blobs.version);

-- adapters' conversation reads ----------------------------------------------------------------

-- The newest messages as stored (JSON columns as text), for store.stored_messages: the
-- conversation messages_backward reads, in the columns core.message.StoredMessage names (the
-- text only of a message without an item: an item says it all; items only when :items).
-- name: stored_messages
SELECT id, seq, role, CASE WHEN item IS NULL THEN content ELSE '' END AS content, metadata,
       CASE WHEN :items THEN item END AS item
FROM messages
WHERE session_id = :session_id AND seq < :before_seq
  AND seq > COALESCE((SELECT cleared_seq FROM sessions
                      WHERE id = :session_id AND (:owner IS NULL OR owner = :owner)),
                     :before_seq)
  AND removed_at IS NULL
ORDER BY seq DESC LIMIT :limit;

-- name: memory_of_run
-- The root-namespace memory a run starts with, each scope in list_memory_in_namespace's order.
SELECT * FROM (SELECT * FROM memory WHERE scope = 'run' AND scope_id = :run_id AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit)
UNION ALL
SELECT * FROM (SELECT * FROM memory
               WHERE scope = 'session' AND scope_id = :session_id AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit)
UNION ALL
SELECT * FROM (SELECT * FROM memory WHERE scope = 'user' AND scope_id = :owner AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit)
UNION ALL
SELECT * FROM (SELECT * FROM memory WHERE scope = 'app' AND scope_id = :app AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit);

-- batch appends ---------------------------------------------------------------------------------

-- name: insert_messages
-- The messages of a batch (Tx.insert_rows), its VALUES row written once for each, its ? taking
-- the row's [id, seq, role, content, metadata, item] (metadata and item as their JSON texts).
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item)
VALUES (?, :session_id, ?, ?, ?, NULL, ?, :created_at, ?);

-- name: insert_events
-- Events that share all but their data, its VALUES row written once for each, in order. Their
-- ids follow the highest present: append_events inserts the first of a batch with insert_event.
INSERT INTO events (type, owner, session_id, run_id, data, created_at)
VALUES (:type, :owner, :session_id, :run_id, ?, :created_at);

-- name: touched_session
-- The session row touch_active_session changed, read back in its transaction: the single append
-- (append_message) touches the row without RETURNING, whose rows SQLite gathers in a temporary
-- b-tree it makes and drops for every statement.
SELECT owner, message_count FROM sessions WHERE id = ?;
