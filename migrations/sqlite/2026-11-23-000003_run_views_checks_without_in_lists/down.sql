CREATE TABLE run_views_rebuilt (
    id INTEGER PRIMARY KEY NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    entry_id INTEGER NOT NULL REFERENCES entries (id) ON DELETE CASCADE,
    loop_id INTEGER REFERENCES loops (id) ON DELETE SET NULL,
    turn INTEGER NOT NULL DEFAULT 0 CHECK (turn >= 0),
    state TEXT NOT NULL DEFAULT 'resolved' CHECK (
        state IN ('proposed', 'streaming', 'resolved', 'failed', 'cancelled')
    ),
    outcome TEXT,
    visibility TEXT NOT NULL DEFAULT 'visible' CHECK (
        visibility IN ('visible', 'summarized', 'archived')
    ),
    write_count INTEGER NOT NULL DEFAULT 1 CHECK (write_count >= 1),
    rev INTEGER NOT NULL DEFAULT 0 CHECK (rev >= 0),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (run_id, entry_id)
);
INSERT INTO run_views_rebuilt
    (id, run_id, entry_id, loop_id, turn, state, outcome, visibility, write_count, rev,
     created_at, updated_at)
SELECT id, run_id, entry_id, loop_id, turn, state, outcome, visibility, write_count, rev,
       created_at, updated_at
FROM run_views;
DROP TABLE run_views;
ALTER TABLE run_views_rebuilt RENAME TO run_views;
CREATE INDEX run_views_run_rev ON run_views (run_id, rev);
