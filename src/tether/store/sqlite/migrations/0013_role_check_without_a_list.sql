-- tether schema, version 13: the messages table checks a role as
-- role = 'user' OR role = 'assistant' OR role = 'system' OR role = 'tool', the same constraint
-- as the role IN (…) it had, which SQLite evaluated by building its list anew for every row a
-- batch append's multi-row INSERT writes (0.45 µs a message of a batch; the OR chain costs
-- almost nothing).
-- SQLite changes a CHECK only by rebuilding the table (copying every message), except when
-- every existing row satisfies the new constraint, as here (it is the old one): then its
-- documented procedure (lang_altertable.html, "Making Other Kinds Of Table Schema Changes")
-- edits the table's text in sqlite_schema in place, inside this migration's transaction. No
-- page of the table is touched. writable_schema = RESET ends the editing and reloads this
-- connection's schema from the new text (a text SQLite could not parse fails the next
-- statement, and the migration rolls back); the table created and dropped after it moves the
-- schema cookie on (the procedure's PRAGMA schema_version = old + 1, which a migration cannot
-- compute), so that every other connection to the file reloads the schema too.
-- Optional: SQLite in defensive mode (some system builds) refuses edits of sqlite_schema; such
-- a file keeps its IN (…) check, which means the same.
-- tether: optional

PRAGMA writable_schema = ON;
UPDATE sqlite_schema
SET sql = replace(
    sql,
    'CHECK (role IN (''user'', ''assistant'', ''system'', ''tool''))',
    'CHECK (role = ''user'' OR role = ''assistant'' OR role = ''system'' OR role = ''tool'')'
)
WHERE type = 'table' AND name = 'messages';
PRAGMA writable_schema = RESET;
CREATE TABLE schema_cookie_moves_on (x);
DROP TABLE schema_cookie_moves_on;
