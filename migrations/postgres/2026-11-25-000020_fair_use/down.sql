ALTER TABLE projects DROP COLUMN cost_period;
ALTER TABLE projects DROP COLUMN cost_ceiling;
ALTER TABLE loops DROP COLUMN waiting_since;
ALTER TABLE runs DROP COLUMN "user";
