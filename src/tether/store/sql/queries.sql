-- The SQL statements both stores run as they are, by name. Parameters are :named; a cast
-- written ::type (a parameter tested with IS NULL, JSON text into a jsonb column) is PostgreSQL's
-- and left out for SQLite. A statement that really differs lives in each backend's own
-- queries.sql, under the same name (tests/unit/test_queries.py checks both rules).
-- Times are integer microseconds since the epoch; the active-session test (status plus TTL)
-- is written out wherever a write needs it, so expiry is exact inside the transaction.

-- events ---------------------------------------------------------------------------------------
-- Events are read from events_read (schema 15), which gives a message.added event stored by
-- reference the data it stands for; listing them (events_of_session, events_of_run) is each
-- backend's own.

-- sessions -------------------------------------------------------------------------------------

-- name: session_exists
SELECT 1 FROM sessions WHERE id = :id;

-- name: insert_session
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                      updated_at, last_activity_at, external_key, app)
VALUES (:id, :owner, :title, :status, :metadata::jsonb, :context::jsonb,
        :ttl_seconds, :created_at, :updated_at, :last_activity_at,
        :external_key, :app);

-- name: get_session
SELECT * FROM sessions WHERE id = :id AND (:owner::text IS NULL OR owner = :owner);

-- name: session_by_key
SELECT * FROM sessions WHERE owner = :owner AND external_key = :key;

-- name: touch_active_session
UPDATE sessions
SET last_activity_at = :now,
    message_count = message_count + :add_messages,
    run_count = run_count + :add_runs
WHERE id = :id AND (:owner::text IS NULL OR owner = :owner) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)
RETURNING owner, message_count, run_count, cleared_seq;

-- name: update_session
UPDATE sessions
SET title = CASE WHEN :set_title THEN :title::text ELSE title END,
    metadata = CASE WHEN :set_metadata THEN :metadata::jsonb ELSE metadata END,
    context = CASE WHEN :set_context THEN :context::jsonb ELSE context END,
    ttl_seconds = CASE WHEN :set_ttl THEN :ttl_seconds::bigint ELSE ttl_seconds END,
    external_key = CASE WHEN :set_external_key THEN :external_key::text
                        ELSE external_key END,
    app = CASE WHEN :set_app THEN :app::text ELSE app END,
    updated_at = :now
WHERE id = :id AND (:owner::text IS NULL OR owner = :owner) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)
RETURNING *;

-- name: expire_session
UPDATE sessions SET status = 'expired', updated_at = :now
WHERE id = :id AND status = 'active'
RETURNING *;

-- name: forget_session_run
-- A run was deleted: one run fewer, and its usage no longer counts.
UPDATE sessions
SET deleted_runs = deleted_runs + 1,
    input_tokens = input_tokens - :input_tokens,
    output_tokens = output_tokens - :output_tokens,
    model_requests = model_requests - :requests
WHERE id = :id;

-- name: add_session_usage
UPDATE sessions
SET input_tokens = input_tokens + :input_tokens,
    output_tokens = output_tokens + :output_tokens,
    model_requests = model_requests + :requests
WHERE id = :id;

-- name: delete_session_events
DELETE FROM events WHERE session_id = :id;

-- name: delete_session_memory
DELETE FROM memory WHERE session_id = :id;

-- name: delete_session_steps
DELETE FROM steps WHERE session_id = :id;

-- name: delete_session_messages
DELETE FROM messages WHERE session_id = :id;

-- name: delete_session_runs
DELETE FROM runs WHERE session_id = :id;

-- name: delete_session
DELETE FROM sessions WHERE id = :id;

-- messages -------------------------------------------------------------------------------------

-- name: insert_message
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item)
VALUES (:id, :session_id, :seq, :role, :content, :run_id,
        :metadata::jsonb, :created_at, :item::json);

-- The conversation, in the columns (and their order) rows.message_from_row reads: messages
-- above the session's cleared_seq (one index range, however much a clear removed) and not
-- popped, unless removed ones are asked for too (removed). The session row also scopes the
-- read to its owner: another owner's session reads as empty.

-- name: newest_message
SELECT id FROM messages
WHERE session_id = :session_id AND seq > :after_seq AND removed_at IS NULL
ORDER BY seq DESC LIMIT 1;

-- name: set_cleared_seq
UPDATE sessions SET cleared_seq = :seq WHERE id = :id;

-- name: delete_run_messages
DELETE FROM messages WHERE run_id = :run_id;

-- runs -----------------------------------------------------------------------------------------

-- name: run_by_idempotency_key
SELECT * FROM runs WHERE session_id = :session_id AND idempotency_key = :key;

-- name: unfinished_runs
SELECT * FROM runs
WHERE session_id = :session_id AND status IN ('ready', 'running', 'waiting')
ORDER BY seq;

-- name: insert_run
INSERT INTO runs (id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at,
                  attempt, max_attempts, metadata, timeout_seconds, wait_timeout_seconds,
                  idempotency_key, not_before, traceparent)
VALUES (:id, :session_id, :owner, :seq, :agent, :goal, :input::jsonb,
        'ready', :created_at, :updated_at, 1, :max_attempts, :metadata::jsonb,
        :timeout_seconds, :wait_timeout_seconds, :idempotency_key, :not_before,
        :traceparent)
RETURNING *;

-- name: get_run
SELECT * FROM runs WHERE id = :id AND (:owner::text IS NULL OR owner = :owner);

-- The same without the assembled context (often the largest column), for status checks and lists.

-- name: get_run_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs WHERE id = :id AND (:owner::text IS NULL OR owner = :owner);

