-- The PostgreSQL store's own statements, by name: those it cannot share with SQLite (the shared
-- ones are in tether/store/sql/queries.sql), with the same names and parameters as the SQLite
-- store's. Parameters are %(named)s; a parameter tested with IS NULL carries a cast.
-- Times are BIGINT microseconds since the epoch; JSON parameters arrive as JSON text.

-- events ---------------------------------------------------------------------------------------

-- name: notify
SELECT pg_notify('tether', p) FROM jsonb_array_elements_text(%(payloads)s::jsonb) AS p;

-- name: events_of_session
-- (every event stores a full copy here: see SQLite's for the by-reference form)
SELECT * FROM events WHERE session_id = %(session_id)s AND id > %(after_id)s ORDER BY id
LIMIT %(limit)s;

-- name: events_of_run
SELECT * FROM events WHERE run_id = %(run_id)s AND id > %(after_id)s ORDER BY id
LIMIT %(limit)s;

-- sessions -------------------------------------------------------------------------------------

-- name: touch_session_softly
-- Best effort: a session row another transaction holds is skipped, never waited for (that
-- transaction records activity itself), so finishing work cannot deadlock with its session.
UPDATE sessions SET last_activity_at = %(now)s
WHERE id = (SELECT id FROM sessions
            WHERE id = %(id)s AND status = 'active' AND last_activity_at < %(now)s - 1000000
              AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
            FOR UPDATE SKIP LOCKED);

-- name: list_sessions_first
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions
WHERE owner = %(owner)s
  AND (%(status)s::text IS NULL
       OR (%(status)s = 'closed' AND status = 'closed')
       OR (%(status)s = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s))
       OR (%(status)s = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= %(now)s))))
  AND (%(query)s::text IS NULL
       OR title ILIKE %(query)s ESCAPE '\' OR metadata::text ILIKE %(query)s ESCAPE '\'
       OR external_key ILIKE %(query)s ESCAPE '\')
  AND (%(app)s::text IS NULL OR app = %(app)s)
  AND (%(key_prefix)s::text IS NULL OR starts_with(external_key, %(key_prefix)s))
  AND (%(metadata)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(metadata)s::jsonb) AS m
        WHERE sessions.metadata -> m.key IS DISTINCT FROM m.value))
ORDER BY last_activity_at DESC, id DESC
LIMIT %(limit)s;

-- name: list_sessions_after
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions
WHERE owner = %(owner)s
  AND (last_activity_at < %(cursor_at)s
       OR (last_activity_at = %(cursor_at)s AND id < %(cursor_id)s))
  AND (%(status)s::text IS NULL
       OR (%(status)s = 'closed' AND status = 'closed')
       OR (%(status)s = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s))
       OR (%(status)s = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= %(now)s))))
  AND (%(query)s::text IS NULL
       OR title ILIKE %(query)s ESCAPE '\' OR metadata::text ILIKE %(query)s ESCAPE '\'
       OR external_key ILIKE %(query)s ESCAPE '\')
  AND (%(app)s::text IS NULL OR app = %(app)s)
  AND (%(key_prefix)s::text IS NULL OR starts_with(external_key, %(key_prefix)s))
  AND (%(metadata)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(metadata)s::jsonb) AS m
        WHERE sessions.metadata -> m.key IS DISTINCT FROM m.value))
ORDER BY last_activity_at DESC, id DESC
LIMIT %(limit)s;

-- name: close_session
-- Never before the session's last activity or change: a write that committed first may have
-- read the clock later (the times then still follow the commit order). The same holds for the
-- end of a run (cancel_run, end_run) and of a step (close_open_steps).
UPDATE sessions
SET status = 'closed', closed_at = GREATEST(%(now)s, last_activity_at, updated_at),
    updated_at = GREATEST(%(now)s, last_activity_at, updated_at)
WHERE id = %(id)s AND status = 'active'
RETURNING *;

