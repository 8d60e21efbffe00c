-- The domains a project's model fetches from without asking, set by an admin (`project/set
-- {webDomains}`), as a JSON array of host names; NULL: the model's web fetch is off there.
ALTER TABLE projects ADD COLUMN web_domains TEXT;
