-- Fair use: who started a run, when a queued loop began waiting, a project's cost ceiling.
--
-- Who started a run (the user a token named; NULL for the owner, who has no token), so a run's
-- place among its user's runs in flight is known again after a restart. (`user` is reserved in
-- PostgreSQL, hence the quotes.)
ALTER TABLE runs ADD COLUMN "user" TEXT COLLATE "C";

-- When a queued loop began waiting for a place (a runs limit or a cost ceiling), so waiters keep
-- their order across a restart. Set once, while the loop is queued; a loop waits at most once.
ALTER TABLE loops ADD COLUMN waiting_since BIGINT;

-- A project's cost ceiling (USD, summed from its turns' cost) over a calendar month or a day,
-- UTC; NULL: no ceiling.
ALTER TABLE projects ADD COLUMN cost_ceiling DOUBLE PRECISION CHECK (cost_ceiling IS NULL OR cost_ceiling >= 0);
ALTER TABLE projects ADD COLUMN cost_period TEXT COLLATE "C" NOT NULL DEFAULT 'month' CHECK (cost_period = 'month' OR cost_period = 'day');