-- name: expirable_sessions
-- Sessions another sweeper is expiring right now are skipped.
SELECT * FROM sessions
WHERE status = 'active' AND ttl_seconds IS NOT NULL
  AND last_activity_at + ttl_seconds * 1000000 <= %(now)s
ORDER BY last_activity_at + ttl_seconds * 1000000
LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- messages -------------------------------------------------------------------------------------

-- name: messages_forward
SELECT id, seq, role, content, created_at, run_id,
       CASE WHEN item IS NULL AND removed_at IS NULL AND jsonb_typeof(metadata) = 'object'
            THEN NULLIF(metadata, '{}')::text
            ELSE json_build_array(metadata::text, item::text, removed_at)::text END AS extras
FROM messages
WHERE session_id = %(session_id)s AND seq < %(before_seq)s
  AND seq > GREATEST(%(after_seq)s::bigint,
                     COALESCE((SELECT CASE WHEN %(removed)s THEN 0 ELSE cleared_seq END
                               FROM sessions
                               WHERE id = %(session_id)s
                                 AND (%(owner)s::text IS NULL OR owner = %(owner)s)),
                              %(before_seq)s::bigint))
  AND (%(removed)s OR removed_at IS NULL)
ORDER BY seq LIMIT %(limit)s;

-- name: messages_backward
SELECT id, seq, role, content, created_at, run_id,
       CASE WHEN item IS NULL AND removed_at IS NULL AND jsonb_typeof(metadata) = 'object'
            THEN NULLIF(metadata, '{}')::text
            ELSE json_build_array(metadata::text, item::text, removed_at)::text END AS extras
FROM messages
WHERE session_id = %(session_id)s AND seq < %(before_seq)s
  AND seq > GREATEST(%(after_seq)s::bigint,
                     COALESCE((SELECT CASE WHEN %(removed)s THEN 0 ELSE cleared_seq END
                               FROM sessions
                               WHERE id = %(session_id)s
                                 AND (%(owner)s::text IS NULL OR owner = %(owner)s)),
                              %(before_seq)s::bigint))
  AND (%(removed)s OR removed_at IS NULL)
ORDER BY seq DESC LIMIT %(limit)s;

-- name: remove_message
UPDATE messages SET removed_at = GREATEST(%(now)s, created_at)
WHERE id = %(id)s AND removed_at IS NULL
RETURNING id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at;

-- name: remove_messages
UPDATE messages SET removed_at = GREATEST(%(now)s, created_at)
WHERE session_id = %(session_id)s AND seq > %(after_seq)s AND removed_at IS NULL;

-- runs -----------------------------------------------------------------------------------------

