-- Every SQL statement of the PostgreSQL store, by name: the same names and parameters as the
-- SQLite store's. Parameters are %(named)s; a parameter tested with IS NULL carries a cast.
-- Times are BIGINT microseconds since the epoch; JSON parameters arrive as JSON text.

-- events ---------------------------------------------------------------------------------------

-- name: notify
SELECT pg_notify('tether', p) FROM unnest(%(payloads)b::text[]) AS p;

-- name: events_of_session
SELECT * FROM events WHERE session_id = %(session_id)s AND id > %(after_id)s ORDER BY id
LIMIT %(limit)s;

-- name: events_of_run
SELECT * FROM events WHERE run_id = %(run_id)s AND id > %(after_id)s ORDER BY id
LIMIT %(limit)s;

-- sessions -------------------------------------------------------------------------------------

-- name: session_exists
SELECT 1 FROM sessions WHERE id = %(id)s;

-- name: insert_session
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                      updated_at, last_activity_at, external_key, app)
VALUES (%(id)s, %(owner)s, %(title)s, %(status)s, %(metadata)s::jsonb, %(context)s::jsonb,
        %(ttl_seconds)s, %(created_at)s, %(updated_at)s, %(last_activity_at)s,
        %(external_key)s, %(app)s);

-- name: get_session
SELECT * FROM sessions WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s);

-- name: session_by_key
SELECT * FROM sessions WHERE owner = %(owner)s AND external_key = %(key)s;

-- name: touch_active_session
UPDATE sessions
SET last_activity_at = %(now)s,
    message_count = message_count + %(add_messages)s,
    run_count = run_count + %(add_runs)s
WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
RETURNING owner, message_count, run_count, cleared_seq;

-- name: touch_session_softly
-- Best effort: a session row another transaction holds is skipped, never waited for (that
-- transaction records activity itself), so finishing work cannot deadlock with its session.
UPDATE sessions SET last_activity_at = %(now)s
WHERE id = (SELECT id FROM sessions
            WHERE id = %(id)s AND status = 'active' AND last_activity_at < %(now)s - 1000000
              AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
            FOR UPDATE SKIP LOCKED);

-- name: list_sessions_first
SELECT * FROM sessions
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
SELECT * FROM sessions
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

-- name: update_session
UPDATE sessions
SET title = CASE WHEN %(set_title)s THEN %(title)s::text ELSE title END,
    metadata = CASE WHEN %(set_metadata)s THEN %(metadata)s::jsonb ELSE metadata END,
    context = CASE WHEN %(set_context)s THEN %(context)s::jsonb ELSE context END,
    ttl_seconds = CASE WHEN %(set_ttl)s THEN %(ttl_seconds)s::bigint ELSE ttl_seconds END,
    external_key = CASE WHEN %(set_external_key)s THEN %(external_key)s::text
                        ELSE external_key END,
    app = CASE WHEN %(set_app)s THEN %(app)s::text ELSE app END,
    updated_at = %(now)s
WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s) AND status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s)
RETURNING *;

-- name: close_session
-- Never before the session's last activity or change: a write that committed first may have
-- read the clock later (the times then still follow the commit order). The same holds for the
-- end of a run (cancel_run, end_run) and of a step (close_open_steps).
UPDATE sessions
SET status = 'closed', closed_at = GREATEST(%(now)s, last_activity_at, updated_at),
    updated_at = GREATEST(%(now)s, last_activity_at, updated_at)
WHERE id = %(id)s AND status = 'active'
RETURNING *;

-- name: expire_session
UPDATE sessions SET status = 'expired', updated_at = %(now)s
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

-- name: forget_session_run
-- A run was deleted: one run fewer, and its usage no longer counts.
UPDATE sessions
SET deleted_runs = deleted_runs + 1,
    input_tokens = input_tokens - %(input_tokens)s,
    output_tokens = output_tokens - %(output_tokens)s,
    model_requests = model_requests - %(requests)s
WHERE id = %(id)s;

-- name: add_session_usage
UPDATE sessions
SET input_tokens = input_tokens + %(input_tokens)s,
    output_tokens = output_tokens + %(output_tokens)s,
    model_requests = model_requests + %(requests)s
WHERE id = %(id)s;

-- name: delete_session_events
DELETE FROM events WHERE session_id = %(id)s;
-- name: delete_session_memory
DELETE FROM memory WHERE session_id = %(id)s;
-- name: delete_session_steps
DELETE FROM steps WHERE session_id = %(id)s;
-- name: delete_session_messages
DELETE FROM messages WHERE session_id = %(id)s;
-- name: delete_session_runs
DELETE FROM runs WHERE session_id = %(id)s;
-- name: delete_session
DELETE FROM sessions WHERE id = %(id)s;

-- messages -------------------------------------------------------------------------------------

-- name: insert_message
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item)
VALUES (%(id)s, %(session_id)s, %(seq)s, %(role)s, %(content)s, %(run_id)s,
        %(metadata)s::jsonb, %(created_at)s, %(item)s::json);

-- The conversation, in the columns (and their order) rows.message_from_row reads: messages
-- above the session's cleared_seq (one index range, however much a clear removed) and not
-- popped, unless removed ones are asked for too (removed). The session row also scopes the
-- read to its owner: another owner's session reads as empty.
-- name: messages_forward
SELECT id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at
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
SELECT id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at
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

-- name: newest_message
SELECT id FROM messages
WHERE session_id = %(session_id)s AND seq > %(after_seq)s AND removed_at IS NULL
ORDER BY seq DESC LIMIT 1;

