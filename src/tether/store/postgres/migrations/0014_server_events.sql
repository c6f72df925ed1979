-- tether schema, version 14: a run's events made by the server, inside the statement that
-- changes the run (a claim, a finish), so they cost the worker no statement of their own.
-- * tether_iso(us): a time (epoch microseconds) as clock.to_iso writes it.
-- * tether_run_summary(r): a run as its events carry it, exactly as RunSummary.data() writes
--   it (no input, metadata or context; fields without a value left out; usage only if any).
-- * tether_lock_key(name): the advisory-lock key of a session's (or an owner's) events, which
--   every writer takes before its events get their ids (append_events, tether_run_event): one
--   definition, on the server.
-- * tether_payload(source, topics): a notification's payload as listener.notify_payloads
--   writes it (for the few topics of one run's event).
-- * tether_run_event(type, r, at, source): append a run event as append_events would: the
--   session's lock, then the notification (the topics SqlBase._encoded_events publishes), then
--   the event, its id drawn under the lock.

-- tether_iso and tether_lock_key are single expressions, which PostgreSQL inlines into the
-- statement calling them; the others are PL/pgSQL, whose plans each connection caches (a SQL
-- function it cannot inline is planned again on every call).
CREATE FUNCTION tether_iso(us bigint) RETURNS text
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT to_char(to_timestamp(((us - ((us % 1000000) + 1000000) % 1000000) / 1000000)
                                ::double precision) AT TIME ZONE 'UTC',
                   'YYYY-MM-DD"T"HH24:MI:SS')
           || CASE WHEN us % 1000000 = 0 THEN ''
                   ELSE '.' || lpad((((us % 1000000) + 1000000) % 1000000)::text, 6, '0') END
           || 'Z'
$$;

CREATE FUNCTION tether_run_summary(r runs) RETURNS jsonb
LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RETURN (SELECT jsonb_object_agg(f.key, f.value)
    FROM jsonb_each(jsonb_build_object(
        'id', r.id, 'session_id', r.session_id, 'seq', r.seq, 'agent', r.agent,
        'goal', r.goal, 'status', r.status, 'attempt', r.attempt,
        'created_at', tether_iso(r.created_at), 'started_at', tether_iso(r.started_at),
        'ended_at', tether_iso(r.ended_at), 'worker_id', r.worker_id,
        'error', CASE WHEN jsonb_typeof(r.error) = 'object' THEN jsonb_build_object(
                     'type', r.error -> 'type', 'message', r.error -> 'message',
                     'step_id', r.error -> 'step_id') END,
        'output', r.output,
        'usage', CASE WHEN r.input_tokens <> 0 OR r.output_tokens <> 0 OR r.model_requests <> 0
                      THEN jsonb_build_object(
                          'input_tokens', r.input_tokens, 'output_tokens', r.output_tokens,
                          'requests', r.model_requests,
                          'total_tokens', r.input_tokens + r.output_tokens) END,
        'waiting_for', r.waiting_for)) AS f
    WHERE jsonb_typeof(f.value) <> 'null');
END
$$;

CREATE FUNCTION tether_lock_key(name text) RETURNS bigint
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT hashtextextended(name, 0)
$$;

CREATE FUNCTION tether_payload(source text, topics text[]) RETURNS text
LANGUAGE plpgsql IMMUTABLE STRICT PARALLEL SAFE AS $$
BEGIN
    RETURN '{"s": ' || to_json(source)::text || ', "t": ['
           || (SELECT string_agg(to_json(t.topic)::text, ', ' ORDER BY t.n)
               FROM unnest(topics) WITH ORDINALITY AS t(topic, n))
           || ']}';
END
$$;

CREATE FUNCTION tether_run_event(type text, r runs, at bigint, source text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    PERFORM pg_advisory_xact_lock(tether_lock_key(r.session_id));
    PERFORM pg_notify('tether', tether_payload(source,
        ARRAY['owner:' || r.owner, 'session:' || r.session_id, 'run:' || r.id,
              'run-status:' || r.id]
        || CASE WHEN type = 'run.started' THEN '{}'::text[] ELSE ARRAY['runs'] END));
    INSERT INTO events (type, owner, session_id, run_id, data, created_at)
    VALUES (type, r.owner, r.session_id, r.id, jsonb_build_object('run', tether_run_summary(r)),
            at);
END
$$;
