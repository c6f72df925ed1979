-- Every SQL statement of the SQLite store, by name. Parameters are :named.
-- Times are integer microseconds since the epoch; the active-session test (status plus TTL)
-- is written out wherever a write needs it, so expiry is exact inside the transaction.

-- name: insert_event
INSERT INTO events (type, owner, session_id, run_id, data, created_at)
VALUES (:type, :owner, :session_id, :run_id, :data, :created_at);

-- name: events_of_session
SELECT * FROM events WHERE session_id = :session_id AND id > :after_id ORDER BY id LIMIT :limit;

-- name: events_of_run
SELECT * FROM events WHERE run_id = :run_id AND id > :after_id ORDER BY id LIMIT :limit;

-- sessions -------------------------------------------------------------------------------------

-- name: session_exists
SELECT 1 FROM sessions WHERE id = :id;

-- name: insert_session
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                      updated_at, last_activity_at, external_key, app)
VALUES (:id, :owner, :title, :status, :metadata, :context, :ttl_seconds, :created_at,
        :updated_at, :last_activity_at, :external_key, :app);

-- name: get_session
SELECT * FROM sessions WHERE id = :id AND (:owner IS NULL OR owner = :owner);

-- name: session_by_key
SELECT * FROM sessions WHERE owner = :owner AND external_key = :key;

-- name: touch_active_session
UPDATE sessions
SET last_activity_at = :now,
    message_count = message_count + :add_messages,
    run_count = run_count + :add_runs
WHERE id = :id AND (:owner IS NULL OR owner = :owner) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)
RETURNING owner, message_count, run_count, cleared_seq;

-- name: touch_session_softly
UPDATE sessions SET last_activity_at = :now
WHERE id = :id AND status = 'active' AND last_activity_at < :now - 1000000
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now);

-- name: list_sessions_first
SELECT * FROM sessions
WHERE owner = :owner
  AND (:status IS NULL
       OR (:status = 'closed' AND status = 'closed')
       OR (:status = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now))
       OR (:status = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= :now))))
  AND (:query IS NULL OR title LIKE :query ESCAPE '\' OR metadata LIKE :query ESCAPE '\'
       OR external_key LIKE :query ESCAPE '\')
  AND (:app IS NULL OR app = :app)
  AND (:key_prefix IS NULL
       OR substr(external_key, 1, length(:key_prefix)) = :key_prefix)
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE json_extract(sessions.metadata, '$."' || m.key || '"') IS NOT m.value))
ORDER BY last_activity_at DESC, id DESC
LIMIT :limit;

-- name: list_sessions_after
SELECT * FROM sessions
WHERE owner = :owner
  AND (last_activity_at < :cursor_at OR (last_activity_at = :cursor_at AND id < :cursor_id))
  AND (:status IS NULL
       OR (:status = 'closed' AND status = 'closed')
       OR (:status = 'active' AND status = 'active'
           AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now))
       OR (:status = 'expired' AND (status = 'expired'
           OR (status = 'active' AND ttl_seconds IS NOT NULL
               AND last_activity_at + ttl_seconds * 1000000 <= :now))))
  AND (:query IS NULL OR title LIKE :query ESCAPE '\' OR metadata LIKE :query ESCAPE '\'
       OR external_key LIKE :query ESCAPE '\')
  AND (:app IS NULL OR app = :app)
  AND (:key_prefix IS NULL
       OR substr(external_key, 1, length(:key_prefix)) = :key_prefix)
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE json_extract(sessions.metadata, '$."' || m.key || '"') IS NOT m.value))
ORDER BY last_activity_at DESC, id DESC
LIMIT :limit;

-- name: update_session
UPDATE sessions
SET title = CASE WHEN :set_title THEN :title ELSE title END,
    metadata = CASE WHEN :set_metadata THEN :metadata ELSE metadata END,
    context = CASE WHEN :set_context THEN :context ELSE context END,
    ttl_seconds = CASE WHEN :set_ttl THEN :ttl_seconds ELSE ttl_seconds END,
    external_key = CASE WHEN :set_external_key THEN :external_key ELSE external_key END,
    app = CASE WHEN :set_app THEN :app ELSE app END,
    updated_at = :now
