-- Every view write paid for this index, and only Turn Demotion (rare) filters views by turn;
-- it finds a run's views through the (run_id, entry_id) key instead.
DROP INDEX run_views_run_turn;
