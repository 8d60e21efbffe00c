-- Users and their tokens. A token is stored only as the SHA-256 of its text;
-- `prefix` (its first characters) lets a person tell tokens apart in a listing.
CREATE TABLE users (
    id INTEGER PRIMARY KEY NOT NULL,
    name TEXT NOT NULL UNIQUE CHECK (length(name) > 0),
    created_at BIGINT NOT NULL
);

CREATE TABLE tokens (
    id INTEGER PRIMARY KEY NOT NULL,
    user_id INTEGER NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    hash TEXT NOT NULL UNIQUE,
    prefix TEXT NOT NULL,
    admin BOOLEAN NOT NULL DEFAULT 0,
    -- A JSON array of project names the token opens; ignored for admin tokens.
    projects TEXT NOT NULL DEFAULT '[]' CHECK (json_valid(projects) AND json_type(projects) = 'array'),
    created_at BIGINT NOT NULL,
    expires_at BIGINT,
    revoked_at BIGINT
);
CREATE INDEX tokens_user ON tokens (user_id);

-- Who made each logged call: the user's name, as the token said it when the call
-- was made (kept when the user is deleted).
ALTER TABLE rpc_log ADD COLUMN user TEXT;