WHERE id = :id AND (:owner IS NULL OR owner = :owner) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now)
RETURNING *;

-- name: close_session
-- Never before the session's last activity or change: a write that committed first may have
-- read the clock later (the times then still follow the commit order). The same holds for the
-- end of a run (cancel_run, end_run) and of a step (close_open_steps).
UPDATE sessions
SET status = 'closed', closed_at = max(:now, last_activity_at, updated_at),
    updated_at = max(:now, last_activity_at, updated_at)
WHERE id = :id AND status = 'active'
RETURNING *;

-- name: expire_session
UPDATE sessions SET status = 'expired', updated_at = :now
WHERE id = :id AND status = 'active'
RETURNING *;

-- name: expirable_sessions
SELECT * FROM sessions
WHERE status = 'active' AND ttl_seconds IS NOT NULL
  AND last_activity_at + ttl_seconds * 1000000 <= :now
ORDER BY last_activity_at + ttl_seconds * 1000000
LIMIT :limit;

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
VALUES (:id, :session_id, :seq, :role, :content, :run_id, :metadata, :created_at, :item);

-- The conversation, in the columns (and their order) rows.message_from_row reads: messages
-- above the session's cleared_seq (one index range, however much a clear removed) and not
-- popped, unless removed ones are asked for too (:removed). The session row also scopes the
-- read to its owner: another owner's session reads as empty.
-- name: messages_forward
SELECT id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at
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
SELECT id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at
FROM messages
WHERE session_id = :session_id AND seq < :before_seq
  AND seq > max(:after_seq, COALESCE((SELECT CASE WHEN :removed THEN 0 ELSE cleared_seq END
                                      FROM sessions
                                      WHERE id = :session_id
                                        AND (:owner IS NULL OR owner = :owner)),
                                     :before_seq))
  AND (:removed OR removed_at IS NULL)
ORDER BY seq DESC LIMIT :limit;

-- name: newest_message
SELECT id FROM messages
WHERE session_id = :session_id AND seq > :after_seq AND removed_at IS NULL
ORDER BY seq DESC LIMIT 1;

-- name: remove_message
UPDATE messages SET removed_at = max(:now, created_at)
WHERE id = :id AND removed_at IS NULL
RETURNING id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at;

-- name: remove_messages
UPDATE messages SET removed_at = max(:now, created_at)
WHERE session_id = :session_id AND seq > :after_seq AND removed_at IS NULL;

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
VALUES (:id, :session_id, :owner, :seq, :agent, :goal, :input, 'ready', :created_at, :updated_at,
        1, :max_attempts, :metadata, :timeout_seconds, :wait_timeout_seconds,
        :idempotency_key, :not_before, :traceparent)
RETURNING *;

-- name: get_run
SELECT * FROM runs WHERE id = :id AND (:owner IS NULL OR owner = :owner);

-- The same without the assembled context (often the largest column), for status checks and lists.
-- name: get_run_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs WHERE id = :id AND (:owner IS NULL OR owner = :owner);

-- name: runs_forward
SELECT * FROM runs
WHERE session_id = :session_id AND (:status IS NULL OR status = :status) AND seq > :after_seq
ORDER BY seq LIMIT :limit;

-- name: runs_backward
SELECT * FROM runs
WHERE session_id = :session_id AND (:status IS NULL OR status = :status) AND seq < :before_seq
ORDER BY seq DESC LIMIT :limit;

-- name: runs_forward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = :session_id AND (:status IS NULL OR status = :status) AND seq > :after_seq
ORDER BY seq LIMIT :limit;

-- name: runs_backward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = :session_id AND (:status IS NULL OR status = :status) AND seq < :before_seq
ORDER BY seq DESC LIMIT :limit;

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

