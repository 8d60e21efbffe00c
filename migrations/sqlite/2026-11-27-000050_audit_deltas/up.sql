-- The audit trail stored as deltas. Every turn keeps exactly what the model
-- was sent (`system://N`, `user://N`), and every turn sends the whole context again: stored
-- whole, a run's audit trail grew with turns × context (99.8 % of a long run's stored bytes).
-- A long audit text is now stored as the difference from a *keyframe* — an earlier audit entry
-- of the run and scheme stored whole: `body` holds the middle that differs, `base_id` the
-- keyframe, and the text is the keyframe's first `prefix_chars` characters, the middle, and
-- its last `suffix_chars` characters (`store::audit`, which every read of a body goes
-- through). A keyframe is never rewritten after a later turn refers to it, and it is deleted
-- only with its run.
ALTER TABLE entries ADD COLUMN base_id INTEGER;
ALTER TABLE entries ADD COLUMN prefix_chars INTEGER NOT NULL DEFAULT 0;
ALTER TABLE entries ADD COLUMN suffix_chars INTEGER NOT NULL DEFAULT 0;