-- name: runs_forward
SELECT * FROM runs
WHERE session_id = :session_id AND (:status::text IS NULL OR status = :status)
  AND seq > :after_seq
ORDER BY seq LIMIT :limit;

-- name: runs_backward
SELECT * FROM runs
WHERE session_id = :session_id AND (:status::text IS NULL OR status = :status)
  AND seq < :before_seq
ORDER BY seq DESC LIMIT :limit;

-- name: runs_forward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = :session_id AND (:status::text IS NULL OR status = :status)
  AND seq > :after_seq
ORDER BY seq LIMIT :limit;

-- name: runs_backward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = :session_id AND (:status::text IS NULL OR status = :status)
  AND seq < :before_seq
ORDER BY seq DESC LIMIT :limit;

-- name: hold_run
-- A run its creator executes itself (a framework's runner): a new ready run, taken by that
-- worker at once, so no other worker can claim it.
UPDATE runs
SET status = 'running', worker_id = :worker_id, lease_expires_at = :lease_expires_at,
    started_at = COALESCE(started_at, :now), updated_at = :now, deadline_at = :deadline_at
WHERE id = :id AND status = 'ready'
RETURNING *;

-- name: hold_resumed_run
-- A resumed run nobody holds (it is running again), taken by its creator's worker at once.
UPDATE runs
SET worker_id = :worker_id, lease_expires_at = :lease_expires_at, updated_at = :now,
    deadline_at = :deadline_at
WHERE id = :id AND status = 'running' AND worker_id IS NULL
RETURNING *;

-- name: renew_lease
UPDATE runs SET lease_expires_at = :lease_expires_at
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: update_held_run
UPDATE runs
SET output = CASE WHEN :set_output THEN :output::jsonb ELSE output END,
    context = CASE WHEN :set_context THEN :context::jsonb ELSE context END,
    updated_at = :now
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: finish_run
UPDATE runs
SET status = :status, ended_at = :now, updated_at = :now,
    output = CASE WHEN :set_output THEN :output::jsonb ELSE output END,
    error = :error::jsonb, worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: resume_run
UPDATE runs
SET status = 'running', waiting_for = NULL, updated_at = :now,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = :id AND (:owner::text IS NULL OR owner = :owner) AND status = 'waiting'
RETURNING *;

-- name: release_run
UPDATE runs
SET status = 'ready', updated_at = :now, worker_id = NULL, lease_expires_at = NULL,
    deadline_at = NULL
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: requeue_run
UPDATE runs
SET status = 'ready', updated_at = :now, attempt = attempt + 1, worker_id = NULL,
    lease_expires_at = NULL, deadline_at = NULL
WHERE id = :id AND status = 'running'
RETURNING *;

-- name: add_run_usage
UPDATE runs
SET input_tokens = input_tokens + :input_tokens,
    output_tokens = output_tokens + :output_tokens,
    model_requests = model_requests + :requests
WHERE id = :id;

-- name: delete_run_events
DELETE FROM events WHERE run_id = :run_id;

-- name: delete_run_memory
DELETE FROM memory WHERE scope = 'run' AND scope_id = :run_id;

-- name: delete_run_steps
DELETE FROM steps WHERE run_id = :run_id;

-- name: delete_run_promotions
DELETE FROM memory WHERE scope = 'session' AND source_run_id = :run_id;

-- name: delete_run
DELETE FROM runs WHERE id = :run_id;

-- steps ----------------------------------------------------------------------------------------

-- name: next_step_seq
-- The next step seq, read from the (run_id, seq) index. runs.step_count is no longer kept.
-- A statement of its own, after hold_run_for_step (which locks the run on PostgreSQL): its snapshot is taken once the lock is held,
-- so it sees the step of the transaction that held the lock before (a subquery of the locking
-- statement would read the snapshot from before the wait, and two steps would share a seq).
SELECT COALESCE(MAX(seq), 0) + 1 AS step_count FROM steps WHERE run_id = :run_id;

-- name: insert_step
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                   error, started_at, ended_at, input_tokens, output_tokens, model_requests,
                   attempt)
VALUES (:id, :run_id, :session_id, :seq, :position, :kind, :name,
        :status, :input::jsonb, :output::jsonb, :error::jsonb, :started_at,
        :ended_at, :input_tokens, :output_tokens, :requests, :attempt);

-- name: run_owner
SELECT owner FROM runs WHERE id = :id;

-- name: finish_step
UPDATE steps
SET status = :status, output = :output::jsonb, error = :error::jsonb,
    ended_at = :now, input_tokens = :input_tokens, output_tokens = :output_tokens,
    model_requests = :requests
WHERE id = :id AND status = 'running'
  AND EXISTS (SELECT 1 FROM runs
              WHERE runs.id = steps.run_id AND runs.status = 'running'
                AND runs.worker_id = :worker_id)
RETURNING *;

-- name: get_step
SELECT * FROM steps WHERE id = :id;

-- name: complete_waiting_step
UPDATE steps SET status = 'completed', output = :output::jsonb, ended_at = :now
WHERE id = :id AND run_id = :run_id AND status = 'running'
RETURNING *;

-- name: steps_of_run
SELECT * FROM steps WHERE run_id = :run_id ORDER BY seq;

-- name: tool_calls_of_session_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_session_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: tool_calls_of_session_by_name_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id AND name = :tool
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_session_by_name_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id AND name = :tool
  AND (:run_id::text IS NULL OR run_id = :run_id)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: tool_calls_of_run_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = :run_id
  AND (:tool::text IS NULL OR name = :tool)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_run_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = :run_id
  AND (:tool::text IS NULL OR name = :tool)
  AND (:status::text IS NULL OR status = :status)
  AND (:since::bigint IS NULL OR started_at >= :since)
  AND (:until::bigint IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- What a session's runs are doing ("activity"): busy (a run running, or ready with none
-- waiting), waiting (a run waits for a person), error (its newest run failed or timed out),
-- idle. Filters, the sort (created_at, updated_at, activity_at, id or activity; ties by id in
-- the same direction) and the page all run here, so only the page's sessions are read.

