-- Workspaces are the tenancy boundary; names are unique across the install.
-- Times are RFC 3339 text in UTC (sqlx's chrono encoding), which sorts chronologically.
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TEXT NOT NULL
) STRICT;

-- Only the SHA-256 of a token's secret is kept, so a leaked file grants nothing.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    token_type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    hash BLOB NOT NULL UNIQUE,
    created_at TEXT NOT NULL,
    last_used_at TEXT,
    revoked_at TEXT
) STRICT;

-- Serves both the per-workspace filter and the oldest-first listing.
CREATE INDEX tokens_workspace_id_created_at ON tokens (workspace_id, created_at);

-- At most one row: the first bootstrap claims it, mirroring the Postgres schema.
CREATE TABLE bootstrap_claim (
    singleton INTEGER PRIMARY KEY CHECK (singleton = 1),
    claimed_at TEXT NOT NULL
) STRICT;
