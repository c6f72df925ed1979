-- tether schema, version 5: a run keeps the W3C trace context (traceparent) of the span that
-- created it, so that every execution of the run (resumed after waiting, retried after a
-- crash) continues that trace.

ALTER TABLE runs ADD COLUMN traceparent text;
