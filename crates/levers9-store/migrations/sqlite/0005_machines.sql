-- Pools made at run time and machines joined with the agent, mirroring the
-- Postgres schema.
CREATE TABLE pools (
    name TEXT PRIMARY KEY,
    runtime TEXT NOT NULL,
    gpu_type TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
) STRICT;

CREATE TABLE machines (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    pool TEXT NOT NULL,
    state TEXT NOT NULL,
    join_hash BLOB NOT NULL UNIQUE,
    join_expires_at TEXT NOT NULL,
    join_used_at TEXT,
    token_id TEXT REFERENCES tokens (id),
    hostname TEXT NOT NULL DEFAULT '',
    capacity TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL
) STRICT;

CREATE INDEX machines_pool ON machines (pool);
CREATE UNIQUE INDEX machines_token_id ON machines (token_id);