-- memory ---------------------------------------------------------------------------------------

-- name: upsert_memory
-- A JSON null value arrives as SQL NULL: it is stored as the JSON 'null'.
INSERT INTO memory (scope, scope_id, namespace, key, value, session_id, source_run_id,
                    created_at, updated_at)
VALUES (:scope, :scope_id, :namespace, :key, COALESCE(:value::jsonb, 'null'),
        :session_id, :source_run_id, :now, :now)
ON CONFLICT (scope, scope_id, namespace, key) DO UPDATE
SET value = excluded.value, source_run_id = excluded.source_run_id,
    updated_at = excluded.updated_at
RETURNING *;

-- name: get_memory
SELECT * FROM memory
WHERE scope = :scope AND scope_id = :scope_id AND namespace = :namespace
  AND key = :key;

-- name: delete_memory
DELETE FROM memory
WHERE scope = :scope AND scope_id = :scope_id AND namespace = :namespace
  AND key = :key
RETURNING session_id;

-- api keys -------------------------------------------------------------------------------------

-- name: insert_api_key
INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at)
VALUES (:id, :owner, :key_hash, :prefix, :name, :created_at)
RETURNING *;

-- name: api_key_by_hash
SELECT * FROM api_keys WHERE key_hash = :key_hash;

-- name: list_api_keys
SELECT * FROM api_keys WHERE (:owner::text IS NULL OR owner = :owner)
ORDER BY created_at, id;

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = COALESCE(revoked_at, :now) WHERE id = :id RETURNING *;

-- ui sessions ----------------------------------------------------------------------------------

-- name: insert_ui_session
INSERT INTO ui_sessions (token_hash, key_id, owner, created_at, expires_at)
VALUES (:token_hash, :key_id, :owner, :created_at, :expires_at);

-- name: delete_expired_ui_sessions
DELETE FROM ui_sessions WHERE expires_at <= :now;

-- name: ui_session_owner
-- A session whose key was revoked is no session (revocation deletes them too).
SELECT s.owner FROM ui_sessions s JOIN api_keys k ON k.id = s.key_id
WHERE s.token_hash = :token_hash AND s.expires_at > :now AND k.revoked_at IS NULL;

-- name: delete_ui_session
DELETE FROM ui_sessions WHERE token_hash = :token_hash;

-- name: delete_ui_sessions_of_key
DELETE FROM ui_sessions WHERE key_id = :key_id;

-- db copy: every table whole, by key, in the same order on both backends ---------------------

-- name: copy_count_sessions
SELECT count(*) AS n FROM sessions;

-- name: copy_page_sessions
SELECT * FROM sessions WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_sessions
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                     updated_at, last_activity_at, closed_at, run_count, message_count,
                     input_tokens, output_tokens, model_requests, deleted_runs, external_key, app,
                     cleared_seq, temporary)
VALUES (:id, :owner, :title, :status, :metadata::jsonb, :context::jsonb,
        :ttl_seconds, :created_at, :updated_at, :last_activity_at, :closed_at,
        :run_count, :message_count, :input_tokens, :output_tokens,
        :model_requests, :deleted_runs, :external_key, :app, :cleared_seq, :temporary);

-- name: copy_clear_sessions
DELETE FROM sessions;

-- name: copy_count_runs
SELECT count(*) AS n FROM runs;

-- name: copy_page_runs
SELECT * FROM runs WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_runs
INSERT INTO runs (id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at,
                 started_at, ended_at, error, output, input_tokens, output_tokens,
                 model_requests, attempt, max_attempts, metadata, timeout_seconds,
                 wait_timeout_seconds, idempotency_key, waiting_for, context, worker_id,
                 lease_expires_at, deadline_at, not_before, step_count, traceparent)
VALUES (:id, :session_id, :owner, :seq, :agent, :goal, :input::jsonb,
        :status, :created_at, :updated_at, :started_at, :ended_at,
        :error::jsonb, :output::jsonb, :input_tokens, :output_tokens,
        :model_requests, :attempt, :max_attempts, :metadata::jsonb,
        :timeout_seconds, :wait_timeout_seconds, :idempotency_key,
        :waiting_for::jsonb, :context::jsonb, :worker_id, :lease_expires_at,
        :deadline_at, :not_before, :step_count, :traceparent);

-- name: copy_clear_runs
DELETE FROM runs;

-- name: copy_count_steps
SELECT count(*) AS n FROM steps;

-- name: copy_page_steps
SELECT * FROM steps WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_steps
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                  error, started_at, ended_at, input_tokens, output_tokens, model_requests,
                  attempt)
VALUES (:id, :run_id, :session_id, :seq, :position, :kind, :name,
        :status, :input::jsonb, :output::jsonb, :error::jsonb, :started_at,
        :ended_at, :input_tokens, :output_tokens, :model_requests, :attempt);

-- name: copy_clear_steps
DELETE FROM steps;

-- name: copy_count_messages
SELECT count(*) AS n FROM messages;

-- name: copy_page_messages
SELECT * FROM messages WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_messages
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item,
                      removed_at)
VALUES (:id, :session_id, :seq, :role, :content, :run_id, :metadata::jsonb,
        :created_at, :item::json, :removed_at);

-- name: copy_clear_messages
DELETE FROM messages;

