-- tether schema, version 14: PostgreSQL's server makes a run's events inside the statement
-- that changes the run (functions of its own); SQLite's schema is unchanged.
SELECT 1;
