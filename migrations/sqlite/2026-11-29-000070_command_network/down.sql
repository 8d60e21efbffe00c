ALTER TABLE projects DROP COLUMN command_network;