-- name: copy_count_memory
SELECT count(*) AS n FROM memory;

-- name: copy_page_memory
SELECT * FROM memory
WHERE (scope, scope_id, namespace, key)
      > (:after_scope, :after_scope_id, :after_namespace, :after_key)
ORDER BY scope, scope_id, namespace, key LIMIT :limit;

-- name: copy_insert_memory
INSERT INTO memory (scope, scope_id, namespace, key, value, session_id, source_run_id,
                   created_at, updated_at)
VALUES (:scope, :scope_id, :namespace, :key, :value::jsonb, :session_id,
        :source_run_id, :created_at, :updated_at);

-- name: copy_clear_memory
DELETE FROM memory;

-- name: copy_count_events
SELECT count(*) AS n FROM events;

-- name: copy_page_events
-- (events_read: a copy writes each event whole, whatever the form it is stored in)
SELECT * FROM events_read WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_events
INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)
VALUES (:id, :type, :owner, :session_id, :run_id, :data::jsonb, :created_at);

-- name: copy_clear_events
DELETE FROM events;

-- name: copy_count_api_keys
SELECT count(*) AS n FROM api_keys;

-- name: copy_page_api_keys
SELECT * FROM api_keys WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_api_keys
INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at, revoked_at)
VALUES (:id, :owner, :key_hash, :prefix, :name, :created_at, :revoked_at);

-- name: copy_clear_api_keys
DELETE FROM api_keys;

-- name: copy_count_ui_sessions
SELECT count(*) AS n FROM ui_sessions;

-- name: copy_page_ui_sessions
SELECT * FROM ui_sessions WHERE token_hash > :after_token_hash
ORDER BY token_hash LIMIT :limit;

-- name: copy_insert_ui_sessions
INSERT INTO ui_sessions (token_hash, key_id, owner, created_at, expires_at)
VALUES (:token_hash, :key_id, :owner, :created_at, :expires_at);

-- name: copy_clear_ui_sessions
DELETE FROM ui_sessions;

-- name: count_unfinished_runs
-- Gauges: runs ready, running or waiting now, by status and agent (the runs_unfinished index).
SELECT status, agent, count(*) AS n FROM runs
WHERE status IN ('ready', 'running', 'waiting')
GROUP BY status, agent;

-- name: count_active_sessions
SELECT count(*) AS n FROM sessions
WHERE status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now);

-- A worker announces the agents it has until expires_at and renews that; runs whose agent no
-- live worker has are unroutable.

-- routing --------------------------------------------------------------------------------------

-- name: announce_worker
INSERT INTO workers (id, agents, started_at, seen_at, expires_at)
VALUES (:id, :agents::jsonb, :now, :now, :expires_at)
ON CONFLICT (id) DO UPDATE
SET agents = excluded.agents, seen_at = excluded.seen_at, expires_at = excluded.expires_at;

-- name: drop_gone_workers
DELETE FROM workers WHERE expires_at <= :now;

-- name: retire_worker
DELETE FROM workers WHERE id = :id;

-- retention ------------------------------------------------------------------------------------

-- name: prunable_sessions
-- Closed before closed_before, or expired (persisted) with an expiry before expired_before.
SELECT id FROM sessions
WHERE id > :after_id
  AND ((:closed_before::bigint IS NOT NULL AND status = 'closed'
        AND closed_at < :closed_before)
       OR (:expired_before::bigint IS NOT NULL AND status = 'expired'
           AND ttl_seconds IS NOT NULL
           AND last_activity_at + ttl_seconds * 1000000 < :expired_before))
ORDER BY id LIMIT :limit;

-- name: owner_session_ids
SELECT id FROM sessions WHERE owner = :owner ORDER BY id LIMIT :limit;

-- name: erase_owner_events
DELETE FROM events WHERE owner = :owner;

-- name: erase_owner_ui_sessions
DELETE FROM ui_sessions WHERE owner = :owner;

-- name: erase_owner_api_keys
DELETE FROM api_keys WHERE owner = :owner;

-- archives (one session with everything in it) ---------------------------------------------------

-- name: archive_session
SELECT * FROM sessions WHERE id = :id AND (:owner::text IS NULL OR owner = :owner);

-- name: archive_runs
SELECT * FROM runs WHERE session_id = :id ORDER BY seq;

-- name: archive_steps
SELECT * FROM steps WHERE session_id = :id ORDER BY run_id, seq;

-- name: archive_messages
SELECT * FROM messages WHERE session_id = :id ORDER BY seq;

-- name: archive_memory
SELECT * FROM memory WHERE session_id = :id ORDER BY scope, scope_id, namespace, key;

-- name: archive_events
SELECT * FROM events_read WHERE session_id = :id ORDER BY id;
-- A session's checkpoint rows carry its thread number (checkpoint_threads), made on its first.

-- checkpoints of graphs (tether.integrations.langgraph) ----------------------------------------

-- name: ensure_checkpoint_thread
INSERT INTO checkpoint_threads (session_id) VALUES (:session_id)
ON CONFLICT (session_id) DO NOTHING;

-- name: upsert_checkpoint
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type,
                         checkpoint, metadata_type, metadata, channels, created_at)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = :session_id),
        :checkpoint_ns, :checkpoint_id, :parent_id, :run_id, :type, :checkpoint,
        :metadata_type, :metadata, :channels::jsonb, :created_at)
ON CONFLICT (thread, checkpoint_ns, checkpoint_id) DO UPDATE
SET parent_id = excluded.parent_id, run_id = excluded.run_id, type = excluded.type,
    checkpoint = excluded.checkpoint, metadata_type = excluded.metadata_type,
    metadata = excluded.metadata, channels = excluded.channels;

