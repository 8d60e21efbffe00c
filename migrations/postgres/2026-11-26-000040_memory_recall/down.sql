DROP TRIGGER entries_recall_deleted ON entries;
DROP FUNCTION entries_recall_deleted();
DROP VIEW recall_terms;
DROP TABLE recall_index;
DROP FUNCTION rummy_recall_document(text, text);
DROP FUNCTION rummy_recall_words(text);

DROP TRIGGER entries_shared_inserted ON entries;
DROP TRIGGER entries_shared_updated ON entries;
DROP TRIGGER entries_shared_deleted ON entries;

CREATE TRIGGER entries_shared_inserted AFTER INSERT ON entries
FOR EACH ROW
WHEN (NEW.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_inserted();

CREATE TRIGGER entries_shared_updated AFTER UPDATE ON entries
FOR EACH ROW
WHEN (OLD.scope NOT LIKE 'run:%' OR NEW.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_updated();

CREATE TRIGGER entries_shared_deleted AFTER DELETE ON entries
FOR EACH ROW
WHEN (OLD.scope NOT LIKE 'run:%')
EXECUTE FUNCTION entries_shared_deleted();