-- name: claimable
-- Whether claim_resumed_run or claim_ready_run would find a run (a read: no locks, one round trip).
SELECT 1 AS found FROM runs WHERE status = 'running' AND worker_id IS NULL
  AND (%(agents)s::jsonb IS NULL OR agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
UNION ALL
(SELECT 1 FROM runs AS r
 WHERE r.status = 'ready' AND (r.not_before IS NULL OR r.not_before <= %(now)s)
   AND (%(agents)s::jsonb IS NULL OR r.agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
   AND NOT EXISTS (SELECT 1 FROM runs AS o
                   WHERE o.session_id = r.session_id
                     AND o.status IN ('ready', 'running', 'waiting') AND o.seq < r.seq)
   AND NOT EXISTS (SELECT 1 FROM runs AS a
                   WHERE a.session_id = r.session_id AND a.status IN ('running', 'waiting'))
   AND EXISTS (SELECT 1 FROM sessions AS s
               WHERE s.id = r.session_id AND s.status = 'active'
                 AND (s.ttl_seconds IS NULL
                      OR s.last_activity_at + s.ttl_seconds * 1000000 > %(now)s)))
LIMIT 1;

-- name: suspend_run
UPDATE runs
SET status = 'waiting', waiting_for = %(waiting_for)s::jsonb, updated_at = %(now)s,
    worker_id = NULL, lease_expires_at = NULL,
    deadline_at = CASE WHEN wait_timeout_seconds IS NULL THEN NULL
                       ELSE %(now)s + (wait_timeout_seconds * 1000000)::bigint END
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: cancel_run
UPDATE runs
SET status = 'cancelled', ended_at = GREATEST(%(now)s, updated_at),
    updated_at = GREATEST(%(now)s, updated_at), error = %(error)s::jsonb,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = %(id)s AND status IN ('ready', 'running', 'waiting')
RETURNING *;

-- name: end_run
UPDATE runs
SET status = %(status)s, ended_at = GREATEST(%(now)s, updated_at),
    updated_at = GREATEST(%(now)s, updated_at), error = %(error)s::jsonb,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = %(id)s AND status = %(from_status)s
RETURNING *;

-- name: expired_leases
-- Runs another reaper (on any machine) is handling right now are skipped.
SELECT * FROM runs
WHERE status = 'running' AND worker_id IS NOT NULL AND lease_expires_at <= %(now)s
ORDER BY lease_expires_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- name: passed_deadlines
SELECT * FROM runs
WHERE status IN ('running', 'waiting') AND deadline_at <= %(now)s
ORDER BY deadline_at LIMIT %(limit)s
FOR UPDATE SKIP LOCKED;

-- steps ----------------------------------------------------------------------------------------

-- name: hold_run_for_step
-- The guard (the run is running and held by this worker). The run's row is locked, not
-- rewritten: a concurrent cancel or reap waits for this step, and the next step of the same run
-- for its seq.
SELECT session_id, owner, attempt
FROM runs
WHERE id = %(run_id)s AND status = 'running' AND worker_id = %(worker_id)s
FOR NO KEY UPDATE;

-- name: hold_run_touching_session
-- hold_run_for_step, then the activity of the run's session for one message more (a step with
-- a message), in one statement: the run's row locked first, then the session's. No row: the
-- run is not held by this worker, or its session takes no writes (the caller tells which).
WITH held AS (
    SELECT session_id, owner, attempt FROM runs
    WHERE id = %(run_id)s AND status = 'running' AND worker_id = %(worker_id)s
    FOR NO KEY UPDATE)
UPDATE sessions AS s
SET last_activity_at = %(now)s, message_count = s.message_count + 1
FROM held
WHERE s.id = held.session_id AND s.status = 'active'
  AND (s.ttl_seconds IS NULL OR s.last_activity_at + s.ttl_seconds * 1000000 > %(now)s)
RETURNING held.session_id, held.owner, held.attempt, s.message_count;

-- name: close_open_steps
-- Tool calls end in_doubt (their effect may have happened), the other steps failed.
UPDATE steps
SET status = CASE WHEN kind = 'tool_call' THEN 'in_doubt' ELSE 'failed' END,
    error = %(error)s::jsonb, ended_at = GREATEST(%(now)s, started_at)
WHERE run_id = %(run_id)s AND status = 'running'
RETURNING *;

-- LangGraph-style session search --------------------------------------------------------------

-- name: search_sessions
SELECT id, owner, title, status, created_at, updated_at, last_activity_at, ttl_seconds,
       metadata, context, closed_at, run_count - deleted_runs AS run_count, input_tokens,
       output_tokens, model_requests, external_key, app
FROM sessions AS s
WHERE s.owner = %(owner)s
  AND (%(ids)s::jsonb IS NULL OR s.id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb)))
  AND (%(metadata)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(metadata)s::jsonb) AS m
        WHERE s.metadata -> m.key IS DISTINCT FROM m.value))
  AND (%(context)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(context)s::jsonb) AS m
        WHERE s.context -> m.key IS DISTINCT FROM m.value))
  AND (%(activity)s::text IS NULL OR CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END = %(activity)s)