-- name: upsert_checkpoint_blob
INSERT INTO checkpoint_blobs (thread, checkpoint_ns, channel, version, type, value)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = :session_id),
        :checkpoint_ns, :channel, :version, :type, :value)
ON CONFLICT (thread, checkpoint_ns, channel, version) DO UPDATE
SET type = excluded.type, value = excluded.value;

-- name: get_checkpoint_blob
SELECT type, value FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id)
  AND checkpoint_ns = :checkpoint_ns AND channel = :channel AND version = :version;

-- A write of a task is kept as first written, unless it is one of the special writes (an error,
-- an interrupt: idx < 0), which the newest replaces.

-- name: insert_checkpoint_write
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel,
                               type, value, task_path)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = :session_id),
        :checkpoint_ns, :checkpoint_id, :task_id, :idx, :channel, :type, :value, :task_path)
ON CONFLICT (thread, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
SET channel = excluded.channel, type = excluded.type, value = excluded.value,
    task_path = excluded.task_path
WHERE excluded.idx < 0;

-- name: checkpoint_writes
SELECT task_id, idx, channel, type, value, task_path FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id)
  AND checkpoint_ns = :checkpoint_ns AND checkpoint_id = :checkpoint_id
ORDER BY task_path, task_id, idx;

-- Checkpoints newest first: of one session (or every session of the owner), one namespace (or
-- all), before a checkpoint id (or all), one id (or all).

-- name: list_checkpoints
SELECT s.external_key, t.session_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.type,
       c.checkpoint, c.metadata_type, c.metadata, c.channels
FROM checkpoints c
JOIN checkpoint_threads t ON t.id = c.thread
JOIN sessions s ON s.id = t.session_id
WHERE s.owner = :owner AND (:session_id::text IS NULL OR t.session_id = :session_id)
  AND (:checkpoint_ns::text IS NULL OR c.checkpoint_ns = :checkpoint_ns)
  AND (:checkpoint_id::text IS NULL OR c.checkpoint_id = :checkpoint_id)
  AND (:before_id::text IS NULL OR c.checkpoint_id < :before_id)
ORDER BY c.checkpoint_id DESC LIMIT :limit;

-- name: delete_run_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE (thread, checkpoint_ns, checkpoint_id) IN (
    SELECT c.thread, c.checkpoint_ns, c.checkpoint_id
    FROM checkpoints c
    JOIN checkpoint_threads t ON t.id = c.thread
    JOIN sessions s ON s.id = t.session_id
    WHERE c.run_id = :run_id AND s.owner = :owner);

-- name: delete_run_checkpoints
DELETE FROM checkpoints
WHERE run_id = :run_id AND thread IN (
    SELECT t.id FROM checkpoint_threads t JOIN sessions s ON s.id = t.session_id
    WHERE s.owner = :owner);

-- Every checkpoint of a session but the newest of each namespace (prune, keep_latest).

-- name: delete_older_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id) AND checkpoint_id < (
    SELECT max(c.checkpoint_id) FROM checkpoints c
    WHERE c.thread = checkpoint_writes.thread
      AND c.checkpoint_ns = checkpoint_writes.checkpoint_ns);

-- name: delete_older_checkpoints
DELETE FROM checkpoints
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id) AND checkpoint_id < (
    SELECT max(c.checkpoint_id) FROM checkpoints c
    WHERE c.thread = checkpoints.thread AND c.checkpoint_ns = checkpoints.checkpoint_ns);

-- Blobs no checkpoint of the session names any more.

-- name: delete_session_checkpoints
DELETE FROM checkpoints
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :id);

-- name: delete_session_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :id);

-- name: delete_session_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :id);

-- name: delete_session_checkpoint_thread
DELETE FROM checkpoint_threads WHERE session_id = :id;

-- name: copy_session_checkpoints
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type,
                         checkpoint, metadata_type, metadata, channels, created_at)
SELECT (SELECT id FROM checkpoint_threads WHERE session_id = :target), checkpoint_ns,
       checkpoint_id, parent_id, run_id, type, checkpoint, metadata_type, metadata, channels,
       created_at
FROM checkpoints WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :source)
ON CONFLICT DO NOTHING;

-- name: copy_session_checkpoint_writes
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel,
                               type, value, task_path)
SELECT (SELECT id FROM checkpoint_threads WHERE session_id = :target), checkpoint_ns,
       checkpoint_id, task_id, idx, channel, type, value, task_path
FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :source)
ON CONFLICT DO NOTHING;

-- Blobs of a session, to copy (the message ranges among them are rebased on the copy's
-- conversation).

-- name: session_checkpoint_blobs
SELECT checkpoint_ns, channel, version, type, value FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id);

-- db copy: checkpoints of graphs -------------------------------------------------------------

-- name: copy_count_checkpoint_threads
SELECT count(*) AS n FROM checkpoint_threads;

-- name: copy_page_checkpoint_threads
SELECT * FROM checkpoint_threads
WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_checkpoint_threads
INSERT INTO checkpoint_threads (id, session_id)
VALUES (:id, :session_id);

-- name: copy_clear_checkpoint_threads
DELETE FROM checkpoint_threads;

-- name: copy_count_checkpoints
SELECT count(*) AS n FROM checkpoints;

-- name: copy_page_checkpoints
SELECT * FROM checkpoints
WHERE (thread, checkpoint_ns, checkpoint_id)
      > (:after_thread, :after_checkpoint_ns, :after_checkpoint_id)
ORDER BY thread, checkpoint_ns, checkpoint_id LIMIT :limit;

