ALTER TABLE projects DROP COLUMN web_domains;
