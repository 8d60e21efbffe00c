ALTER TABLE run_views
    DROP CONSTRAINT run_views_state_check,
    ADD CONSTRAINT run_views_state_check CHECK (
        state IN ('proposed', 'streaming', 'resolved', 'failed', 'cancelled')
    ),
    DROP CONSTRAINT run_views_visibility_check,
    ADD CONSTRAINT run_views_visibility_check CHECK (
        visibility IN ('visible', 'summarized', 'archived')
    );