ORDER BY
  CASE WHEN %(descending)s THEN CASE %(sort)s WHEN 'created_at' THEN s.created_at
                   WHEN 'updated_at' THEN GREATEST(s.updated_at, s.last_activity_at)
                   WHEN 'activity_at' THEN s.last_activity_at END END DESC,
  CASE WHEN NOT %(descending)s THEN CASE %(sort)s WHEN 'created_at' THEN s.created_at
                   WHEN 'updated_at' THEN GREATEST(s.updated_at, s.last_activity_at)
                   WHEN 'activity_at' THEN s.last_activity_at END END ASC,
  CASE WHEN %(descending)s AND %(sort)s = 'activity' THEN CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END END DESC,
  CASE WHEN NOT %(descending)s AND %(sort)s = 'activity' THEN CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END END ASC,
  CASE WHEN %(descending)s THEN s.id END DESC,
  CASE WHEN NOT %(descending)s THEN s.id END ASC
LIMIT %(limit)s OFFSET %(offset)s;

-- name: count_sessions
SELECT count(*) AS n FROM sessions AS s
WHERE s.owner = %(owner)s
  AND (%(ids)s::jsonb IS NULL OR s.id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb)))
  AND (%(metadata)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(metadata)s::jsonb) AS m
        WHERE s.metadata -> m.key IS DISTINCT FROM m.value))
  AND (%(context)s::jsonb IS NULL OR NOT EXISTS (
        SELECT 1 FROM jsonb_each(%(context)s::jsonb) AS m
        WHERE s.context -> m.key IS DISTINCT FROM m.value))
  AND (%(activity)s::text IS NULL OR CASE
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'running')
           THEN 'busy'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'waiting')
           THEN 'waiting'
         WHEN EXISTS (SELECT 1 FROM runs AS r WHERE r.session_id = s.id AND r.status = 'ready')
           THEN 'busy'
         WHEN (SELECT r.status FROM runs AS r WHERE r.session_id = s.id ORDER BY r.seq DESC LIMIT 1)
              IN ('failed', 'timed_out') THEN 'error'
         ELSE 'idle' END = %(activity)s);

-- name: run_activity
-- For each listed session of the owner: its unfinished runs and its newest run (which may be
-- one of them), without their contexts.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb))
  AND status IN ('ready', 'running', 'waiting') AND owner = %(owner)s
UNION ALL
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE (session_id, seq) IN (
        SELECT w, (SELECT MAX(o.seq) FROM runs AS o WHERE o.session_id = w)
        FROM jsonb_array_elements_text(%(ids)s::jsonb) AS w)
  AND owner = %(owner)s;

-- memory ---------------------------------------------------------------------------------------

-- name: memory_of_sessions
-- The session memory (every namespace) of the owner's sessions among %(ids)s (a JSON array).
SELECT m.* FROM memory AS m
JOIN sessions AS s ON s.id = m.scope_id AND s.owner = %(owner)s
WHERE m.scope = 'session' AND m.scope_id IN (SELECT jsonb_array_elements_text(%(ids)s::jsonb))
ORDER BY m.scope_id, m.updated_at DESC, m.namespace, m.key;

-- name: list_memory_in_namespace
SELECT * FROM memory
WHERE scope = %(scope)s AND scope_id = %(scope_id)s
  AND (namespace = %(namespace)s
       OR (%(recursive)s AND (%(namespace)s = ''
           OR starts_with(namespace, %(namespace)s || chr(31)))))
ORDER BY updated_at DESC, namespace, key
LIMIT %(limit)s OFFSET %(offset)s;

-- name: list_namespaces
SELECT DISTINCT namespace FROM memory
WHERE scope = 'user' AND scope_id = %(owner)s AND namespace <> ''
  AND (%(prefix)s = '' OR namespace = %(prefix)s
       OR starts_with(namespace, %(prefix)s || chr(31)))
