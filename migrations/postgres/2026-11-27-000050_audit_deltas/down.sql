-- Writes every delta out whole before the columns go.
UPDATE entries SET body = (
    SELECT substr(k.body, 1, entries.prefix_chars) || entries.body
        || substr(k.body, length(k.body) - entries.suffix_chars + 1)
    FROM entries AS k WHERE k.id = entries.base_id
) WHERE base_id IS NOT NULL;
ALTER TABLE entries DROP COLUMN suffix_chars;
ALTER TABLE entries DROP COLUMN prefix_chars;
ALTER TABLE entries DROP COLUMN base_id;
