CREATE INDEX run_views_run_turn ON run_views (run_id, turn);