-- name: remove_message
UPDATE messages SET removed_at = GREATEST(%(now)s, created_at)
WHERE id = %(id)s AND removed_at IS NULL
RETURNING id, session_id, seq, role, content, run_id, metadata, created_at, item, removed_at;

-- name: remove_messages
UPDATE messages SET removed_at = GREATEST(%(now)s, created_at)
WHERE session_id = %(session_id)s AND seq > %(after_seq)s AND removed_at IS NULL;

-- name: set_cleared_seq
UPDATE sessions SET cleared_seq = %(seq)s WHERE id = %(id)s;

-- name: delete_run_messages
DELETE FROM messages WHERE run_id = %(run_id)s;

-- runs -----------------------------------------------------------------------------------------

-- name: run_by_idempotency_key
SELECT * FROM runs WHERE session_id = %(session_id)s AND idempotency_key = %(key)s;

-- name: unfinished_runs
SELECT * FROM runs
WHERE session_id = %(session_id)s AND status IN ('ready', 'running', 'waiting')
ORDER BY seq;

-- name: insert_run
INSERT INTO runs (id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at,
                  attempt, max_attempts, metadata, timeout_seconds, wait_timeout_seconds,
                  idempotency_key, not_before, traceparent)
VALUES (%(id)s, %(session_id)s, %(owner)s, %(seq)s, %(agent)s, %(goal)s, %(input)s::jsonb,
        'ready', %(created_at)s, %(updated_at)s, 1, %(max_attempts)s, %(metadata)s::jsonb,
        %(timeout_seconds)s, %(wait_timeout_seconds)s, %(idempotency_key)s, %(not_before)s,
        %(traceparent)s)
RETURNING *;

-- name: get_run
SELECT * FROM runs WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s);

-- The same without the assembled context (often the largest column), for status checks and lists.
-- name: get_run_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s);

