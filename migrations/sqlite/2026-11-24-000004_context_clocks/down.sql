DROP TRIGGER projects_clock_deleted;
DROP TRIGGER runs_clock_deleted;
DROP TRIGGER run_views_deleted;
DROP TRIGGER entries_shared_deleted;
DROP TRIGGER entries_shared_updated;
DROP TRIGGER entries_shared_inserted;
DROP TABLE context_clocks;
