-- The whole store: projects > runs > loops > turns, entries with per-run views,
-- the scheme registry, file constraints, pushed notifications and the RPC log.
-- Timestamps are integer milliseconds since the Unix epoch, passed in by the
-- caller (the domain has no clock of its own).

CREATE TABLE projects (
    id INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE CHECK (length(name) BETWEEN 1 AND 256),
    project_root TEXT NOT NULL,
    config_path TEXT,
    created_at BIGINT NOT NULL
);

CREATE TABLE models (
    id INTEGER PRIMARY KEY NOT NULL,
    alias TEXT NOT NULL UNIQUE CHECK (length(alias) BETWEEN 1 AND 128),
    actual TEXT NOT NULL CHECK (length(actual) >= 1),
    context_length INTEGER CHECK (context_length IS NULL OR context_length > 0),
    fallback TEXT,
    created_at BIGINT NOT NULL
);

CREATE TABLE runs (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    parent_run_id INTEGER REFERENCES runs (id) ON DELETE SET NULL,
    alias TEXT NOT NULL CHECK (
        length(alias) BETWEEN 1 AND 128 AND alias NOT GLOB '*[^A-Za-z0-9_]*'
    ),
    model TEXT NOT NULL,
    status INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    temperature DOUBLE CHECK (temperature IS NULL OR (temperature >= 0 AND temperature <= 2)),
    persona TEXT,
    context_limit INTEGER CHECK (context_limit IS NULL OR context_limit >= 1024),
    -- loop flags every new loop starts with (noRepo, noInteraction, noWeb, noProposals)
    flags TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(flags)),
    next_turn INTEGER NOT NULL DEFAULT 1 CHECK (next_turn >= 1),
    next_loop INTEGER NOT NULL DEFAULT 1 CHECK (next_loop >= 1),
    -- next notification sequence number (notifications.seq) for this run
    next_seq INTEGER NOT NULL DEFAULT 1 CHECK (next_seq >= 1),
    -- run_views.rev counter: every view write takes the next value, so the
    -- incremental run/state push can select "changed since the last push"
    next_rev INTEGER NOT NULL DEFAULT 1 CHECK (next_rev >= 1),
    pushed_rev INTEGER NOT NULL DEFAULT 0 CHECK (pushed_rev >= 0),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (project_id, alias)
);

-- Run status is an HTTP code; this is the run-status transition table,
-- kept equal to `RunStatus::may_become` in core (a test checks every pair).
CREATE TRIGGER runs_status_transition
BEFORE UPDATE OF status ON runs
WHEN NEW.status <> OLD.status AND NOT (
    (OLD.status = 100 AND NEW.status IN (102, 499))
    OR (OLD.status = 102 AND NEW.status IN (200, 202, 413, 499, 500, 508))
    OR (OLD.status = 202 AND NEW.status IN (102, 499, 500))
    OR (OLD.status IN (200, 413, 499, 500, 508) AND NEW.status IN (100, 102))
)
BEGIN
    SELECT RAISE(ABORT, 'invalid run state transition');
END;

CREATE TABLE loops (
    id INTEGER PRIMARY KEY NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    mode TEXT NOT NULL CHECK (mode IN ('ask', 'act')),
    model TEXT NOT NULL,
    prompt TEXT NOT NULL DEFAULT '',
    status INTEGER NOT NULL DEFAULT 100 CHECK (status BETWEEN 100 AND 599),
    config TEXT NOT NULL DEFAULT '{}' CHECK (json_valid(config)),
    result TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (run_id, sequence)
);
-- The durable FIFO allows at most one active loop per run.
CREATE UNIQUE INDEX loops_one_active_per_run ON loops (run_id) WHERE status = 102;
CREATE INDEX loops_queue ON loops (run_id, status, sequence);

CREATE TABLE turns (
    id INTEGER PRIMARY KEY NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    loop_id INTEGER NOT NULL REFERENCES loops (id) ON DELETE CASCADE,
    sequence INTEGER NOT NULL CHECK (sequence >= 1),
    -- 102 while the turn runs, 200 once its reply was recorded, 500 failed
    status INTEGER NOT NULL DEFAULT 102 CHECK (status BETWEEN 100 AND 599),
    context_tokens INTEGER NOT NULL DEFAULT 0 CHECK (context_tokens >= 0),
    prompt_tokens INTEGER NOT NULL DEFAULT 0 CHECK (prompt_tokens >= 0),
    cached_tokens INTEGER NOT NULL DEFAULT 0 CHECK (cached_tokens >= 0),
    completion_tokens INTEGER NOT NULL DEFAULT 0 CHECK (completion_tokens >= 0),
    reasoning_tokens INTEGER NOT NULL DEFAULT 0 CHECK (reasoning_tokens >= 0),
    total_tokens INTEGER NOT NULL DEFAULT 0 CHECK (total_tokens >= 0),
    cost DOUBLE NOT NULL DEFAULT 0 CHECK (cost >= 0),
    reasoning_content TEXT,
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (run_id, sequence)
);

CREATE TABLE schemes (
    name TEXT PRIMARY KEY NOT NULL,
    model_visible BOOLEAN NOT NULL DEFAULT 1,
    category TEXT NOT NULL CHECK (category IN ('data', 'logging', 'unknown', 'prompt', 'audit')),
    default_scope TEXT NOT NULL DEFAULT 'run' CHECK (default_scope IN ('run', 'project', 'global')),
    writable_by TEXT NOT NULL DEFAULT '["model","plugin"]' CHECK (json_valid(writable_by))
);

CREATE TABLE file_constraints (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id INTEGER NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    pattern TEXT NOT NULL CHECK (length(pattern) >= 1),
    visibility TEXT NOT NULL CHECK (visibility IN ('active', 'readonly', 'ignore')),
    created_at BIGINT NOT NULL,
    UNIQUE (project_id, pattern)
);

CREATE TABLE entries (
    id INTEGER PRIMARY KEY NOT NULL,
    scope TEXT NOT NULL CHECK (
        scope = 'global' OR scope GLOB 'project:[0-9]*' OR scope GLOB 'run:[0-9]*'
    ),
    path TEXT NOT NULL CHECK (length(path) BETWEEN 1 AND 2048),
    -- filled by the store from the path; NULL for bare project file paths
    scheme TEXT,
    body TEXT NOT NULL DEFAULT '',
    attributes TEXT NOT NULL DEFAULT '{}' CHECK (
        json_valid(attributes) AND json_type(attributes) = 'object'
    ),
    hash TEXT NOT NULL,
    tokens INTEGER NOT NULL DEFAULT 0 CHECK (tokens >= 0),
    created_at BIGINT NOT NULL,
    updated_at BIGINT NOT NULL,
    UNIQUE (scope, path)
);
CREATE INDEX entries_scope_scheme ON entries (scope, scheme);

CREATE TABLE run_views (
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
CREATE INDEX run_views_run_turn ON run_views (run_id, turn);
CREATE INDEX run_views_run_rev ON run_views (run_id, rev);

CREATE TABLE notifications (
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq INTEGER NOT NULL CHECK (seq >= 1),
    method TEXT NOT NULL,
    params TEXT NOT NULL CHECK (json_valid(params)),
    created_at BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE rpc_log (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id INTEGER REFERENCES projects (id) ON DELETE SET NULL,
    method TEXT NOT NULL,
    rpc_id TEXT,
    params TEXT,
    result TEXT,
    error TEXT,
    created_at BIGINT NOT NULL
);
CREATE INDEX rpc_log_project ON rpc_log (project_id, id);
