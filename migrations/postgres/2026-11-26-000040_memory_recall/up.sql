-- Project memory, history and recall.
--
-- 1. `memory://` and `history://` entries are the project's (scope `project:<id>`), but no run
--    holds a view of them: a run reads them only when its loop's first turn recalls them (as the
--    loop's own `recall://<loop>` entry). So a write of one must not move the project's context
--    clock, which makes every run of the project read its whole context again. The clock
--    triggers of migration 000004 are made again, leaving these two schemes out. (`IS DISTINCT
--    FROM`, SQLite's `IS NOT`, not `<>`: a project file's scheme is NULL, and its writes must
--    still move the clock.) Their functions are unchanged: only the WHEN clauses differ.
DROP TRIGGER entries_shared_inserted ON entries;
DROP TRIGGER entries_shared_updated ON entries;
DROP TRIGGER entries_shared_deleted ON entries;

CREATE TRIGGER entries_shared_inserted AFTER INSERT ON entries
FOR EACH ROW
WHEN (NEW.scope NOT LIKE 'run:%' AND NEW.scheme IS DISTINCT FROM 'memory'
    AND NEW.scheme IS DISTINCT FROM 'history')
EXECUTE FUNCTION entries_shared_inserted();

CREATE TRIGGER entries_shared_updated AFTER UPDATE ON entries
FOR EACH ROW
WHEN ((OLD.scope NOT LIKE 'run:%' OR NEW.scope NOT LIKE 'run:%')
    AND NEW.scheme IS DISTINCT FROM 'memory' AND NEW.scheme IS DISTINCT FROM 'history')
EXECUTE FUNCTION entries_shared_updated();

CREATE TRIGGER entries_shared_deleted AFTER DELETE ON entries
FOR EACH ROW
WHEN (OLD.scope NOT LIKE 'run:%' AND OLD.scheme IS DISTINCT FROM 'memory'
    AND OLD.scheme IS DISTINCT FROM 'history')
EXECUTE FUNCTION entries_shared_deleted();

-- 2. What recall scores: the entries a loop's first turn may recall — the project's memory and
--    history, and the runs' facts (`known://`) and session states (`session://`) — in a
--    full-text index. SQLite keeps them in a contentless FTS5 table scored with bm25; here the
--    same rows (keyed by the entry's id, SQLite's rowid) hold a `tsvector` under a GIN index,
--    scored with `ts_rank`. Contentless as well: the text stays in `entries`, the index holds
--    only its terms. Differences, and why:
--    * The owner is two columns, `project_id` and `run_id` (SQLite: the tokens `p<project>` and
--      `r<run>` of an `owner` column, matched inside the index): whose an entry is (its
--      project, and its run for a run's entry or for a history line, whose run its `run`
--      attribute names), so a query keeps to its project and leaves its own run out — its
--      facts, and its loops, which its context holds already — with plain comparisons.
--    * `document` is the indexed path (the path after its scheme and the entry's summary; none
--      for history, whose path is a date and numbers) at weight A and the body at weight D,
--      as `rummy_recall_document` makes it; `ts_rank` weighs A twice D, as bm25 weighs the
--      path twice the body.
--    * Words are read as FTS5's `unicode61` (and `memory::terms::words`) read them: runs of
--      letters and digits, lower-cased, diacritics kept, no stemming. The `simple`
--      configuration lower-cases and does not stem; `rummy_recall_words` first makes the
--      punctuation PostgreSQL's parser would keep inside a token (`api.example.com`,
--      `/etc/x.toml`, `a-b`, `v1.2`, `a@b.c` are one token each there) a space, as the
--      tokenizer does. Lower-casing non-ASCII letters follows the database's LC_CTYPE (a
--      UTF-8 locale lower-cases `É`; the `C` locale does not).
--    * Only the first 100,000 characters of a body are indexed: a tsvector holds at most 1 MB,
--      and a longer body must not make the write that indexes it fail.
CREATE TABLE recall_index (
    id INTEGER PRIMARY KEY NOT NULL,
    project_id INTEGER NOT NULL,
    run_id INTEGER,
    document TSVECTOR NOT NULL
);
CREATE INDEX recall_index_document ON recall_index USING gin (document);
CREATE INDEX recall_index_project ON recall_index (project_id);