-- name: hold_run
-- A run its creator executes itself (a framework's runner): a new ready run, taken by that
-- worker at once, so no other worker can claim it.
UPDATE runs
SET status = 'running', worker_id = :worker_id, lease_expires_at = :lease_expires_at,
    started_at = COALESCE(started_at, :now), updated_at = :now
WHERE id = :id AND status = 'ready'
RETURNING *;

-- name: hold_resumed_run
-- A resumed run nobody holds (it is running again), taken by its creator's worker at once.
UPDATE runs
SET worker_id = :worker_id, lease_expires_at = :lease_expires_at, updated_at = :now
WHERE id = :id AND status = 'running' AND worker_id IS NULL
RETURNING *;

-- name: renew_lease
UPDATE runs SET lease_expires_at = :lease_expires_at
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: update_held_run
UPDATE runs
SET output = CASE WHEN :set_output THEN :output ELSE output END,
    context = CASE WHEN :set_context THEN :context ELSE context END,
    updated_at = :now
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: finish_run
UPDATE runs
SET status = :status, ended_at = :now, updated_at = :now,
    output = CASE WHEN :set_output THEN :output ELSE output END,
    error = :error, worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: suspend_run
UPDATE runs
SET status = 'waiting', waiting_for = :waiting_for, updated_at = :now,
    worker_id = NULL, lease_expires_at = NULL,
    deadline_at = CASE WHEN wait_timeout_seconds IS NULL THEN NULL
                       ELSE :now + CAST(wait_timeout_seconds * 1000000 AS INTEGER) END
WHERE id = :id AND status = 'running' AND worker_id = :worker_id
RETURNING *;

-- name: resume_run
UPDATE runs
SET status = 'running', waiting_for = NULL, updated_at = :now,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = :id AND (:owner IS NULL OR owner = :owner) AND status = 'waiting'
RETURNING *;

-- name: cancel_run
UPDATE runs
SET status = 'cancelled', ended_at = max(:now, updated_at),
    updated_at = max(:now, updated_at), error = :error,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = :id AND status IN ('ready', 'running', 'waiting')
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

-- name: hold_run_for_step
-- The guard (the run is running and held by this worker); a read, so that appending a step does
-- not also rewrite the run's row. The writer lock (BEGIN IMMEDIATE) makes it race-free.
SELECT session_id, owner, attempt
FROM runs
WHERE id = :run_id AND status = 'running' AND worker_id = :worker_id;

-- name: next_step_seq
-- The next step seq, read from the (run_id, seq) index. runs.step_count is no longer kept.
SELECT COALESCE(MAX(seq), 0) + 1 AS step_count FROM steps WHERE run_id = :run_id;

-- name: insert_step
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                   error, started_at, ended_at, input_tokens, output_tokens, model_requests,
                   attempt)
VALUES (:id, :run_id, :session_id, :seq, :position, :kind, :name, :status, :input, :output,
        :error, :started_at, :ended_at, :input_tokens, :output_tokens, :requests, :attempt);

-- name: run_owner
SELECT owner FROM runs WHERE id = :id;

-- name: finish_step
UPDATE steps
SET status = :status, output = :output, error = :error, ended_at = :now,
    input_tokens = :input_tokens, output_tokens = :output_tokens, model_requests = :requests
WHERE id = :id AND status = 'running'
  AND EXISTS (SELECT 1 FROM runs
              WHERE runs.id = steps.run_id AND runs.status = 'running'
                AND runs.worker_id = :worker_id)
RETURNING *;

-- name: get_step
SELECT * FROM steps WHERE id = :id;

-- name: complete_waiting_step
UPDATE steps SET status = 'completed', output = :output, ended_at = :now
WHERE id = :id AND run_id = :run_id AND status = 'running'
RETURNING *;

