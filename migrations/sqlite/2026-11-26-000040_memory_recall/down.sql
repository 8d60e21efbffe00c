DROP TRIGGER entries_recall_deleted;
DROP TABLE recall_terms;
DROP TABLE recall_index;

DROP TRIGGER entries_shared_inserted;
DROP TRIGGER entries_shared_updated;
DROP TRIGGER entries_shared_deleted;

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