-- name: runs_forward
SELECT * FROM runs
WHERE session_id = %(session_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
  AND seq > %(after_seq)s
ORDER BY seq LIMIT %(limit)s;

-- name: runs_backward
SELECT * FROM runs
WHERE session_id = %(session_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
  AND seq < %(before_seq)s
ORDER BY seq DESC LIMIT %(limit)s;

-- name: runs_forward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = %(session_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
  AND seq > %(after_seq)s
ORDER BY seq LIMIT %(limit)s;

-- name: runs_backward_without_context
SELECT id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at, started_at,
       ended_at, error, output, input_tokens, output_tokens, model_requests, attempt, max_attempts,
       metadata, timeout_seconds, wait_timeout_seconds, idempotency_key, waiting_for,
       NULL::jsonb AS context, worker_id, lease_expires_at, deadline_at, not_before, step_count,
       traceparent
FROM runs
WHERE session_id = %(session_id)s AND (%(status)s::text IS NULL OR status = %(status)s)
  AND seq < %(before_seq)s
ORDER BY seq DESC LIMIT %(limit)s;

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

-- name: claim_resumed_run
UPDATE runs
SET worker_id = %(worker_id)s, lease_expires_at = %(lease_expires_at)s, updated_at = %(now)s,
    deadline_at = CASE WHEN timeout_seconds IS NULL THEN NULL
                       ELSE %(now)s + (timeout_seconds * 1000000)::bigint END
WHERE id = (SELECT id FROM runs WHERE status = 'running' AND worker_id IS NULL
              AND (%(agents)s::jsonb IS NULL OR agent IN (SELECT jsonb_array_elements_text(%(agents)s::jsonb)))
            ORDER BY updated_at LIMIT 1
            FOR UPDATE SKIP LOCKED)
  AND status = 'running' AND worker_id IS NULL
RETURNING *;

-- name: claim_ready_run
-- %(agents)s (a JSON array, or NULL for any) keeps the runs of agents the worker lacks for others.
-- One statement: the oldest startable ready run nobody else is claiming right now. Should two
-- claims still race into one session, the one-active-run index refuses the second (retried).
-- A run never starts before the run before it in its session ended: a claim that read the clock
-- before that end committed (it waited for the lock meanwhile) starts at that end.
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
WHERE id = (
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
RETURNING *;

-- name: hold_run
-- A run its creator executes itself (a framework's runner): a new ready run, taken by that
-- worker at once, so no other worker can claim it.
UPDATE runs
SET status = 'running', worker_id = %(worker_id)s, lease_expires_at = %(lease_expires_at)s,
    started_at = COALESCE(started_at, %(now)s), updated_at = %(now)s
WHERE id = %(id)s AND status = 'ready'
RETURNING *;

-- name: hold_resumed_run
-- A resumed run nobody holds (it is running again), taken by its creator's worker at once.
UPDATE runs
SET worker_id = %(worker_id)s, lease_expires_at = %(lease_expires_at)s, updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND worker_id IS NULL
RETURNING *;

-- name: renew_lease
UPDATE runs SET lease_expires_at = %(lease_expires_at)s
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: update_held_run
UPDATE runs
SET output = CASE WHEN %(set_output)s THEN %(output)s::jsonb ELSE output END,
    context = CASE WHEN %(set_context)s THEN %(context)s::jsonb ELSE context END,
    updated_at = %(now)s
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: finish_run
UPDATE runs
SET status = %(status)s, ended_at = %(now)s, updated_at = %(now)s,
    output = CASE WHEN %(set_output)s THEN %(output)s::jsonb ELSE output END,
    error = %(error)s::jsonb, worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: suspend_run
UPDATE runs
SET status = 'waiting', waiting_for = %(waiting_for)s::jsonb, updated_at = %(now)s,
    worker_id = NULL, lease_expires_at = NULL,
    deadline_at = CASE WHEN wait_timeout_seconds IS NULL THEN NULL
                       ELSE %(now)s + (wait_timeout_seconds * 1000000)::bigint END
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: resume_run
UPDATE runs
SET status = 'running', waiting_for = NULL, updated_at = %(now)s,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL
WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s) AND status = 'waiting'
RETURNING *;

-- name: cancel_run
UPDATE runs
SET status = 'cancelled', ended_at = GREATEST(%(now)s, updated_at),
    updated_at = GREATEST(%(now)s, updated_at), error = %(error)s::jsonb,
    worker_id = NULL, lease_expires_at = NULL, deadline_at = NULL, waiting_for = NULL
WHERE id = %(id)s AND status IN ('ready', 'running', 'waiting')
RETURNING *;

-- name: release_run
UPDATE runs
SET status = 'ready', updated_at = %(now)s, worker_id = NULL, lease_expires_at = NULL,
    deadline_at = NULL
WHERE id = %(id)s AND status = 'running' AND worker_id = %(worker_id)s
RETURNING *;

-- name: requeue_run
UPDATE runs
SET status = 'ready', updated_at = %(now)s, attempt = attempt + 1, worker_id = NULL,
    lease_expires_at = NULL, deadline_at = NULL
WHERE id = %(id)s AND status = 'running'
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

-- name: add_run_usage
UPDATE runs
SET input_tokens = input_tokens + %(input_tokens)s,
    output_tokens = output_tokens + %(output_tokens)s,
    model_requests = model_requests + %(requests)s
WHERE id = %(id)s;

-- name: delete_run_events
DELETE FROM events WHERE run_id = %(run_id)s;
-- name: delete_run_memory
DELETE FROM memory WHERE scope = 'run' AND scope_id = %(run_id)s;
-- name: delete_run_steps
DELETE FROM steps WHERE run_id = %(run_id)s;
-- name: delete_run_promotions
DELETE FROM memory WHERE scope = 'session' AND source_run_id = %(run_id)s;
-- name: delete_run
DELETE FROM runs WHERE id = %(run_id)s;

-- steps ----------------------------------------------------------------------------------------

-- name: hold_run_for_step
-- The guard (the run is running and held by this worker). The run's row is locked, not
-- rewritten: a concurrent cancel or reap waits for this step, and the next step of the same run
-- for its seq.
SELECT session_id, owner, attempt
FROM runs
WHERE id = %(run_id)s AND status = 'running' AND worker_id = %(worker_id)s
FOR NO KEY UPDATE;

-- name: next_step_seq
-- A statement of its own, after hold_run_for_step: its snapshot is taken once the lock is held,
-- so it sees the step of the transaction that held the lock before (a subquery of the locking
-- statement would read the snapshot from before the wait, and two steps would share a seq).
SELECT COALESCE(MAX(seq), 0) + 1 AS step_count FROM steps WHERE run_id = %(run_id)s;

-- name: insert_step
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                   error, started_at, ended_at, input_tokens, output_tokens, model_requests,
                   attempt)
VALUES (%(id)s, %(run_id)s, %(session_id)s, %(seq)s, %(position)s, %(kind)s, %(name)s,
        %(status)s, %(input)s::jsonb, %(output)s::jsonb, %(error)s::jsonb, %(started_at)s,
        %(ended_at)s, %(input_tokens)s, %(output_tokens)s, %(requests)s, %(attempt)s);

-- name: run_owner
SELECT owner FROM runs WHERE id = %(id)s;

-- name: finish_step
UPDATE steps
SET status = %(status)s, output = %(output)s::jsonb, error = %(error)s::jsonb,
    ended_at = %(now)s, input_tokens = %(input_tokens)s, output_tokens = %(output_tokens)s,
    model_requests = %(requests)s
WHERE id = %(id)s AND status = 'running'
  AND EXISTS (SELECT 1 FROM runs
              WHERE runs.id = steps.run_id AND runs.status = 'running'
                AND runs.worker_id = %(worker_id)s)
RETURNING *;

-- name: get_step
SELECT * FROM steps WHERE id = %(id)s;

-- name: complete_waiting_step
UPDATE steps SET status = 'completed', output = %(output)s::jsonb, ended_at = %(now)s
WHERE id = %(id)s AND run_id = %(run_id)s AND status = 'running'
RETURNING *;

-- name: close_open_steps
-- Tool calls end in_doubt (their effect may have happened), the other steps failed.
UPDATE steps
SET status = CASE WHEN kind = 'tool_call' THEN 'in_doubt' ELSE 'failed' END,
    error = %(error)s::jsonb, ended_at = GREATEST(%(now)s, started_at)
WHERE run_id = %(run_id)s AND status = 'running'
RETURNING *;

-- name: steps_of_run
SELECT * FROM steps WHERE run_id = %(run_id)s ORDER BY seq;

-- name: tool_calls_of_session_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = %(session_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: tool_calls_of_session_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = %(session_id)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id DESC
LIMIT %(limit)s;

-- name: tool_calls_of_session_by_name_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = %(session_id)s AND name = %(tool)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: tool_calls_of_session_by_name_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND session_id = %(session_id)s AND name = %(tool)s
  AND (%(run_id)s::text IS NULL OR run_id = %(run_id)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id DESC
LIMIT %(limit)s;

-- name: tool_calls_of_run_forward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = %(run_id)s
  AND (%(tool)s::text IS NULL OR name = %(tool)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id
LIMIT %(limit)s;

-- name: tool_calls_of_run_backward
SELECT * FROM steps
WHERE kind = 'tool_call' AND run_id = %(run_id)s
  AND (%(tool)s::text IS NULL OR name = %(tool)s)
  AND (%(status)s::text IS NULL OR status = %(status)s)
  AND (%(since)s::bigint IS NULL OR started_at >= %(since)s)
  AND (%(until)s::bigint IS NULL OR started_at < %(until)s)
  AND id > %(after_id)s AND id < %(before_id)s
ORDER BY id DESC
LIMIT %(limit)s;

-- LangGraph-style session search --------------------------------------------------------------
-- What a session's runs are doing ("activity"): busy (a run running, or ready with none
-- waiting), waiting (a run waits for a person), error (its newest run failed or timed out),
-- idle. Filters, the sort (created_at, updated_at, activity_at, id or activity; ties by id in
-- the same direction) and the page all run here, so only the page's sessions are read.

-- name: search_sessions
SELECT s.* FROM sessions AS s
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

-- name: upsert_memory
-- A JSON null value arrives as SQL NULL: it is stored as the JSON 'null'.
INSERT INTO memory (scope, scope_id, namespace, key, value, session_id, source_run_id,
                    created_at, updated_at)
VALUES (%(scope)s, %(scope_id)s, %(namespace)s, %(key)s, COALESCE(%(value)s::jsonb, 'null'),
        %(session_id)s, %(source_run_id)s, %(now)s, %(now)s)
ON CONFLICT (scope, scope_id, namespace, key) DO UPDATE
SET value = excluded.value, source_run_id = excluded.source_run_id,
    updated_at = excluded.updated_at
RETURNING *;

-- name: get_memory
SELECT * FROM memory
WHERE scope = %(scope)s AND scope_id = %(scope_id)s AND namespace = %(namespace)s
  AND key = %(key)s;

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

-- name: delete_memory
DELETE FROM memory
WHERE scope = %(scope)s AND scope_id = %(scope_id)s AND namespace = %(namespace)s
  AND key = %(key)s
RETURNING session_id;

-- name: list_namespaces
SELECT DISTINCT namespace FROM memory
WHERE scope = 'user' AND scope_id = %(owner)s AND namespace <> ''
  AND (%(prefix)s = '' OR namespace = %(prefix)s
       OR starts_with(namespace, %(prefix)s || chr(31)))
ORDER BY namespace
LIMIT %(limit)s OFFSET %(offset)s;

-- api keys -------------------------------------------------------------------------------------

-- name: insert_api_key
INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at)
VALUES (%(id)s, %(owner)s, %(key_hash)s, %(prefix)s, %(name)s, %(created_at)s)
RETURNING *;

-- name: api_key_by_hash
SELECT * FROM api_keys WHERE key_hash = %(key_hash)s;

-- name: list_api_keys
SELECT * FROM api_keys WHERE (%(owner)s::text IS NULL OR owner = %(owner)s)
ORDER BY created_at, id;

-- name: revoke_api_key
UPDATE api_keys SET revoked_at = COALESCE(revoked_at, %(now)s) WHERE id = %(id)s RETURNING *;

-- ui sessions ----------------------------------------------------------------------------------

-- name: insert_ui_session
INSERT INTO ui_sessions (token_hash, key_id, owner, created_at, expires_at)
VALUES (%(token_hash)s, %(key_id)s, %(owner)s, %(created_at)s, %(expires_at)s);

-- name: delete_expired_ui_sessions
DELETE FROM ui_sessions WHERE expires_at <= %(now)s;

-- name: ui_session_owner
-- A session whose key was revoked is no session (revocation deletes them too).
SELECT s.owner FROM ui_sessions s JOIN api_keys k ON k.id = s.key_id
WHERE s.token_hash = %(token_hash)s AND s.expires_at > %(now)s AND k.revoked_at IS NULL;

-- name: delete_ui_session
DELETE FROM ui_sessions WHERE token_hash = %(token_hash)s;

-- name: delete_ui_sessions_of_key
DELETE FROM ui_sessions WHERE key_id = %(key_id)s;

-- db copy: every table whole, by key, in the same order on both backends ---------------------

-- name: copy_columns
-- The columns a table has in this database, in order: the copy refuses a column it would drop.
SELECT column_name AS name FROM information_schema.columns
WHERE table_schema = current_schema() AND table_name = %(table)s
ORDER BY ordinal_position;

-- name: copy_count_sessions
SELECT count(*) AS n FROM sessions;

-- name: copy_page_sessions
SELECT * FROM sessions WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_sessions
INSERT INTO sessions (id, owner, title, status, metadata, context, ttl_seconds, created_at,
                     updated_at, last_activity_at, closed_at, run_count, message_count,
                     input_tokens, output_tokens, model_requests, deleted_runs, external_key, app,
                     cleared_seq)
VALUES (%(id)s, %(owner)s, %(title)s, %(status)s, %(metadata)s::jsonb, %(context)s::jsonb,
        %(ttl_seconds)s, %(created_at)s, %(updated_at)s, %(last_activity_at)s, %(closed_at)s,
        %(run_count)s, %(message_count)s, %(input_tokens)s, %(output_tokens)s,
        %(model_requests)s, %(deleted_runs)s, %(external_key)s, %(app)s, %(cleared_seq)s);

-- name: copy_clear_sessions
DELETE FROM sessions;

-- name: copy_count_runs
SELECT count(*) AS n FROM runs;

-- name: copy_page_runs
SELECT * FROM runs WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_runs
INSERT INTO runs (id, session_id, owner, seq, agent, goal, input, status, created_at, updated_at,
                 started_at, ended_at, error, output, input_tokens, output_tokens,
                 model_requests, attempt, max_attempts, metadata, timeout_seconds,
                 wait_timeout_seconds, idempotency_key, waiting_for, context, worker_id,
                 lease_expires_at, deadline_at, not_before, step_count, traceparent)
VALUES (%(id)s, %(session_id)s, %(owner)s, %(seq)s, %(agent)s, %(goal)s, %(input)s::jsonb,
        %(status)s, %(created_at)s, %(updated_at)s, %(started_at)s, %(ended_at)s,
        %(error)s::jsonb, %(output)s::jsonb, %(input_tokens)s, %(output_tokens)s,
        %(model_requests)s, %(attempt)s, %(max_attempts)s, %(metadata)s::jsonb,
        %(timeout_seconds)s, %(wait_timeout_seconds)s, %(idempotency_key)s,
        %(waiting_for)s::jsonb, %(context)s::jsonb, %(worker_id)s, %(lease_expires_at)s,
        %(deadline_at)s, %(not_before)s, %(step_count)s, %(traceparent)s);

-- name: copy_clear_runs
DELETE FROM runs;

-- name: copy_count_steps
SELECT count(*) AS n FROM steps;

-- name: copy_page_steps
SELECT * FROM steps WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_steps
INSERT INTO steps (id, run_id, session_id, seq, position, kind, name, status, input, output,
                  error, started_at, ended_at, input_tokens, output_tokens, model_requests,
                  attempt)
VALUES (%(id)s, %(run_id)s, %(session_id)s, %(seq)s, %(position)s, %(kind)s, %(name)s,
        %(status)s, %(input)s::jsonb, %(output)s::jsonb, %(error)s::jsonb, %(started_at)s,
        %(ended_at)s, %(input_tokens)s, %(output_tokens)s, %(model_requests)s, %(attempt)s);

-- name: copy_clear_steps
DELETE FROM steps;

-- name: copy_count_messages
SELECT count(*) AS n FROM messages;

-- name: copy_page_messages
SELECT * FROM messages WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_messages
INSERT INTO messages (id, session_id, seq, role, content, run_id, metadata, created_at, item,
                      removed_at)
VALUES (%(id)s, %(session_id)s, %(seq)s, %(role)s, %(content)s, %(run_id)s, %(metadata)s::jsonb,
        %(created_at)s, %(item)s::json, %(removed_at)s);

-- name: copy_clear_messages
DELETE FROM messages;

-- name: copy_count_memory
SELECT count(*) AS n FROM memory;

-- name: copy_page_memory
SELECT * FROM memory
WHERE (scope, scope_id, namespace, key)
      > (%(after_scope)s, %(after_scope_id)s, %(after_namespace)s, %(after_key)s)
ORDER BY scope, scope_id, namespace, key LIMIT %(limit)s;

-- name: copy_insert_memory
INSERT INTO memory (scope, scope_id, namespace, key, value, session_id, source_run_id,
                   created_at, updated_at)
VALUES (%(scope)s, %(scope_id)s, %(namespace)s, %(key)s, %(value)s::jsonb, %(session_id)s,
        %(source_run_id)s, %(created_at)s, %(updated_at)s);

-- name: copy_clear_memory
DELETE FROM memory;

-- name: copy_count_events
SELECT count(*) AS n FROM events;

-- name: copy_page_events
SELECT * FROM events WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_events
INSERT INTO events (id, type, owner, session_id, run_id, data, created_at)
VALUES (%(id)s, %(type)s, %(owner)s, %(session_id)s, %(run_id)s, %(data)s::jsonb, %(created_at)s);

-- name: copy_clear_events
DELETE FROM events;

-- name: copy_count_api_keys
SELECT count(*) AS n FROM api_keys;

-- name: copy_page_api_keys
SELECT * FROM api_keys WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_api_keys
INSERT INTO api_keys (id, owner, key_hash, prefix, name, created_at, revoked_at)
VALUES (%(id)s, %(owner)s, %(key_hash)s, %(prefix)s, %(name)s, %(created_at)s, %(revoked_at)s);

-- name: copy_clear_api_keys
DELETE FROM api_keys;

-- name: copy_count_ui_sessions
SELECT count(*) AS n FROM ui_sessions;

-- name: copy_page_ui_sessions
SELECT * FROM ui_sessions WHERE token_hash > %(after_token_hash)s
ORDER BY token_hash LIMIT %(limit)s;

-- name: copy_insert_ui_sessions
INSERT INTO ui_sessions (token_hash, key_id, owner, created_at, expires_at)
VALUES (%(token_hash)s, %(key_id)s, %(owner)s, %(created_at)s, %(expires_at)s);

-- name: copy_clear_ui_sessions
DELETE FROM ui_sessions;

-- name: copy_bump_sequences
-- New events (and checkpoint threads) get ids after the copied ones.
SELECT setval(pg_get_serial_sequence('events', 'id'), COALESCE(MAX(id), 1), MAX(id) IS NOT NULL),
       (SELECT setval(pg_get_serial_sequence('checkpoint_threads', 'id'), COALESCE(MAX(id), 1),
                      MAX(id) IS NOT NULL)
        FROM checkpoint_threads)
FROM events;

-- name: count_unfinished_runs
-- Gauges: runs ready, running or waiting now, by status and agent (the runs_unfinished index).
SELECT status, agent, count(*) AS n FROM runs
WHERE status IN ('ready', 'running', 'waiting')
GROUP BY status, agent;

-- name: count_active_sessions
SELECT count(*) AS n FROM sessions
WHERE status = 'active'
  AND (ttl_seconds IS NULL OR last_activity_at + ttl_seconds * 1000000 > %(now)s);

-- routing --------------------------------------------------------------------------------------
-- A worker announces the agents it has until expires_at and renews that; runs whose agent no
-- live worker has are unroutable.

-- name: announce_worker
INSERT INTO workers (id, agents, started_at, seen_at, expires_at)
VALUES (%(id)s, %(agents)s::jsonb, %(now)s, %(now)s, %(expires_at)s)
ON CONFLICT (id) DO UPDATE
SET agents = excluded.agents, seen_at = excluded.seen_at, expires_at = excluded.expires_at;

-- name: drop_gone_workers
DELETE FROM workers WHERE expires_at <= %(now)s;

-- name: retire_worker
DELETE FROM workers WHERE id = %(id)s;

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

-- name: prunable_sessions
-- Closed before closed_before, or expired (persisted) with an expiry before expired_before.
SELECT id FROM sessions
WHERE id > %(after_id)s
  AND ((%(closed_before)s::bigint IS NOT NULL AND status = 'closed'
        AND closed_at < %(closed_before)s)
       OR (%(expired_before)s::bigint IS NOT NULL AND status = 'expired'
           AND ttl_seconds IS NOT NULL
           AND last_activity_at + ttl_seconds * 1000000 < %(expired_before)s))
ORDER BY id LIMIT %(limit)s;

-- name: owner_session_ids
SELECT id FROM sessions WHERE owner = %(owner)s ORDER BY id LIMIT %(limit)s;

-- name: erase_owner_memory
-- User memory (scope_id = the owner) and app memory (scope_id = owner + separator + app).
DELETE FROM memory
WHERE (scope = 'user' AND scope_id = %(owner)s)
   OR (scope = 'app' AND starts_with(scope_id, %(app_prefix)s));

-- name: erase_owner_events
DELETE FROM events WHERE owner = %(owner)s;

-- name: erase_owner_ui_sessions
DELETE FROM ui_sessions WHERE owner = %(owner)s;

-- name: erase_owner_api_keys
DELETE FROM api_keys WHERE owner = %(owner)s;

-- archives (one session with everything in it) ---------------------------------------------------

-- name: archive_session
SELECT * FROM sessions WHERE id = %(id)s AND (%(owner)s::text IS NULL OR owner = %(owner)s);

-- name: archive_runs
SELECT * FROM runs WHERE session_id = %(id)s ORDER BY seq;

-- name: archive_steps
SELECT * FROM steps WHERE session_id = %(id)s ORDER BY run_id, seq;

-- name: archive_messages
SELECT * FROM messages WHERE session_id = %(id)s ORDER BY seq;

-- name: archive_memory
SELECT * FROM memory WHERE session_id = %(id)s ORDER BY scope, scope_id, namespace, key;

-- name: archive_events
SELECT * FROM events WHERE session_id = %(id)s ORDER BY id;
-- checkpoints of graphs (tether.integrations.langgraph) ----------------------------------------
-- A session's checkpoint rows carry its thread number (checkpoint_threads), made on its first.

-- name: ensure_checkpoint_thread
INSERT INTO checkpoint_threads (session_id) VALUES (%(session_id)s)
ON CONFLICT (session_id) DO NOTHING;

-- name: upsert_checkpoint
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type,
                         checkpoint, metadata_type, metadata, channels, created_at)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s),
        %(checkpoint_ns)s, %(checkpoint_id)s, %(parent_id)s, %(run_id)s, %(type)s, %(checkpoint)s,
        %(metadata_type)s, %(metadata)s, %(channels)s::jsonb, %(created_at)s)
ON CONFLICT (thread, checkpoint_ns, checkpoint_id) DO UPDATE
SET parent_id = excluded.parent_id, run_id = excluded.run_id, type = excluded.type,
    checkpoint = excluded.checkpoint, metadata_type = excluded.metadata_type,
    metadata = excluded.metadata, channels = excluded.channels;

-- name: upsert_checkpoint_blob
INSERT INTO checkpoint_blobs (thread, checkpoint_ns, channel, version, type, value)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s),
        %(checkpoint_ns)s, %(channel)s, %(version)s, %(type)s, %(value)s)
