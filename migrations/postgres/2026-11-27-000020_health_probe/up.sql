-- The health probe: `/health` and `server/doctor` prove the database
-- writable by rewriting this one row through the store's writer — a real write and commit, a
-- few bytes of the write-ahead log, and nothing a run reads.
--
-- PostgreSQL: a plain key, not an identity: the store always writes the row as id 1.
CREATE TABLE health_probe (
    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
    checked_at BIGINT NOT NULL
);