-- name: close_open_steps
-- Tool calls end in_doubt (their effect may have happened), the other steps failed.
UPDATE steps
SET status = CASE WHEN kind = 'tool_call' THEN 'in_doubt' ELSE 'failed' END, error = :error,
    ended_at = max(:now, started_at)
WHERE run_id = :run_id AND status = 'running'
RETURNING *;

-- name: steps_of_run
SELECT * FROM steps WHERE run_id = :run_id ORDER BY seq;

-- name: tool_calls_of_session_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_session_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: tool_calls_of_session_by_name_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id AND name = :tool
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_session_by_name_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = :session_id AND name = :tool
  AND (:run_id IS NULL OR run_id = :run_id)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- name: tool_calls_of_run_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = :run_id
  AND (:tool IS NULL OR name = :tool)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id
LIMIT :limit;

-- name: tool_calls_of_run_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = :run_id
  AND (:tool IS NULL OR name = :tool)
  AND (:status IS NULL OR status = :status)
  AND (:since IS NULL OR started_at >= :since) AND (:until IS NULL OR started_at < :until)
  AND id > :after_id AND id < :before_id
ORDER BY id DESC
LIMIT :limit;

-- LangGraph-style session search --------------------------------------------------------------
-- What a session's runs are doing ("activity"): busy (a run running, or ready with none
-- waiting), waiting (a run waits for a person), error (its newest run failed or timed out),
-- idle. Filters, the sort (created_at, updated_at, activity_at, id or activity; ties by id in
-- the same direction) and the page all run here, so only the page's sessions are read.

-- name: search_sessions
SELECT s.* FROM sessions AS s
WHERE s.owner = :owner
  AND (:ids IS NULL OR s.id IN (SELECT value FROM json_each(:ids)))
  AND (:metadata IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:metadata) AS m
        WHERE json_extract(s.metadata, '$."' || m.key || '"') IS NOT m.value))
  AND (:context IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:context) AS m
        WHERE json_extract(s.context, '$."' || m.key || '"') IS NOT m.value))
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
        WHERE json_extract(s.metadata, '$."' || m.key || '"') IS NOT m.value))
  AND (:context IS NULL OR NOT EXISTS (
        SELECT 1 FROM json_each(:context) AS m
        WHERE json_extract(s.context, '$."' || m.key || '"') IS NOT m.value))
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

-- name: upsert_memory
-- A JSON null value arrives as SQL NULL: it is stored as the JSON text 'null'.
INSERT INTO memory (scope, scope_id, namespace, key, value, session_id, source_run_id,
                    created_at, updated_at)
VALUES (:scope, :scope_id, :namespace, :key, COALESCE(:value, 'null'), :session_id,
        :source_run_id, :now, :now)
ON CONFLICT (scope, scope_id, namespace, key) DO UPDATE
SET value = excluded.value, source_run_id = excluded.source_run_id, updated_at = excluded.updated_at
RETURNING *;

-- name: get_memory
SELECT * FROM memory
WHERE scope = :scope AND scope_id = :scope_id AND namespace = :namespace AND key = :key;

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

-- name: delete_memory
DELETE FROM memory
WHERE scope = :scope AND scope_id = :scope_id AND namespace = :namespace AND key = :key
RETURNING session_id;

-- name: list_namespaces
SELECT DISTINCT namespace FROM memory
WHERE scope = 'user' AND scope_id = :owner AND namespace <> ''
  AND (:prefix = '' OR namespace = :prefix
       OR substr(namespace, 1, length(:prefix) + 1) = :prefix || char(31))
ORDER BY namespace
LIMIT :limit OFFSET :offset;

-- api keys -------------------------------------------------------------------------------------

-- name: insert_api_key
INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at)
VALUES (:id, :owner, :key_hash, :prefix, :name, :created_at)
RETURNING *;

-- name: api_key_by_hash
SELECT * FROM api_keys WHERE key_hash = :key_hash;

-- name: list_api_keys
SELECT * FROM api_keys WHERE (:owner IS NULL OR owner = :owner) ORDER BY created_at, id;

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

