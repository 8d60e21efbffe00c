-- Whether a project's accepted commands reach the network, set by an admin (`project/set
-- {commandNetwork}`); NULL: the server's `RUMMY_COMMAND_NETWORK` applies.
ALTER TABLE projects ADD COLUMN command_network BOOLEAN;
