-- A run keeps its context rows between the turns of a loop and rereads only what changed
-- (a turn's context read). Its own views say when they changed:
-- every view write takes the run's next revision (run_views.rev). These clocks say what a
-- view's revision cannot: that an entry other runs share changed (a project's files, global
-- skills: named by the entry's scope), or that one of the run's views was deleted (named
-- 'views:run:<id>'). Triggers keep them, so no write path can forget to; writes of a run's
-- own entries, which are most writes, do not touch them.
--
-- PostgreSQL: each SQLite trigger is a row trigger of the same name with the same WHEN,
-- running a plpgsql function of that name; `NOT GLOB 'run:*'` is `NOT LIKE 'run:%'` ('run:'
-- holds no LIKE wildcard). Several processes may write at once here (SQLite has one writer):
-- `INSERT … ON CONFLICT DO UPDATE` is atomic under concurrent writers, so no tick is lost.
CREATE TABLE context_clocks (
    name TEXT COLLATE "C" PRIMARY KEY NOT NULL,
    version BIGINT NOT NULL CHECK (version >= 1)
);

CREATE FUNCTION entries_shared_inserted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (NEW.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = context_clocks.version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER entries_shared_inserted AFTER INSERT ON entries
FOR EACH ROW
WHEN (NEW.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_inserted();

CREATE FUNCTION entries_shared_updated() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.scope NOT LIKE 'run:%' THEN
        INSERT INTO context_clocks (name, version) VALUES (OLD.scope, 1)
        ON CONFLICT (name) DO UPDATE SET version = context_clocks.version + 1;
    END IF;
    IF NEW.scope NOT LIKE 'run:%' AND NEW.scope <> OLD.scope THEN
        INSERT INTO context_clocks (name, version) VALUES (NEW.scope, 1)
        ON CONFLICT (name) DO UPDATE SET version = context_clocks.version + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER entries_shared_updated AFTER UPDATE ON entries
FOR EACH ROW
WHEN (OLD.scope NOT LIKE 'run:%' OR NEW.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_updated();

CREATE FUNCTION entries_shared_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (OLD.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = context_clocks.version + 1;
    RETURN NULL;
END
$$;

CREATE TRIGGER entries_shared_deleted AFTER DELETE ON entries
FOR EACH ROW
WHEN (OLD.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_deleted();

-- A view its run's delete cascades to is seen here after the run's own `runs_clock_deleted`
-- (PostgreSQL queues a cascade's triggers behind the statement's; SQLite runs the cascade
-- first): a view of a run that is gone moves no clock, or its clock would outlive the run.
CREATE FUNCTION run_views_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM runs WHERE id = OLD.run_id) THEN
        INSERT INTO context_clocks (name, version) VALUES ('views:run:' || OLD.run_id, 1)
        ON CONFLICT (name) DO UPDATE SET version = context_clocks.version + 1;
    END IF;
    RETURN NULL;
END
$$;

CREATE TRIGGER run_views_deleted AFTER DELETE ON run_views
FOR EACH ROW
EXECUTE FUNCTION run_views_deleted();

-- A deleted run or project takes its clocks with it.
CREATE FUNCTION runs_clock_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM context_clocks WHERE name = 'views:run:' || OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER runs_clock_deleted AFTER DELETE ON runs
FOR EACH ROW
EXECUTE FUNCTION runs_clock_deleted();

CREATE FUNCTION projects_clock_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM context_clocks WHERE name = 'project:' || OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER projects_clock_deleted AFTER DELETE ON projects
FOR EACH ROW
EXECUTE FUNCTION projects_clock_deleted();
