-- Project memory, history and recall.
--
-- 1. `memory://` and `history://` entries are the project's (scope `project:<id>`), but no run
--    holds a view of them: a run reads them only when its loop's first turn recalls them (as the
--    loop's own `recall://<loop>` entry). So a write of one must not move the project's context
--    clock, which makes every run of the project read its whole context again. The clock
--    triggers of migration 000004 are made again, leaving these two schemes out. (`IS NOT`, not
--    `<>`: a project file's scheme is NULL, and its writes must still move the clock.)
DROP TRIGGER entries_shared_inserted;
DROP TRIGGER entries_shared_updated;
DROP TRIGGER entries_shared_deleted;

CREATE TRIGGER entries_shared_inserted AFTER INSERT ON entries
WHEN NEW.scope NOT GLOB 'run:*' AND NEW.scheme IS NOT 'memory' AND NEW.scheme IS NOT 'history'
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (NEW.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER entries_shared_updated AFTER UPDATE ON entries
WHEN (OLD.scope NOT GLOB 'run:*' OR NEW.scope NOT GLOB 'run:*')
    AND NEW.scheme IS NOT 'memory' AND NEW.scheme IS NOT 'history'
BEGIN
    INSERT INTO context_clocks (name, version)
    SELECT OLD.scope, 1 WHERE OLD.scope NOT GLOB 'run:*'
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
    INSERT INTO context_clocks (name, version)
    SELECT NEW.scope, 1 WHERE NEW.scope NOT GLOB 'run:*' AND NEW.scope <> OLD.scope
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

CREATE TRIGGER entries_shared_deleted AFTER DELETE ON entries
WHEN OLD.scope NOT GLOB 'run:*' AND OLD.scheme IS NOT 'memory' AND OLD.scheme IS NOT 'history'
BEGIN
    INSERT INTO context_clocks (name, version) VALUES (OLD.scope, 1)
    ON CONFLICT (name) DO UPDATE SET version = version + 1;
END;

-- 2. What recall scores: the entries a loop's first turn may recall — the project's memory and
--    history, and the runs' facts (`known://`) and session states (`session://`) — in a full-text
--    index, scored with bm25 (`store::memory::recall_matches`). Contentless (the text stays in
--    `entries`; the index holds only its terms), with deletes (an entry's terms go with it).
--    Columns: `owner`, the tokens that say whose it is (`p<project>`, and `r<run>` for a run's
--    entry and for a history line, whose run its `run` attribute names: a query keeps to its
--    project and leaves its own run out — its facts, and its loops, which its context holds
--    already — through the index itself);
--    `path`, the path after its scheme and the entry's summary (none for history, whose path is
--    a date and numbers); `body`. The tokenizer keeps diacritics, so the words the server
--    matches sections with (`memory::terms`) are the index's own.
CREATE VIRTUAL TABLE recall_index USING fts5(
    owner, path, body,
    content = '', contentless_delete = 1,
    tokenize = 'unicode61 remove_diacritics 0'
);

-- How many entries hold each term: recall searches a prompt's rarest terms only, the ones that
-- tell its subject (a word most entries hold matches thousands, and scoring them all is most of
-- a query's time while adding little to it).
CREATE VIRTUAL TABLE recall_terms USING fts5vocab(recall_index, 'row');

-- The store indexes an entry when it writes one recall reads (`store::memory::index`): a memory
-- or a history line at once, a run's facts and session state in its loop's finishing write (and
-- a client's at once), so a turn's many writes pay nothing for the index. A superseded memory
-- (archived with `supersededBy`) is never a candidate, so it is not indexed. An entry's terms
-- leave the index with it, by trigger, however it is deleted (a run's retention purge among
-- them): a row the index kept would name an entry that is gone, or one that took its id.
CREATE TRIGGER entries_recall_deleted AFTER DELETE ON entries
WHEN OLD.scheme = 'memory' OR OLD.scheme = 'history' OR OLD.scheme = 'known' OR OLD.scheme = 'session'
BEGIN
    DELETE FROM recall_index WHERE rowid = OLD.id;
END;

-- The entries stored before this migration are indexed as the store indexes them.
INSERT INTO recall_index (rowid, owner, path, body)
SELECT e.id,
    CASE WHEN e.scope GLOB 'project:*' THEN 'p' || CAST(substr(e.scope, 9) AS INTEGER)
         ELSE 'p' || r.project_id || ' r' || r.id END,
    substr(e.path, instr(e.path, '://') + 3) || ' ' || coalesce(json_extract(e.attributes, '$.summary'), ''),
    e.body
FROM entries e LEFT JOIN runs r ON e.scope GLOB 'run:*' AND r.id = CAST(substr(e.scope, 5) AS INTEGER)
WHERE (e.scheme = 'known' OR e.scheme = 'session')
    AND (e.scope GLOB 'project:*' OR r.id IS NOT NULL);