ON CONFLICT (thread, checkpoint_ns, channel, version) DO UPDATE
SET type = excluded.type, value = excluded.value;

-- name: get_checkpoint_blob
SELECT type, value FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s)
  AND checkpoint_ns = %(checkpoint_ns)s AND channel = %(channel)s AND version = %(version)s;

-- A write of a task is kept as first written, unless it is one of the special writes (an error,
-- an interrupt: idx < 0), which the newest replaces.
-- name: insert_checkpoint_write
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel,
                               type, value, task_path)
VALUES ((SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s),
        %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s, %(idx)s, %(channel)s, %(type)s, %(value)s, %(task_path)s)
ON CONFLICT (thread, checkpoint_ns, checkpoint_id, task_id, idx) DO UPDATE
SET channel = excluded.channel, type = excluded.type, value = excluded.value,
    task_path = excluded.task_path
WHERE excluded.idx < 0;

-- name: checkpoint_writes
SELECT task_id, idx, channel, type, value, task_path FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s)
  AND checkpoint_ns = %(checkpoint_ns)s AND checkpoint_id = %(checkpoint_id)s
ORDER BY task_path, task_id, idx;

-- Checkpoints newest first: of one session (or every session of the owner), one namespace (or
-- all), before a checkpoint id (or all), one id (or all).
-- name: list_checkpoints
SELECT s.external_key, t.session_id, c.checkpoint_ns, c.checkpoint_id, c.parent_id, c.type,
       c.checkpoint, c.metadata_type, c.metadata, c.channels