ORDER BY namespace
LIMIT %(limit)s OFFSET %(offset)s;

-- db copy: every table whole, by key, in the same order on both backends ---------------------

-- name: copy_columns
-- The columns a table has in this database, in order: the copy refuses a column it would drop.
SELECT column_name AS name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = %(table)s
ORDER BY ordinal_position;

-- name: copy_event_floor
-- The highest event id this database ever handed out: present, or deleted since.
SELECT GREATEST(COALESCE((SELECT MAX(id) FROM events), 0),
                COALESCE(pg_sequence_last_value(pg_get_serial_sequence('events', 'id')::regclass),
                         0)) AS floor;

-- name: copy_bump_sequences
-- New events get ids after every id either database handed out (the copied ones, the source's
-- deleted ones: floor, the target's own), so no stream cursor ever sees an id twice; checkpoint
-- threads after the copied ones.
SELECT setval(pg_get_serial_sequence('events', 'id'), GREATEST(top, 1), top > 0),
       (SELECT setval(pg_get_serial_sequence('checkpoint_threads', 'id'), COALESCE(MAX(id), 1),
                      MAX(id) IS NOT NULL)
        FROM checkpoint_threads)
FROM (SELECT GREATEST(COALESCE(MAX(id), 0), %(floor)s::bigint,
                      COALESCE(pg_sequence_last_value(
                          pg_get_serial_sequence('events', 'id')::regclass), 0)) AS top
      FROM events) AS e;

-- routing --------------------------------------------------------------------------------------

-- name: live_agents
SELECT DISTINCT jsonb_array_elements_text(agents) AS agent FROM workers
WHERE expires_at > %(now)s;

-- name: count_unroutable_runs
SELECT agent, count(*) AS n FROM runs
WHERE status = 'ready'
  AND agent NOT IN (SELECT jsonb_array_elements_text(agents) FROM workers
                    WHERE expires_at > %(now)s)
GROUP BY agent;

-- name: unroutable_runs
-- Ready since ready_since at least (not_before counts as the moment it became startable).
SELECT * FROM runs
WHERE status = 'ready' AND updated_at <= %(ready_since)s
  AND (not_before IS NULL OR not_before <= %(ready_since)s)
  AND agent NOT IN (SELECT jsonb_array_elements_text(agents) FROM workers
                    WHERE expires_at > %(now)s)
ORDER BY updated_at LIMIT %(limit)s;

-- runs across sessions ---------------------------------------------------------------------------

-- name: owner_runs
-- An owner's runs, newest first (the runs_by_owner index), without their contexts; %(stuck)s
-- keeps the ready runs whose agent no live worker has.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE owner = %(owner)s
  AND (%(cursor_at)s::bigint IS NULL OR created_at < %(cursor_at)s
       OR (created_at = %(cursor_at)s AND id < %(cursor_id)s))
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(agent)s::text IS NULL OR agent = %(agent)s)
  AND (%(since)s::bigint IS NULL OR created_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR created_at < %(until)s)
  AND (%(query)s::text IS NULL OR goal ILIKE %(query)s ESCAPE '\'
       OR input::text ILIKE %(query)s ESCAPE '\' OR output::text ILIKE %(query)s ESCAPE '\'
       OR error::text ILIKE %(query)s ESCAPE '\' OR agent ILIKE %(query)s ESCAPE '\')
  AND (NOT %(stuck)s OR (status = 'ready'
       AND agent NOT IN (SELECT jsonb_array_elements_text(agents) FROM workers
                         WHERE expires_at > %(now)s)))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- name: owner_runs_with_status
-- The same for one status (the runs_by_owner_status index).
-- An owner's runs, newest first (the runs_by_owner index), without their contexts; %(stuck)s
-- keeps the ready runs whose agent no live worker has.
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE owner = %(owner)s
  AND (%(cursor_at)s::bigint IS NULL OR created_at < %(cursor_at)s
       OR (created_at = %(cursor_at)s AND id < %(cursor_id)s))
  AND status = %(status)s
  AND (%(agent)s::text IS NULL OR agent = %(agent)s)
  AND (%(since)s::bigint IS NULL OR created_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR created_at < %(until)s)
  AND (%(query)s::text IS NULL OR goal ILIKE %(query)s ESCAPE '\'
       OR input::text ILIKE %(query)s ESCAPE '\' OR output::text ILIKE %(query)s ESCAPE '\'
       OR error::text ILIKE %(query)s ESCAPE '\' OR agent ILIKE %(query)s ESCAPE '\')
  AND (NOT %(stuck)s OR (status = 'ready'
       AND agent NOT IN (SELECT jsonb_array_elements_text(agents) FROM workers
                         WHERE expires_at > %(now)s)))
ORDER BY created_at DESC, id DESC
LIMIT %(limit)s;

-- retention ------------------------------------------------------------------------------------

-- name: erase_owner_memory
-- User memory (scope_id = the owner) and app memory (scope_id = owner + separator + app).
DELETE FROM memory
WHERE (scope = 'user' AND scope_id = %(owner)s)
   OR (scope = 'app' AND starts_with(scope_id, %(app_prefix)s));

-- checkpoints of graphs (tether.integrations.langgraph) ----------------------------------------

-- name: delete_unused_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s) AND NOT EXISTS (
    SELECT 1 FROM checkpoints c, jsonb_each_text(c.channels) AS v
    WHERE c.thread = checkpoint_blobs.thread
      AND c.checkpoint_ns = checkpoint_blobs.checkpoint_ns
      AND v.key = checkpoint_blobs.channel AND v.value = checkpoint_blobs.version);

-- adapters' conversation reads ----------------------------------------------------------------

-- The newest messages as stored (JSON columns as text), for store.stored_messages: the
-- conversation messages_backward reads, in the columns core.message.StoredMessage names (the
-- text only of a message without an item: an item says it all; items only when :items).
-- name: stored_messages
SELECT id, seq, role, CASE WHEN item IS NULL THEN content ELSE '' END AS content,
       metadata::text AS metadata, CASE WHEN %(items)s THEN item::text END AS item
FROM messages
WHERE session_id = %(session_id)s AND seq < %(before_seq)s
  AND seq > COALESCE((SELECT cleared_seq FROM sessions
                      WHERE id = %(session_id)s
                        AND (%(owner)s::text IS NULL OR owner = %(owner)s)),
                     %(before_seq)s::bigint)
  AND removed_at IS NULL
ORDER BY seq DESC LIMIT %(limit)s;

-- name: append_events
-- A transaction's events, appended right before COMMIT in one statement: first (the one-time
-- filters run before any row is made, so before an event id is drawn) the advisory locks of
-- their sessions (tether_lock_key of each name: a session id, or owner:<owner>), keys sorted so
-- no two transactions wait in a cycle, and the transaction's notifications; then the events,
-- in order. Each parameter is one JSON array (the events as [type, owner, session_id, run_id,
-- created_at], their data, the lock names, the payloads): one text each to send, nothing to
-- convert element by element on the way.
INSERT INTO events (type, owner, session_id, run_id, data, created_at)
SELECT e.m ->> 0, e.m ->> 1, e.m ->> 2, e.m ->> 3, e.d, (e.m ->> 4)::bigint
FROM ROWS FROM (jsonb_array_elements(%(events)s::jsonb), jsonb_array_elements(%(data)s::jsonb))
     WITH ORDINALITY AS e(m, d, n)
