-- The CHECKs on run_views.state and run_views.visibility were `IN (...)` lists, for which
-- SQLite builds and drops a temporary table on every statement that writes a view: four per
-- view upsert, the hottest write there is. The same constraints as comparisons cost nothing
-- of the kind. SQLite cannot alter a CHECK, so its migration rebuilds the table; PostgreSQL
-- replaces the two constraints in place, which keeps the schema (the constraints' text
-- included) the same as SQLite's at this version.
ALTER TABLE run_views
    DROP CONSTRAINT run_views_state_check,
    ADD CONSTRAINT run_views_state_check CHECK (
        state = 'proposed' OR state = 'streaming' OR state = 'resolved'
        OR state = 'failed' OR state = 'cancelled'
    ),
    DROP CONSTRAINT run_views_visibility_check,
    ADD CONSTRAINT run_views_visibility_check CHECK (
        visibility = 'visible' OR visibility = 'summarized' OR visibility = 'archived'
    );