-- name: copy_insert_checkpoints
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type, checkpoint, metadata_type, metadata, channels, created_at)
VALUES (:thread, :checkpoint_ns, :checkpoint_id, :parent_id, :run_id, :type, :checkpoint, :metadata_type, :metadata, :channels::jsonb, :created_at);

-- name: copy_clear_checkpoints
DELETE FROM checkpoints;

-- name: copy_count_checkpoint_blobs
SELECT count(*) AS n FROM checkpoint_blobs;

-- name: copy_page_checkpoint_blobs
SELECT * FROM checkpoint_blobs
WHERE (thread, checkpoint_ns, channel, version)
      > (:after_thread, :after_checkpoint_ns, :after_channel, :after_version)
ORDER BY thread, checkpoint_ns, channel, version LIMIT :limit;

-- name: copy_insert_checkpoint_blobs
INSERT INTO checkpoint_blobs (thread, checkpoint_ns, channel, version, type, value)
VALUES (:thread, :checkpoint_ns, :channel, :version, :type, :value);

-- name: copy_clear_checkpoint_blobs
DELETE FROM checkpoint_blobs;

-- name: copy_count_checkpoint_writes
SELECT count(*) AS n FROM checkpoint_writes;

-- name: copy_page_checkpoint_writes
SELECT * FROM checkpoint_writes
WHERE (thread, checkpoint_ns, checkpoint_id, task_id, idx)
      > (:after_thread, :after_checkpoint_ns, :after_checkpoint_id, :after_task_id, :after_idx)
ORDER BY thread, checkpoint_ns, checkpoint_id, task_id, idx LIMIT :limit;

-- name: copy_insert_checkpoint_writes
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path)
VALUES (:thread, :checkpoint_ns, :checkpoint_id, :task_id, :idx, :channel, :type, :value, :task_path);

-- name: copy_clear_checkpoint_writes
DELETE FROM checkpoint_writes;

-- name: stats_runs_by_hour
-- Overview: the owner's runs created in [since, until) by hour (microseconds / :hour) and
-- status (the runs_by_owner index).
SELECT created_at / :hour AS slot, status, count(*) AS n FROM runs
WHERE owner = :owner AND created_at >= :since AND created_at < :until
GROUP BY 1, 2
ORDER BY slot, status;

-- name: stats_run_durations
-- Overview: nearest-rank p50 and p95 of the durations of the finished runs, by agent.
WITH d AS (
    SELECT agent, ended_at - started_at AS us,
           row_number() OVER (PARTITION BY agent ORDER BY ended_at - started_at) AS k,
           count(*) OVER (PARTITION BY agent) AS n
    FROM runs
    WHERE owner = :owner AND created_at >= :since AND created_at < :until
      AND started_at IS NOT NULL AND ended_at IS NOT NULL
)
SELECT agent, n,
       max(CASE WHEN k = (50 * n + 99) / 100 THEN us END) AS p50,
       max(CASE WHEN k = (95 * n + 99) / 100 THEN us END) AS p95
FROM d GROUP BY agent, n ORDER BY agent;

-- name: stats_tokens_by_day
-- Overview: tokens of the model calls of those runs, by UTC day (microseconds / :day) and model.
SELECT s.started_at / :day AS slot, s.name AS model,
       sum(s.input_tokens) AS input_tokens, sum(s.output_tokens) AS output_tokens
FROM runs AS r JOIN steps AS s ON s.run_id = r.id
WHERE r.owner = :owner AND r.created_at >= :since AND r.created_at < :until
  AND s.kind = 'model_call'
GROUP BY 1, 2
ORDER BY slot, model;

-- name: stats_failing_tools
-- Overview: the tools of those runs whose calls failed (or are in doubt) most.
SELECT s.name AS tool, count(*) AS calls,
       sum(CASE WHEN s.status = 'failed' OR s.status = 'in_doubt' THEN 1 ELSE 0 END) AS failed
FROM runs AS r JOIN steps AS s ON s.run_id = r.id
WHERE r.owner = :owner AND r.created_at >= :since AND r.created_at < :until
  AND s.kind = 'tool_call'
GROUP BY s.name
HAVING sum(CASE WHEN s.status = 'failed' OR s.status = 'in_doubt' THEN 1 ELSE 0 END) > 0
ORDER BY failed DESC, tool
LIMIT :limit;

-- adapters' conversation reads ----------------------------------------------------------------

-- name: layered_memory
-- What a session sees: its own memory, its app's (root namespace), its owner's in one namespace.
-- Another owner's session has no memory here (as its conversation reads as empty).
SELECT * FROM memory WHERE scope = 'session' AND scope_id = :session_id
  AND EXISTS (SELECT 1 FROM sessions WHERE id = :session_id AND owner = :owner)
UNION ALL
SELECT * FROM memory WHERE scope = 'app' AND scope_id = :app AND namespace = ''
UNION ALL
SELECT * FROM memory WHERE scope = 'user' AND scope_id = :owner AND namespace = :namespace;

-- temporary sessions (stateless runs) and assistants with versions ------------------------------

-- name: mark_session_temporary
UPDATE sessions SET temporary = 1 WHERE id = :id;

-- name: finished_temporary_sessions
-- Temporary sessions idle since before :before whose runs have all ended.
SELECT s.id FROM sessions AS s
WHERE s.temporary = 1 AND s.last_activity_at < :before
  AND NOT EXISTS (SELECT 1 FROM runs AS r
                  WHERE r.session_id = s.id AND r.status IN ('ready', 'running', 'waiting'))
ORDER BY s.last_activity_at
LIMIT :limit;

-- name: insert_assistant
INSERT INTO assistants (id, owner, graph_id, name, description, config, context, metadata,
                        version, created_at, updated_at)