FROM checkpoints c
JOIN checkpoint_threads t ON t.id = c.thread
JOIN sessions s ON s.id = t.session_id
WHERE s.owner = %(owner)s AND (%(session_id)s::text IS NULL OR t.session_id = %(session_id)s)
  AND (%(checkpoint_ns)s::text IS NULL OR c.checkpoint_ns = %(checkpoint_ns)s)
  AND (%(checkpoint_id)s::text IS NULL OR c.checkpoint_id = %(checkpoint_id)s)
  AND (%(before_id)s::text IS NULL OR c.checkpoint_id < %(before_id)s)
ORDER BY c.checkpoint_id DESC LIMIT %(limit)s;

-- name: delete_run_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE (thread, checkpoint_ns, checkpoint_id) IN (
    SELECT c.thread, c.checkpoint_ns, c.checkpoint_id
    FROM checkpoints c
    JOIN checkpoint_threads t ON t.id = c.thread
    JOIN sessions s ON s.id = t.session_id
    WHERE c.run_id = %(run_id)s AND s.owner = %(owner)s);

-- name: delete_run_checkpoints
DELETE FROM checkpoints
WHERE run_id = %(run_id)s AND thread IN (
    SELECT t.id FROM checkpoint_threads t JOIN sessions s ON s.id = t.session_id
    WHERE s.owner = %(owner)s);

