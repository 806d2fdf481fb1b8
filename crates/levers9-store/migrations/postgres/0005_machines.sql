-- Pools made at run time (levers9 pool create). Pools of the config
-- (worker.pools) are not stored: the config stays authoritative for them.
CREATE TABLE pools (
    name TEXT PRIMARY KEY,
    runtime TEXT NOT NULL,
    gpu_type TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

-- Machines brought to a pool with the agent. Only the SHA-256 of the join
-- token is kept; it works once (join_used_at) and until join_expires_at.
-- token_id is the worker credential the agent got when it joined.
CREATE TABLE machines (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    pool TEXT NOT NULL,
    state TEXT NOT NULL,
    join_hash BYTEA NOT NULL UNIQUE,
    join_expires_at TIMESTAMPTZ NOT NULL,
    join_used_at TIMESTAMPTZ,
    token_id TEXT REFERENCES tokens (id),
    hostname TEXT NOT NULL DEFAULT '',
    capacity TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL
);

CREATE INDEX machines_pool ON machines (pool);
CREATE UNIQUE INDEX machines_token_id ON machines (token_id);