VALUES (:id, :owner, :graph_id, :name, :description, :config::jsonb, :context::jsonb,
        :metadata::jsonb, :version, :created_at, :updated_at);

-- name: insert_assistant_version
INSERT INTO assistant_versions (assistant_id, version, graph_id, name, description, config,
                                context, metadata, created_at)
VALUES (:id, :version, :graph_id, :name, :description, :config::jsonb, :context::jsonb,
        :metadata::jsonb, :created_at);

-- name: get_assistant
SELECT * FROM assistants WHERE id = :id AND owner = :owner;

-- name: list_assistants
SELECT * FROM assistants WHERE owner = :owner ORDER BY created_at, id LIMIT :limit;

-- name: last_assistant_version
SELECT max(version) AS version FROM assistant_versions WHERE assistant_id = :id;

-- name: get_assistant_version
SELECT * FROM assistant_versions WHERE assistant_id = :id AND version = :version;

-- name: list_assistant_versions
SELECT * FROM assistant_versions WHERE assistant_id = :id
ORDER BY version DESC LIMIT :limit OFFSET :offset;

-- name: set_assistant_current
UPDATE assistants
SET graph_id = :graph_id, name = :name, description = :description, config = :config::jsonb,
    context = :context::jsonb, metadata = :metadata::jsonb, version = :version,
    updated_at = :updated_at
WHERE id = :id;

-- name: delete_assistant_versions
DELETE FROM assistant_versions WHERE assistant_id = :id;

-- name: delete_assistant
DELETE FROM assistants WHERE id = :id;

-- name: erase_owner_assistants
DELETE FROM assistants WHERE owner = :owner;

-- name: erase_owner_assistant_versions
DELETE FROM assistant_versions
WHERE assistant_id IN (SELECT id FROM assistants WHERE owner = :owner);

-- name: copy_count_assistants
SELECT count(*) AS n FROM assistants;

-- name: copy_page_assistants
SELECT * FROM assistants WHERE id > :after_id ORDER BY id LIMIT :limit;

-- name: copy_insert_assistants
INSERT INTO assistants (id, owner, graph_id, name, description, config, context, metadata,
                        version, created_at, updated_at)
VALUES (:id, :owner, :graph_id, :name, :description, :config::jsonb, :context::jsonb,
        :metadata::jsonb, :version, :created_at, :updated_at);

-- name: copy_clear_assistants
DELETE FROM assistants;

-- name: copy_count_assistant_versions
SELECT count(*) AS n FROM assistant_versions;

-- name: copy_page_assistant_versions
SELECT * FROM assistant_versions
WHERE (assistant_id, version) > (:after_assistant_id, :after_version)
ORDER BY assistant_id, version LIMIT :limit;

-- name: copy_insert_assistant_versions
INSERT INTO assistant_versions (assistant_id, version, graph_id, name, description, config,
                                context, metadata, created_at)
VALUES (:assistant_id, :version, :graph_id, :name, :description, :config::jsonb,
        :context::jsonb, :metadata::jsonb, :created_at);

-- name: copy_clear_assistant_versions
DELETE FROM assistant_versions;
-- schedules and webhooks -------------------------------------------------------------------------

-- name: claim_schedule_tick
-- Moves the tick read (due) forward: of the workers that read it, exactly one gets the row.
UPDATE schedules SET next_run_at = :next_run_at,
                     last_run_id = COALESCE(:run_id::text, last_run_id),
                     enabled = :enabled
WHERE id = :id AND enabled = 1 AND next_run_at = :due
RETURNING *;

-- name: claim_webhook_delivery
-- Moves the time read (seen) on to the end of this attempt's lease: one worker at a time.
UPDATE webhook_deliveries SET next_attempt_at = :lease_until, attempts = attempts + 1,
                              updated_at = :now
WHERE id = :id AND state = 'pending' AND next_attempt_at = :seen
RETURNING *;

-- name: copy_clear_schedules
DELETE FROM schedules;

-- name: copy_clear_webhook_deliveries
DELETE FROM webhook_deliveries;

-- name: copy_clear_webhook_secrets
DELETE FROM webhook_secrets;

-- name: copy_count_schedules
SELECT count(*) AS n FROM schedules;

-- name: copy_count_webhook_deliveries
SELECT count(*) AS n FROM webhook_deliveries;

-- name: copy_count_webhook_secrets
SELECT count(*) AS n FROM webhook_secrets;

-- name: copy_insert_schedules
INSERT INTO schedules (id, owner, cron, timezone, agent, goal, input, session_id, metadata,
                       end_at, enabled, next_run_at, last_run_id, created_at, updated_at)
VALUES (:id, :owner, :cron, :timezone, :agent, :goal, :input::jsonb,
        :session_id, :metadata::jsonb, :end_at, :enabled, :next_run_at,
        :last_run_id, :created_at, :updated_at);

-- name: copy_insert_webhook_deliveries
INSERT INTO webhook_deliveries (id, run_id, owner, url, shape, state, attempts, next_attempt_at,
                                created_at, updated_at)
VALUES (:id, :run_id, :owner, :url, :shape, :state, :attempts, :next_attempt_at, :created_at,
        :updated_at);

-- name: copy_insert_webhook_secrets
INSERT INTO webhook_secrets (owner, secret, created_at) VALUES (:owner, :secret, :created_at);

-- name: copy_page_schedules
SELECT * FROM schedules WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_page_webhook_deliveries
SELECT * FROM webhook_deliveries WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_page_webhook_secrets
SELECT * FROM webhook_secrets WHERE owner > :after_owner
ORDER BY owner LIMIT :limit;

