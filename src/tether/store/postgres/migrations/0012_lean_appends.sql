-- tether schema, version 12: an append rewrites fewer pages. The change is SQLite's (its
-- session activity and expiry indexes keyed by the second); PostgreSQL's schema is unchanged.
SELECT 1;
