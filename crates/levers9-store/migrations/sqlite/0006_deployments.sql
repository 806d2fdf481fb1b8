-- See migrations/postgres/0006_deployments.sql.
CREATE TABLE deployments (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    app_name TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    deployed_by TEXT NOT NULL,
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, app_name, version)
) STRICT;

CREATE TABLE deployment_functions (
    workspace_id TEXT NOT NULL,
    app_name TEXT NOT NULL,
    version INTEGER NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    PRIMARY KEY (workspace_id, app_name, version, function_name),
    FOREIGN KEY (workspace_id, app_name, version)
        REFERENCES deployments (workspace_id, app_name, version),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
) STRICT;
