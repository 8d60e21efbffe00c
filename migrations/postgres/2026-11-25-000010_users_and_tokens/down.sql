ALTER TABLE rpc_log DROP COLUMN "user";
DROP INDEX tokens_user;
DROP TABLE tokens;
DROP TABLE users;