WHERE (SELECT count(pg_advisory_xact_lock(k))
       FROM (SELECT DISTINCT tether_lock_key(name) AS k
             FROM jsonb_array_elements_text(%(locks)s::jsonb) AS name ORDER BY k) AS keys) >= 0
  AND (SELECT count(pg_notify('tether', p)) FROM jsonb_array_elements_text(%(payloads)s::jsonb) AS p) >= 0
ORDER BY e.n;

-- name: memory_of_run
-- The root-namespace memory a run starts with, each scope in list_memory_in_namespace's order.
(SELECT * FROM memory WHERE scope = 'run' AND scope_id = %(run_id)s AND namespace = ''
 ORDER BY updated_at DESC, namespace, key LIMIT %(limit)s)
UNION ALL
(SELECT * FROM memory WHERE scope = 'session' AND scope_id = %(session_id)s AND namespace = ''
 ORDER BY updated_at DESC, namespace, key LIMIT %(limit)s)
UNION ALL
(SELECT * FROM memory WHERE scope = 'user' AND scope_id = %(owner)s AND namespace = ''
 ORDER BY updated_at DESC, namespace, key LIMIT %(limit)s)
UNION ALL
(SELECT * FROM memory WHERE scope = 'app' AND scope_id = %(app)s::text AND namespace = ''
 ORDER BY updated_at DESC, namespace, key LIMIT %(limit)s);

