-- Several server processes on one database (PostgreSQL; SQLite has one process, which its
-- file lock ensures, and keeps these tables empty but alike: one schema for both).
--
-- A process row lives while its process renews it; every lease it holds is valid until
-- `expires_at`. A run is leased by the process that runs its loops; another process takes it
-- over, through the same recovery as a restart, once the holder's row has expired.
CREATE TABLE processes (
    id TEXT PRIMARY KEY NOT NULL,
    started_at BIGINT NOT NULL,
    expires_at BIGINT NOT NULL
);

CREATE TABLE run_leases (
    run_id INTEGER PRIMARY KEY NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    owner TEXT NOT NULL,
    taken_at BIGINT NOT NULL
);
CREATE INDEX run_leases_owner ON run_leases (owner);

-- A call for a run another process holds (resolve, inject, continue, cancel, rename): the
-- holder answers it in `result` (JSON: {"ok": …} or {"error": {…}}).
CREATE TABLE run_calls (
    id INTEGER PRIMARY KEY NOT NULL,
    run_id INTEGER NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    origin TEXT NOT NULL,
    method TEXT NOT NULL,
    params TEXT NOT NULL CHECK (json_valid(params)),
    result TEXT CHECK (result IS NULL OR json_valid(result)),
    created_at BIGINT NOT NULL,
    done_at BIGINT
);

-- A push too large for a notification's payload, relayed to the other processes by its id.
CREATE TABLE relayed_pushes (
    id INTEGER PRIMARY KEY NOT NULL,
    origin TEXT NOT NULL,
    project_id INTEGER NOT NULL,
    run TEXT NOT NULL,
    text TEXT NOT NULL,
    created_at BIGINT NOT NULL
);

-- Which process recorded a notification: the others relay it to their clients.
ALTER TABLE notifications ADD COLUMN origin TEXT;