-- `doc` with every character FTS5's unicode61 separates words at, and PostgreSQL's parser may
-- not, as a space: ASCII's non-alphanumerics (`_` among them), Latin-1's punctuation and
-- symbols, general punctuation (U+2000–U+206F: dashes, quotes, spaces), CJK and full-width
-- punctuation. Other symbols are separators to the parser already in a UTF-8 locale.
CREATE FUNCTION rummy_recall_words(doc text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT regexp_replace(
        left(doc, 100000),
        '[\x01-\x2f\x3a-\x40\x5b-\x60\x7b-\xa9\xab-\xb1\xb4\xb6-\xb8\xbb\xbf\xd7\xf7\u2000-\u206f\u3000-\u3004\u3008-\u3020\uff01-\uff0f\uff1a-\uff20\uff3b-\uff40\uff5b-\uff65]+',
        ' ', 'g')
$$;

-- The indexed document of an entry: its indexed path at weight A, its body at weight D.
CREATE FUNCTION rummy_recall_document(path text, body text) RETURNS tsvector
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT setweight(to_tsvector('simple'::regconfig, rummy_recall_words(path)), 'A')
        || setweight(to_tsvector('simple'::regconfig, rummy_recall_words(body)), 'D')
$$;

-- How many entries hold each term (FTS5's `fts5vocab` 'row' table: term, doc, cnt), for
-- looking at the index. It reads the whole index, so the store does not look terms up here:
-- it counts the entries a term matches through the GIN index (statement TermDocs below).
CREATE VIEW recall_terms AS
    SELECT word AS term, ndoc::bigint AS doc, nentry::bigint AS cnt
    FROM ts_stat('SELECT document FROM recall_index');

-- The store indexes an entry when it writes one recall reads (`store::memory::index`): a memory
-- or a history line at once, a run's facts and session state in its loop's finishing write (and
-- a client's at once), so a turn's many writes pay nothing for the index. A superseded memory
-- (archived with `supersededBy`) is never a candidate, so it is not indexed. An entry's terms
-- leave the index with it, by trigger, however it is deleted (a run's retention purge among
-- them): a row the index kept would name an entry that is gone.
CREATE FUNCTION entries_recall_deleted() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM recall_index WHERE id = OLD.id;
    RETURN NULL;
END
$$;

CREATE TRIGGER entries_recall_deleted AFTER DELETE ON entries
FOR EACH ROW
WHEN (OLD.scheme = 'memory' OR OLD.scheme = 'history' OR OLD.scheme = 'known'
    OR OLD.scheme = 'session')
EXECUTE FUNCTION entries_recall_deleted();

-- The entries stored before this migration are indexed as the store indexes them. (A scope's
-- number is read as SQLite's CAST reads it: its leading digits.)
INSERT INTO recall_index (id, project_id, run_id, document)
SELECT e.id,
    CASE WHEN e.scope LIKE 'project:%' THEN substring(e.scope FROM '^project:([0-9]+)')::integer
         ELSE r.project_id END,
    r.id,
    rummy_recall_document(
        substr(e.path, strpos(e.path, '://') + 3) || ' '
            || coalesce(e.attributes::json ->> 'summary', ''),
        e.body)
FROM entries e LEFT JOIN runs r
    ON e.scope LIKE 'run:%' AND r.id = substring(e.scope FROM '^run:([0-9]+)')::integer
WHERE (e.scheme = 'known' OR e.scheme = 'session')
    AND (e.scope LIKE 'project:%' OR r.id IS NOT NULL);

-- The store's statements on the index (`store::memory`) become, on PostgreSQL ($n: binds in
-- the order of the SQLite statement's `?`, except where said):
-- * Unindex: `DELETE FROM recall_index WHERE id = $1` (no docsize detour: no tombstones here).
-- * Index / IndexLoop: the same SELECT over `entries e` (`WHERE e.id = $1`; IndexLoop's
--   `e.id IN (<loop facts> UNION ALL SELECT $4)`), with `project_id`/`run_id` for `owner`
--   (`substring(e.scope FROM '^project:([0-9]+)')::integer` for `CAST(substr(…))`, the
--   history line's run by alias as before), `e.attributes::json ->> 'summary'` for
--   `json_extract`, `strpos` for `instr`, `rummy_recall_document(indexed_path, body)` for
--   `(path, body)`, and `ON CONFLICT (id) DO UPDATE` (FTS5 takes a second row for a rowid;
--   a primary key would fail the write):
--     INSERT INTO recall_index (id, project_id, run_id, document) SELECT … FROM (…)
--     WHERE project_id IS NOT NULL AND superseded IS NULL ON CONFLICT (id) DO UPDATE …
-- * UnindexLoop: `DELETE FROM recall_index WHERE id IN (<loop facts>)`, binds as SQLite's.
-- * MatchRecall ($1 tsquery text: the terms quoted, `:*` after a prefix term, joined by
--   ` | `; $2 project; $3 the asking run, left out; $4 limit), `bm25` negated rank so lower
--   stays better:
--     SELECT id, -ts_rank('{0.5, 0, 0, 1}', document, query, 1)::float8 AS bm25
--     FROM recall_index, to_tsquery('simple', $1) AS query
--     WHERE project_id = $2 AND run_id IS DISTINCT FROM $3 AND document @@ query
--     ORDER BY bm25, id LIMIT $4
-- * TermIs / TermsFrom: one statement, $1 one quoted term (`'db'`, or `'listen':*` for a
--   prefix, which needs no upper bound):
--     SELECT count(*) AS doc FROM recall_index WHERE document @@ to_tsquery('simple', $1)
