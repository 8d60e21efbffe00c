-- The sidecar's calls: side tasks (summaries, session state, re-ranking,
-- consolidation) made for a turn, with the provider's usage and cost, or why they failed.
--
-- Kept apart from `turns`: a turn's own columns calibrate the budget (its prompt tokens against
-- its estimate), which a side task's tokens must not disturb, and a turn may make several side
-- tasks. The run's totals and its project's spending add these rows to its turns'. `turn` is the
-- turn's number in the run (the run's cascade removes the rows; no index on turns is needed).
CREATE TABLE sidecar_calls (
    id INTEGER PRIMARY KEY NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    turn INTEGER NOT NULL CHECK (turn >= 0),
    task TEXT NOT NULL,
    model TEXT NOT NULL,
    -- ok, failed (the provider or the model's alias), timeout, unparseable (the parser refused it)
    outcome TEXT NOT NULL CHECK (outcome = 'ok' OR outcome = 'failed' OR outcome = 'timeout' OR outcome = 'unparseable'),
    error TEXT,
    prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost DOUBLE NOT NULL DEFAULT 0 CHECK (cost >= 0),
    elapsed_ms BIGINT NOT NULL CHECK (elapsed_ms >= 0),
    created_at BIGINT NOT NULL
);
CREATE INDEX sidecar_calls_run_turn ON sidecar_calls (run_id, turn);
