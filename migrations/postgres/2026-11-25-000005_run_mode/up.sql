-- A run keeps the mode it was started or last configured with: a continuation
-- without `mode` runs in it, instead of falling back to `ask`. Existing runs take the mode of
-- their latest loop.
ALTER TABLE runs ADD COLUMN mode TEXT COLLATE "C" NOT NULL DEFAULT 'ask' CHECK (mode IN ('ask', 'act'));

UPDATE runs SET mode = (
    SELECT loops.mode FROM loops WHERE loops.run_id = runs.id ORDER BY loops.sequence DESC LIMIT 1
)
WHERE EXISTS (SELECT 1 FROM loops WHERE loops.run_id = runs.id);
