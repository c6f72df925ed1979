-- tether schema, version 15: a message.added event may store its message by reference. Its
-- data is then {"message_seq": N}, the seq of its message in its session (written only for a
-- message whose time is at or after 1970, which the expression below renders exactly); every
-- read of events goes through events_read, which gives such an event the data it stood for:
-- {"message": {...}} with the keys, order and values of the message as it was appended (its
-- removed_at null, as it was then). The message outlives its event: every path deleting a
-- message deletes its event in the same transaction (a session's, a run's, an owner's, a
-- wipe). Events stored with a full copy (before this version, imported, copied) read as
-- they are.
CREATE VIEW events_read (id, type, owner, session_id, run_id, data, created_at) AS
SELECT e.id, e.type, e.owner, e.session_id, e.run_id,
       CASE WHEN m.id IS NULL THEN e.data
            ELSE json_object('message', json_object(
                'id', m.id,
                'session_id', m.session_id,
                'seq', m.seq,
                'role', m.role,
                'content', m.content,
                'created_at',
                    strftime('%Y-%m-%dT%H:%M:%S', m.created_at / 1000000, 'unixepoch')
                    || CASE WHEN m.created_at % 1000000 = 0 THEN ''
                            ELSE printf('.%06d', m.created_at % 1000000) END
                    || 'Z',
                'run_id', m.run_id,
                'metadata', json(m.metadata),
                'item', json(m.item),
                'removed_at', NULL))
       END,
       e.created_at
FROM events AS e
LEFT JOIN messages AS m
  ON e.type = 'message.added' AND substr(e.data, 1, 15) = '{"message_seq":'
 AND m.session_id = e.session_id AND m.seq = CAST(substr(e.data, 16) AS INTEGER)
 AND e.data = '{"message_seq":' || m.seq || '}';
