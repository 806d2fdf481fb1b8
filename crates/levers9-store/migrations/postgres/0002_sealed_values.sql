-- Every value sealed at rest (workspace secrets, workspace storage credentials)
-- lives in one table, so key rotation walks one table. key_id names the key
-- that sealed the value (never the key itself); sealed is nonce || ciphertext.
CREATE TABLE sealed_values (
    kind TEXT NOT NULL,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    key_id TEXT NOT NULL,
    sealed BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    updated_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (kind, workspace_id, name)
);

-- Rotation asks for the rows not on the current key.
CREATE INDEX sealed_values_key_id ON sealed_values (key_id);
