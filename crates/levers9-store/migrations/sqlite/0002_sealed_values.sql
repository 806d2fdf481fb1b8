-- Every value sealed at rest, mirroring the Postgres schema.
CREATE TABLE sealed_values (
    kind TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    key_id TEXT NOT NULL,
    sealed BLOB NOT NULL,
    created_at TEXT NOT NULL,
    updated_at TEXT NOT NULL,
    PRIMARY KEY (kind, workspace_id, name)
) STRICT;

CREATE INDEX sealed_values_key_id ON sealed_values (key_id);