-- name: delete_run_webhook_deliveries
DELETE FROM webhook_deliveries WHERE run_id = :run_id;

-- name: delete_schedule
DELETE FROM schedules WHERE id = :id AND owner = :owner;

-- name: delete_session_webhook_deliveries
DELETE FROM webhook_deliveries WHERE run_id IN (SELECT id FROM runs WHERE session_id = :id);

-- name: due_schedules
SELECT * FROM schedules WHERE enabled = 1 AND next_run_at <= :now
ORDER BY next_run_at, id LIMIT :limit;

-- name: due_webhook_deliveries
-- Pending deliveries of ended runs whose (retry or lease) time has come, earliest first.
SELECT d.*, r.session_id AS session_id FROM webhook_deliveries AS d
JOIN runs AS r ON r.id = d.run_id
WHERE d.state = 'pending' AND d.next_attempt_at <= :now
  AND r.status IN ('completed', 'failed', 'timed_out', 'cancelled')
ORDER BY d.next_attempt_at, d.id LIMIT :limit;

-- name: end_webhook_attempt
-- Only the attempt claimed (attempts and lease as the claim left them), once.
UPDATE webhook_deliveries SET state = :state, next_attempt_at = :next_attempt_at,
                              updated_at = :now
WHERE id = :id AND state = 'pending' AND attempts = :attempts
  AND next_attempt_at = :lease
RETURNING *;

-- name: erase_owner_schedules
DELETE FROM schedules WHERE owner = :owner;

-- name: erase_owner_webhook_deliveries
DELETE FROM webhook_deliveries WHERE owner = :owner;

-- name: erase_owner_webhook_secrets
DELETE FROM webhook_secrets WHERE owner = :owner;

-- name: insert_schedule
INSERT INTO schedules (id, owner, cron, timezone, agent, goal, input, session_id, metadata,
                       end_at, enabled, next_run_at, last_run_id, created_at, updated_at)
VALUES (:id, :owner, :cron, :timezone, :agent, :goal, :input::jsonb,
        :session_id, :metadata::jsonb, :end_at, :enabled, :next_run_at, NULL,
        :created_at, :updated_at)
RETURNING *;

-- name: insert_webhook_delivery
INSERT INTO webhook_deliveries (id, run_id, owner, url, shape, next_attempt_at, created_at,
                                updated_at)
VALUES (:id, :run_id, :owner, :url, :shape, :next_attempt_at, :created_at, :created_at);

-- name: insert_webhook_secret_if_none
INSERT INTO webhook_secrets (owner, secret, created_at) VALUES (:owner, :secret, :created_at)
ON CONFLICT (owner) DO NOTHING;

-- name: list_schedules
SELECT * FROM schedules
WHERE owner = :owner AND id > :after_id
  AND (:session_id::text IS NULL OR session_id = :session_id)
  AND (:agent::text IS NULL OR agent = :agent)
  AND (:enabled::integer IS NULL OR enabled = :enabled)
ORDER BY id LIMIT :limit;

-- name: put_webhook_secret
INSERT INTO webhook_secrets (owner, secret, created_at) VALUES (:owner, :secret, :created_at)
ON CONFLICT (owner) DO UPDATE SET secret = excluded.secret, created_at = excluded.created_at
RETURNING *;

-- name: schedule_by_id
SELECT * FROM schedules WHERE id = :id AND (:owner::text IS NULL OR owner = :owner);

-- name: update_schedule
-- Leaves last_run_id to the ticks.
UPDATE schedules
SET cron = :cron, timezone = :timezone, agent = :agent, goal = :goal,
    input = :input::jsonb, metadata = :metadata::jsonb, end_at = :end_at,
    enabled = :enabled, next_run_at = :next_run_at, updated_at = :updated_at
WHERE id = :id AND owner = :owner
RETURNING *;

-- name: webhook_secret
SELECT * FROM webhook_secrets WHERE owner = :owner;

-- name: assistant_exists
SELECT 1 FROM assistants WHERE id = :id;

-- name: steps_of_run_after
-- A page of a run's steps, by seq, read from the (run_id, seq) index.
SELECT * FROM steps WHERE run_id = :run_id AND seq > :after_seq ORDER BY seq LIMIT :limit;

-- name: memory_of_run_start
-- memory_of_run for the app of the run's session (its scope id read from the session: owner,
-- :sep, app), so it goes in the same round trip as the session's read.
SELECT * FROM (SELECT * FROM memory WHERE scope = 'run' AND scope_id = :run_id AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit) AS r
UNION ALL
SELECT * FROM (SELECT * FROM memory
               WHERE scope = 'session' AND scope_id = :session_id AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit) AS s
UNION ALL
SELECT * FROM (SELECT * FROM memory WHERE scope = 'user' AND scope_id = :owner AND namespace = ''
               ORDER BY updated_at DESC, namespace, key LIMIT :limit) AS u
UNION ALL
SELECT * FROM (SELECT * FROM memory
               WHERE scope = 'app' AND namespace = ''
                 AND scope_id = (SELECT owner || :sep || app FROM sessions WHERE id = :session_id)
               ORDER BY updated_at DESC, namespace, key LIMIT :limit) AS a;

-- name: run_summaries_backward
-- The runs of a session before a seq, newest first, as summaries (core.run.RunSummary's
-- columns: not their input, metadata or context), from the (session_id, seq) index.
SELECT id, session_id, seq, agent, goal, status, attempt, created_at, started_at, ended_at,
       worker_id, error, output, input_tokens, output_tokens, model_requests, waiting_for
FROM runs
WHERE session_id = :session_id AND seq < :before_seq
ORDER BY seq DESC LIMIT :limit;