-- Every checkpoint of a session but the newest of each namespace (prune, keep_latest).
-- name: delete_older_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s) AND checkpoint_id < (
    SELECT max(c.checkpoint_id) FROM checkpoints c
    WHERE c.thread = checkpoint_writes.thread
      AND c.checkpoint_ns = checkpoint_writes.checkpoint_ns);

-- name: delete_older_checkpoints
DELETE FROM checkpoints
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s) AND checkpoint_id < (
    SELECT max(c.checkpoint_id) FROM checkpoints c
    WHERE c.thread = checkpoints.thread AND c.checkpoint_ns = checkpoints.checkpoint_ns);

-- Blobs no checkpoint of the session names any more.
-- name: delete_unused_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s) AND NOT EXISTS (
    SELECT 1 FROM checkpoints c, jsonb_each_text(c.channels) AS v
    WHERE c.thread = checkpoint_blobs.thread
      AND c.checkpoint_ns = checkpoint_blobs.checkpoint_ns
      AND v.key = checkpoint_blobs.channel AND v.value = checkpoint_blobs.version);

-- name: delete_session_checkpoints
DELETE FROM checkpoints
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(id)s);
-- name: delete_session_checkpoint_blobs
DELETE FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(id)s);
-- name: delete_session_checkpoint_writes
DELETE FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(id)s);
-- name: delete_session_checkpoint_thread
DELETE FROM checkpoint_threads WHERE session_id = %(id)s;

