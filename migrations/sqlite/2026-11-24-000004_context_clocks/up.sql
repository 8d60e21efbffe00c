-- A run keeps its context rows between the turns of a loop and rereads only what changed
-- (a turn's context read). Its own views say when they changed:
-- every view write takes the run's next revision (run_views.rev). These clocks say what a
-- view's revision cannot: that an entry other runs share changed (a project's files, global
-- skills: named by the entry's scope), or that one of the run's views was deleted (named
-- 'views:run:<id>'). Triggers keep them, so no write path can forget to; writes of a run's
-- own entries, which are most writes, do not touch them.
CREATE TABLE context_clocks (
    name TEXT PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL CHECK (version >= 1)
) WITHOUT ROWID;

CREATE TRIGGER entries_shared_inserted AFTER INSERT ON entries
WHEN NEW.scope NOT GLOB 'run:*'
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (NEW.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER entries_shared_updated AFTER UPDATE ON entries
WHEN OLD.scope NOT GLOB 'run:*' OR NEW.scope NOT GLOB 'run:*'
BEGIN
    INSERT INTO context_clocks (name, version)
    SELECT OLD.scope, 1 WHERE OLD.scope NOT GLOB 'run:*'
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
    INSERT INTO context_clocks (name, version)
    SELECT NEW.scope, 1 WHERE NEW.scope NOT GLOB 'run:*' AND NEW.scope <> OLD.scope
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER entries_shared_deleted AFTER DELETE ON entries
WHEN OLD.scope NOT GLOB 'run:*'
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (OLD.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER run_views_deleted AFTER DELETE ON run_views
BEGIN
    INSERT INTO context_clocks (name, version) VALUES ('views:run:' || OLD.run_id, 1)
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

-- A deleted run or project takes its clocks with it.
CREATE TRIGGER runs_clock_deleted AFTER DELETE ON runs
BEGIN
    DELETE FROM context_clocks WHERE name = 'views:run:' || OLD.id;
END;

CREATE TRIGGER projects_clock_deleted AFTER DELETE ON projects
BEGIN
    DELETE FROM context_clocks WHERE name = 'project:' || OLD.id;
END;
