-- Workspaces are the tenancy boundary; names are unique across the install.
CREATE TABLE workspaces (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL
);

-- Only the SHA-256 of a token's secret is kept, so a leaked table grants nothing.
CREATE TABLE tokens (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    token_type TEXT NOT NULL,
    description TEXT NOT NULL DEFAULT '',
    hash BYTEA NOT NULL UNIQUE,
    created_at TIMESTAMPTZ NOT NULL,
    last_used_at TIMESTAMPTZ,
    revoked_at TIMESTAMPTZ
);

-- Serves both the per-workspace filter and the oldest-first listing.
CREATE INDEX tokens_workspace_id_created_at ON tokens (workspace_id, created_at);

-- At most one row: the first bootstrap claims it, so concurrent bootstraps
-- serialize on its primary key instead of racing on the workspace name.
CREATE TABLE bootstrap_claim (
    singleton SMALLINT PRIMARY KEY CHECK (singleton = 1),
    claimed_at TIMESTAMPTZ NOT NULL
);