-- name: claim_run
-- claim_resumed_run, else claim_ready_run, and a ready run's touch_session_softly, in one
-- statement (its column "started": whether the run started now; "more": whether another run
-- was claimable, the claimed one left out, so the claimer claims again at once rather than
-- look first), committed on its own. A run started now gets its run.started event here
-- (tether_run_event): a claim is one statement and one round trip.
-- ready reads resumed's result, so resumed runs first and at most one run is claimed.
-- (Under 4096 bytes: psycopg caches the conversion of shorter statements only.)
WITH resumed AS (
    UPDATE runs
    SET worker_id = %(worker_id)s, lease_expires_at = %(lease_expires_at)s, updated_at = %(now)s,
        deadline_at = CASE WHEN timeout_seconds IS NULL THEN NULL
                           ELSE %(now)s + (timeout_seconds * 1000000)::bigint END
    WHERE id = (SELECT id FROM runs WHERE status = 'running' AND worker_id IS NULL
                  AND (%(agents)s::jsonb IS NULL OR agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
                ORDER BY updated_at LIMIT 1
                FOR UPDATE SKIP LOCKED)
      AND status = 'running' AND worker_id IS NULL
    RETURNING *
), ready AS (
    UPDATE runs
    SET status = 'running', worker_id = %(worker_id)s, lease_expires_at = %(lease_expires_at)s,
        started_at = COALESCE(started_at, GREATEST(%(now)s, (
            SELECT p.ended_at FROM runs AS p
            WHERE p.session_id = runs.session_id AND p.seq = runs.seq - 1))),
        updated_at = GREATEST(%(now)s, (
            SELECT p.ended_at FROM runs AS p
            WHERE p.session_id = runs.session_id AND p.seq = runs.seq - 1)),
        deadline_at = CASE WHEN timeout_seconds IS NULL THEN NULL
                           ELSE %(now)s + (timeout_seconds * 1000000)::bigint END
    WHERE NOT EXISTS (SELECT 1 FROM resumed)
      AND id = (
        SELECT r.id FROM runs AS r
        WHERE r.status = 'ready' AND (r.not_before IS NULL OR r.not_before <= %(now)s)
          AND (%(agents)s::jsonb IS NULL OR r.agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
          AND NOT EXISTS (SELECT 1 FROM runs AS o
                          WHERE o.session_id = r.session_id
                            AND o.status IN ('ready', 'running', 'waiting') AND o.seq < r.seq)
          AND NOT EXISTS (SELECT 1 FROM runs AS a
                          WHERE a.session_id = r.session_id AND a.status IN ('running', 'waiting'))
          AND EXISTS (SELECT 1 FROM sessions AS s
                      WHERE s.id = r.session_id AND s.status = 'active'
                        AND (s.ttl_seconds IS NULL
                             OR s.last_activity_at + s.ttl_seconds * 1000000 > %(now)s))
        ORDER BY r.created_at, r.id
        LIMIT 1
        FOR UPDATE SKIP LOCKED)
      AND status = 'ready'
    RETURNING *
), touched AS (
    UPDATE sessions SET last_activity_at = %(now)s
    WHERE id = (SELECT id FROM sessions
                WHERE id = (SELECT session_id FROM ready) AND status = 'active'
                  AND last_activity_at < %(now)s - 1000000
                  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
                FOR UPDATE SKIP LOCKED)
), more AS (
    SELECT EXISTS (
        SELECT 1 FROM runs WHERE status = 'running' AND worker_id IS NULL
          AND id NOT IN (SELECT id FROM resumed)
          AND (%(agents)s::jsonb IS NULL OR agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
        UNION ALL
        SELECT 1 FROM runs AS r
        WHERE r.status = 'ready' AND r.id NOT IN (SELECT id FROM ready)
          AND (r.not_before IS NULL OR r.not_before <= %(now)s)
          AND (%(agents)s::jsonb IS NULL OR r.agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
          AND NOT EXISTS (SELECT 1 FROM runs AS o WHERE o.session_id = r.session_id
                AND o.status IN ('ready', 'running', 'waiting') AND o.seq < r.seq)
          AND NOT EXISTS (SELECT 1 FROM runs AS a WHERE a.session_id = r.session_id
                AND a.status IN ('running', 'waiting'))
          AND EXISTS (SELECT 1 FROM sessions AS s WHERE s.id = r.session_id
                AND s.status = 'active' AND (s.ttl_seconds IS NULL
                     OR s.last_activity_at + s.ttl_seconds * 1000000 > %(now)s))
    ) AS more
), told AS (
    SELECT tether_run_event('run.started', ready::runs, %(now)s, %(source)s) FROM ready
)
SELECT *, false AS started FROM resumed, more
UNION ALL
SELECT ready.*, more.more, true AS started FROM ready, more, told;

-- name: insert_messages
-- A batch of messages in one statement (Tx.insert_rows): one array per position of the rows
-- [id, seq, role, content, metadata, item], metadata and item as their JSON texts; arrays go
-- in binary (no per-element quoting).
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item)
SELECT m.id, %(session_id)s, m.seq, m.role, m.content, NULL, m.metadata::jsonb, %(created_at)s,
       m.item::json
FROM unnest(%(rows_0)b::text[], %(rows_1)b::bigint[], %(rows_2)b::text[], %(rows_3)b::text[],
            %(rows_4)b::text[], %(rows_5)b::text[]) AS m(id, seq, role, content, metadata, item);

-- name: finish_run_told
-- finish_run, its run event (tether_run_event) and its touch_session_softly in one statement,
-- committed on its own. Only for a run without open steps (their closing and their events
-- come first, so such a run finishes as before): no row when the run has some, or is no
-- longer this worker's.
WITH finished AS (
    UPDATE runs
    SET status = %(status)s, ended_at = %(now)s, updated_at = %(now)s,
        output = CASE WHEN %(set_output)s THEN %(output)s::jsonb ELSE output END,
        error = %(error)s::jsonb, worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
    WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
      AND NOT EXISTS (SELECT 1 FROM steps WHERE run_id = %(id)s AND status = 'running')
    RETURNING *
), touched AS (
    UPDATE sessions SET last_activity_at = %(now)s
    WHERE id = (SELECT id FROM sessions
                WHERE id = (SELECT session_id FROM finished) AND status = 'active'
                  AND last_activity_at < %(now)s - 1000000
                  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
                FOR UPDATE SKIP LOCKED)
), told AS (
    SELECT tether_run_event(%(type)s, finished::runs, %(now)s, %(source)s) FROM finished
)
SELECT finished.* FROM finished, told;
