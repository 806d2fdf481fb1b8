-- See migrations/postgres/0009_endpoints.sql.
CREATE TABLE endpoints (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    app_name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    public INTEGER NOT NULL CHECK (public IN (0, 1)),
    version INTEGER NOT NULL CHECK (version >= 1),
    PRIMARY KEY (workspace_id, name),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
) STRICT;

CREATE INDEX endpoints_app ON endpoints (workspace_id, app_name);