-- name: copy_columns
-- The columns a table has in this database, in order: the copy refuses a column it would drop.
SELECT name FROM pragma_table_info(:table) ORDER BY cid;

-- name: copy_count_sessions
SELECT count(*) AS n FROM sessions;

-- name: copy_page_sessions
SELECT * FROM sessions WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_sessions
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                     updated_at, last_activity_at, closed_at, run_count, message_count,
                     input_tokens, output_tokens, model_requests, deleted_runs, external_key, app,
                     cleared_seq)
VALUES (:id, :owner, :title, :status, :metadata, :context, :ttl_seconds, :created_at,
        :updated_at, :last_activity_at, :closed_at, :run_count, :message_count, :input_tokens,
        :output_tokens, :model_requests, :deleted_runs, :external_key, :app, :cleared_seq);

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
VALUES (:id, :session_id, :owner, :seq, :agent, :goal, :input, :status, :created_at,
        :updated_at, :started_at, :ended_at, :error, :output, :input_tokens, :output_tokens,
        :model_requests, :attempt, :max_attempts, :metadata, :timeout_seconds,
        :wait_timeout_seconds, :idempotency_key, :waiting_for, :context, :worker_id,
        :lease_expires_at, :deadline_at, :not_before, :step_count, :traceparent);

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
VALUES (:id, :run_id, :session_id, :seq, :position, :kind, :name, :status, :input, :output,
        :error, :started_at, :ended_at, :input_tokens, :output_tokens, :model_requests, :attempt);

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
VALUES (:id, :session_id, :seq, :role, :content, :run_id, :metadata, :created_at, :item,
        :removed_at);

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
VALUES (:scope, :scope_id, :namespace, :key, :value, :session_id, :source_run_id, :created_at,
        :updated_at);

-- name: copy_clear_memory
DELETE FROM memory;

-- name: copy_count_events
SELECT count(*) AS n FROM events;

-- name: copy_page_events
SELECT * FROM events WHERE id > :after_id
ORDER BY id LIMIT :limit;

-- name: copy_insert_events
INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)
VALUES (:id, :type, :owner, :session_id, :run_id, :data, :created_at);

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

-- name: copy_bump_sequences
-- AUTOINCREMENT already follows explicit ids; this only makes sure of it.
UPDATE sqlite_sequence SET seq = (SELECT MAX(id) FROM events)
WHERE name = 'events' AND seq < (SELECT MAX(id) FROM events);

-- name: count_unfinished_runs
-- Gauges: runs ready, running or waiting now, by status and agent (the runs_unfinished index).
SELECT status, agent, count(*) AS n FROM runs
WHERE status IN ('ready', 'running', 'waiting')
GROUP BY status, agent;

-- name: count_active_sessions
SELECT count(*) AS n FROM sessions
WHERE status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > :now);

-- routing --------------------------------------------------------------------------------------
-- A worker announces the agents it has until expires_at and renews that; runs whose agent no
-- live worker has are unroutable.

-- name: announce_worker
INSERT INTO workers (id, agents, started_at, seen_at, expires_at)
VALUES (:id, :agents, :now, :now, :expires_at)
ON CONFLICT (id) DO UPDATE
SET agents = excluded.agents, seen_at = excluded.seen_at, expires_at = excluded.expires_at;

-- name: drop_gone_workers
DELETE FROM workers WHERE expires_at <= :now;

