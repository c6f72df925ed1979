-- tether schema, version 13: SQLite's messages table checks a role without an IN list (built
-- anew for every row of a batch there). PostgreSQL's role IN (…) costs nothing measurable
-- (see docs/benchmarks.md): its schema is unchanged.
SELECT 1;