-- name: copy_session_checkpoints
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type,
                         checkpoint, metadata_type, metadata, channels, created_at)
SELECT (SELECT id FROM checkpoint_threads WHERE session_id = %(target)s), checkpoint_ns,
       checkpoint_id, parent_id, run_id, type, checkpoint, metadata_type, metadata, channels,
       created_at
FROM checkpoints WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(source)s)
ON CONFLICT DO NOTHING;

-- name: copy_session_checkpoint_writes
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel,
                               type, value, task_path)
SELECT (SELECT id FROM checkpoint_threads WHERE session_id = %(target)s), checkpoint_ns,
       checkpoint_id, task_id, idx, channel, type, value, task_path
FROM checkpoint_writes
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(source)s)
ON CONFLICT DO NOTHING;

-- Blobs of a session, to copy (the message ranges among them are rebased on the copy's
-- conversation).
-- name: session_checkpoint_blobs
SELECT checkpoint_ns, channel, version, type, value FROM checkpoint_blobs
WHERE thread = (SELECT id FROM checkpoint_threads WHERE session_id = %(session_id)s);

-- db copy: checkpoints of graphs -------------------------------------------------------------

-- name: copy_count_checkpoint_threads
SELECT count(*) AS n FROM checkpoint_threads;

-- name: copy_page_checkpoint_threads
SELECT * FROM checkpoint_threads
WHERE id > %(after_id)s
ORDER BY id LIMIT %(limit)s;

-- name: copy_insert_checkpoint_threads
INSERT INTO checkpoint_threads (id, session_id)
VALUES (%(id)s, %(session_id)s);

-- name: copy_clear_checkpoint_threads
DELETE FROM checkpoint_threads;

-- name: copy_count_checkpoints
SELECT count(*) AS n FROM checkpoints;

-- name: copy_page_checkpoints
SELECT * FROM checkpoints
WHERE (thread, checkpoint_ns, checkpoint_id)
      > (%(after_thread)s, %(after_checkpoint_ns)s, %(after_checkpoint_id)s)
ORDER BY thread, checkpoint_ns, checkpoint_id LIMIT %(limit)s;

-- name: copy_insert_checkpoints
INSERT INTO checkpoints (thread, checkpoint_ns, checkpoint_id, parent_id, run_id, type, checkpoint, metadata_type, metadata, channels, created_at)
VALUES (%(thread)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(parent_id)s, %(run_id)s, %(type)s, %(checkpoint)s, %(metadata_type)s, %(metadata)s, %(channels)s::jsonb, %(created_at)s);