-- name: retire_worker
DELETE FROM workers WHERE id = :id;

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
  AND (:query IS NULL OR goal LIKE :query ESCAPE '\' OR input LIKE :query ESCAPE '\'
       OR output LIKE :query ESCAPE '\' OR error LIKE :query ESCAPE '\'
       OR agent LIKE :query ESCAPE '\')
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
  AND (:query IS NULL OR goal LIKE :query ESCAPE '\' OR input LIKE :query ESCAPE '\'
       OR output LIKE :query ESCAPE '\' OR error LIKE :query ESCAPE '\'
       OR agent LIKE :query ESCAPE '\')
  AND (NOT :stuck OR (status = 'ready'
       AND agent NOT IN (SELECT a.value FROM workers AS w, json_each(w.agents) AS a
                         WHERE w.expires_at > :now)))
ORDER BY created_at DESC, id DESC
LIMIT :limit;

-- retention ------------------------------------------------------------------------------------

-- name: prunable_sessions
-- Closed before closed_before, or expired (persisted) with an expiry before expired_before.
SELECT id FROM sessions
WHERE id > :after_id
  AND ((:closed_before IS NOT NULL AND status = 'closed' AND closed_at < :closed_before)
       OR (:expired_before IS NOT NULL AND status = 'expired' AND ttl_seconds IS NOT NULL
           AND last_activity_at + ttl_seconds * 1000000 < :expired_before))
ORDER BY id LIMIT :limit;

-- name: owner_session_ids
SELECT id FROM sessions WHERE owner = :owner ORDER BY id LIMIT :limit;

-- name: erase_owner_memory
-- User memory (scope_id = the owner) and app memory (scope_id = owner + separator + app).
DELETE FROM memory
WHERE (scope = 'user' AND scope_id = :owner)
   OR (scope = 'app' AND substr(scope_id, 1, length(:app_prefix)) = :app_prefix);

-- name: erase_owner_events
DELETE FROM events WHERE owner = :owner;

-- name: erase_owner_ui_sessions
DELETE FROM ui_sessions WHERE owner = :owner;

-- name: erase_owner_api_keys
DELETE FROM api_keys WHERE owner = :owner;

-- archives (one session with everything in it) ---------------------------------------------------

-- name: archive_session
SELECT * FROM sessions WHERE id = :id AND (:owner IS NULL OR owner = :owner);

-- name: archive_runs
SELECT * FROM runs WHERE session_id = :id ORDER BY seq;

-- name: archive_steps
SELECT * FROM steps WHERE session_id = :id ORDER BY run_id, seq;

-- name: archive_messages
SELECT * FROM messages WHERE session_id = :id ORDER BY seq;

-- name: archive_memory
SELECT * FROM memory WHERE session_id = :id ORDER BY scope, scope_id, namespace, key;

-- name: archive_events
SELECT * FROM events WHERE session_id = :id ORDER BY id;
-- checkpoints of graphs (tether.integrations.langgraph) ----------------------------------------
-- A session's checkpoint rows carry its thread number (checkpoint_threads), made on its first.

-- name: ensure_checkpoint_thread
INSERT INTO checkpoint_threads (session_id) VALUES (:session_id)
ON CONFLICT (session_id) DO NOTHING;

-- name: upsert_checkpoint
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type,
                         checkpoint, metadata_type, metadata, channels, created_at)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = :session_id),
        :checkpoint_ns, :checkpoint_id, :parent_id, :run_id, :type, :checkpoint,
        :metadata_type, :metadata, :channels, :created_at)
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
WHERE s.owner = :owner AND (:session_id IS NULL OR t.session_id = :session_id)
  AND (:checkpoint_ns IS NULL OR c.checkpoint_ns = :checkpoint_ns)
  AND (:checkpoint_id IS NULL OR c.checkpoint_id = :checkpoint_id)
  AND (:before_id IS NULL OR c.checkpoint_id < :before_id)
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
-- name: delete_unused_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = :session_id) AND NOT EXISTS (
    SELECT 1 FROM checkpoints c, json_each(c.channels) AS v
    WHERE c.thread = checkpoint_blobs.thread
      AND c.checkpoint_ns = checkpoint_blobs.checkpoint_ns
      AND v.key = checkpoint_blobs.channel AND CAST(v.value AS TEXT) = checkpoint_blobs.version);

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
VALUES (:thread, :checkpoint_ns, :checkpoint_id, :parent_id, :run_id, :type, :checkpoint, :metadata_type, :metadata, :channels, :created_at);

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
