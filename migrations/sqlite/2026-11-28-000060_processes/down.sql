ALTER TABLE notifications DROP COLUMN origin;
DROP TABLE relayed_pushes;
DROP TABLE run_calls;
DROP TABLE run_leases;
DROP TABLE processes;