-- name: copy_clear_checkpoints
DELETE FROM checkpoints;

-- name: copy_count_checkpoint_blobs
SELECT count(*) AS n FROM checkpoint_blobs;

-- name: copy_page_checkpoint_blobs
SELECT * FROM checkpoint_blobs
WHERE (thread, checkpoint_ns, channel, version)
      > (%(after_thread)s, %(after_checkpoint_ns)s, %(after_channel)s, %(after_version)s)
ORDER BY thread, checkpoint_ns, channel, version LIMIT %(limit)s;

-- name: copy_insert_checkpoint_blobs
INSERT INTO checkpoint_blobs (thread, checkpoint_ns, channel, version, type, value)
VALUES (%(thread)s, %(checkpoint_ns)s, %(channel)s, %(version)s, %(type)s, %(value)s);

-- name: copy_clear_checkpoint_blobs
DELETE FROM checkpoint_blobs;

-- name: copy_count_checkpoint_writes
SELECT count(*) AS n FROM checkpoint_writes;

-- name: copy_page_checkpoint_writes
SELECT * FROM checkpoint_writes
WHERE (thread, checkpoint_ns, checkpoint_id, task_id, idx)
      > (%(after_thread)s, %(after_checkpoint_ns)s, %(after_checkpoint_id)s, %(after_task_id)s, %(after_idx)s)
ORDER BY thread, checkpoint_ns, checkpoint_id, task_id, idx LIMIT %(limit)s;

-- name: copy_insert_checkpoint_writes
INSERT INTO checkpoint_writes (thread, checkpoint_ns, checkpoint_id, task_id, idx, channel, type, value, task_path)
VALUES (%(thread)s, %(checkpoint_ns)s, %(checkpoint_id)s, %(task_id)s, %(idx)s, %(channel)s, %(type)s, %(value)s, %(task_path)s);

-- name: copy_clear_checkpoint_writes
DELETE FROM checkpoint_writes;

-- name: stats_runs_by_hour
-- Overview: the owner's runs created in [since, until) by hour (microseconds / %(hour)s) and
-- status (the runs_by_owner index).
SELECT created_at / %(hour)s AS slot, status, count(*) AS n FROM runs
WHERE owner = %(owner)s AND created_at >= %(since)s AND created_at < %(until)s
GROUP BY 1, 2
ORDER BY slot, status;

-- name: stats_run_durations
-- Overview: nearest-rank p50 and p95 of the durations of the finished runs, by agent.
WITH d AS (
    SELECT agent, ended_at - started_at AS us,
           row_number() OVER (PARTITION BY agent ORDER BY ended_at - started_at) AS k,
           count(*) OVER (PARTITION BY agent) AS n
    FROM runs
    WHERE owner = %(owner)s AND created_at >= %(since)s AND created_at < %(until)s
      AND started_at IS NOT NULL AND ended_at IS NOT NULL
)
SELECT agent, n,
       max(CASE WHEN k = (50 * n + 99) / 100 THEN us END) AS p50,
       max(CASE WHEN k = (95 * n + 99) / 100 THEN us END) AS p95
FROM d GROUP BY agent, n ORDER BY agent;

-- name: stats_tokens_by_day
-- Overview: tokens of the model calls of those runs, by UTC day (microseconds / %(day)s) and model.
SELECT s.started_at / %(day)s AS slot, s.name AS model,
       sum(s.input_tokens) AS input_tokens, sum(s.output_tokens) AS output_tokens
FROM runs AS r JOIN steps AS s ON s.run_id = r.id
WHERE r.owner = %(owner)s AND r.created_at >= %(since)s AND r.created_at < %(until)s
  AND s.kind = 'model_call'
GROUP BY 1, 2
ORDER BY slot, model;

-- name: stats_failing_tools
-- Overview: the tools of those runs whose calls failed (or are in doubt) most.
SELECT s.name AS tool, count(*) AS calls,
       sum(CASE WHEN s.status = 'failed' OR s.status = 'in_doubt' THEN 1 ELSE 0 END) AS failed
FROM runs AS r JOIN steps AS s ON s.run_id = r.id
WHERE r.owner = %(owner)s AND r.created_at >= %(since)s AND r.created_at < %(until)s
  AND s.kind = 'tool_call'
GROUP BY s.name
HAVING sum(CASE WHEN s.status = 'failed' OR s.status = 'in_doubt' THEN 1 ELSE 0 END) > 0
ORDER BY failed DESC, tool
LIMIT %(limit)s;

-- name: append_events
-- A transaction's events, appended right before COMMIT in one statement: first (the one-time
-- filters run before any row is made, so before an event id is drawn) the advisory locks of
-- their sessions, keys sorted so no two transactions wait in a cycle, and the transaction's
-- notifications; then the events, in order. Arrays go in binary (%(x)b): no per-element
-- quoting of the JSON on the way.
INSERT INTO events (type, owner, session_id, run_id, data, created_at)
SELECT e.type, e.owner, e.session_id, e.run_id, e.data::jsonb, e.created_at
FROM unnest(%(type)b::text[], %(owner)b::text[], %(session_id)b::text[], %(run_id)b::text[],
            %(data)b::text[], %(created_at)b::bigint[])
     WITH ORDINALITY AS e(type, owner, session_id, run_id, data, created_at, n)
WHERE (SELECT count(pg_advisory_xact_lock(k)) FROM unnest(%(keys)b::bigint[]) AS k) >= 0
  AND (SELECT count(pg_notify('tether', p)) FROM unnest(%(payloads)b::text[]) AS p) >= 0
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
